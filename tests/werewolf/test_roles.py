"""A role is one module (toolkit/werewolf/engine/roles/): the engine, the observation, the decisions and the
heuristic player ask the role, never branch on its name. Shown two ways: a role defined here, in the test,
plays full recorded games with no file of the package edited (only its prompt files, written to a copy of
prompts/); and the Hunter's name and decision appear in no module of the package but its own and the
names registry."""

from __future__ import annotations

import ast
import asyncio
import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from toolkit.core.werewolf_names import ROLES, TARGETED_ACTIONS
from toolkit.prompting.structured_call import render
from toolkit.record.load import load
from toolkit.record.run_log import Run
from toolkit.werewolf.engine import roles as registry
from toolkit.werewolf.engine.preset import Preset
from toolkit.werewolf.engine.roles import Ask, EventKind, Role
from toolkit.werewolf.game import GameConfig, play_game

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Night:
    blessed: str | None = None
    done: bool = False


class Knight(Role):
    """A role the package does not ship: each night the Knight blesses another living player, who survives the
    wolves' attack; the blessing is the Knight's private events row; its rule-based play blesses the seat with
    the lowest number it may."""

    name = "Knight"
    special = True
    night_order = 45
    actions = ("bless",)
    events = (EventKind("bless", decision="bless"),)  # a private row; Kaggle has no entry for it

    @staticmethod
    def heuristic(action, obs, choices, rng):
        return min(choices, key=lambda s: int(s.removeprefix("Player")))

    def new_night(self):
        return Night()

    def night_asks(self, game):
        knight = game.living(self.name)
        if not knight or game.tonight(self.name).done:
            return []
        return [Ask(knight[0], "bless", tuple(s for s in game.alive if s != knight[0]))]

    def act(self, game, seat, action, target, fallback):
        game.tonight(self.name).blessed, game.tonight(self.name).done = target, True
        game.emit("bless", seat, target, f"You bless {target}.", seat, fallback)

    def shields(self, game):
        blessed = game.tonight(self.name).blessed
        return [(blessed, "protect")] if blessed else []

    def observe(self, game, seat, ask):
        return {"blessings": sum(e.kind == "bless" for e in game.events if e.visibility == seat)}


KNIGHT_PROMPT = """{% import "werewolf/roles/_village.j2" as village %}
{% set text_order = 35 %}{% set special = true %}
{% macro night() %}the Knight blesses one other player, who survives the attack{% endmacro %}
{% macro play() %}
{{ village.vote() }}{{ village.night() }}- Bless the player the werewolves most want dead.
{% endmacro %}
"""
BLESS_PROMPT = """{% extends "werewolf/_base.j2" %}
{% block task %}
Night {{ obs.day }}: bless one other player ({{ obs.blessings }} blessings so far); they survive an attack.
{% endblock %}
"""


@pytest.fixture
def knight(tmp_path, monkeypatch):
    prompts = tmp_path / "prompts"
    shutil.copytree(ROOT / "prompts", prompts)
    (prompts / "werewolf" / "roles" / "knight.j2").write_text(KNIGHT_PROMPT)
    (prompts / "werewolf" / "bless.j2").write_text(BLESS_PROMPT)
    monkeypatch.setenv("TOOLKIT_PROMPTS", str(prompts))
    registry.register(Knight())
    yield Preset(name="knight7", roles={"Werewolf": 2, "Villager": 3, "Seer": 1, "Knight": 1})
    del registry.REGISTRY["Knight"]


def test_a_role_defined_outside_the_package_plays_recorded_games(knight, tmp_path):
    """Heuristic and random seats, the runner, the recorder: the Knight is asked each night, its blessing is
    recorded, a blessed victim survives, and its clause is in the rules every seat is shown."""
    with Run(tmp_path / "results", experiment="knight") as run:
        for seed in range(4):
            for model in ("heuristic", "random"):
                asyncio.run(play_game(GameConfig(preset=knight, seed=seed, model=model), run))
    t = load(tmp_path / "results")
    assert len(t.games) == 8 and set(t.games["winner"]) <= {"village", "werewolves", "draw"}
    assert "Knight" in set(t.players["role"])
    blessings = t.events[t.events["kind"] == "bless"]
    knights = t.players[t.players["role"] == "Knight"].set_index("game_id")["seat"]
    assert len(blessings) >= 8 and (blessings["actor"] == blessings["game_id"].map(knights)).all()
    assert (blessings["visibility"] == blessings["actor"]).all()  # private to the Knight
    bless_calls = t.calls[t.calls["action"] == "bless"]
    assert len(bless_calls) == len(blessings)
    assert bless_calls["messages"].str.contains("the Knight blesses one other player, who survives the attack").all()
    assert bless_calls["messages"].str.contains("blessings so far").all()
    # a blessed victim of the night survives it
    for (game, day), night in t.events.groupby(["game_id", "day"]):
        kills = night[night["kind"] == "kill"]["target"].tolist()
        blessed = night[night["kind"] == "bless"]["target"].tolist()
        if kills and blessed and kills[0] == blessed[0]:
            assert not ((t.players["game_id"] == game) & (t.players["seat"] == kills[0])
                        & (t.players["death_day"] == day) & (t.players["death_cause"] == "werewolves")).any()


def test_the_knights_rules_and_win_need_no_engine_edit(knight):
    text = render("werewolf/rules.j2", preset={**knight.model_dump(), "n_players": knight.n_players})
    assert "the Seer learns whether one player is a werewolf, the Knight blesses one other player" in text
    from toolkit.werewolf.engine.rules import Game

    g = Game(knight.model_copy(update={"win_rule": "side_kill"}), 0)
    assert "Knight" in g.roles.values() and registry.special_roles()[-1] == "Knight"


def test_a_plug_in_roles_own_heuristic_plays_a_shipped_decision_it_takes():
    """A role defined here that takes the Guard's decision (``protect``) with its own ``heuristic``: the rule-based
    player asks that heuristic, not its own play of ``protect`` (which a Guard seat still gets)."""
    from toolkit.werewolf.players.heuristic import PLAYS, decide, role_play

    asked = []

    class Bodyguard(Role):
        name, night_order, actions = "Bodyguard", 25, ("protect",)

        @staticmethod
        def heuristic(action, obs, choices, rng):
            asked.append(action)
            return choices[-1]

    registry.register(Bodyguard())
    try:
        obs = {"game": "werewolf", "action": "protect", "role": "Bodyguard", "seat": "Player1", "day": 1,
               "choices": ["Player2", "Player3"], "claims": []}
        assert decide(obs, random.Random(0)) == {"target": "Player3"} and asked == ["protect"]
        assert role_play("Guard", "protect") is PLAYS["protect"]
    finally:
        del registry.REGISTRY["Bodyguard"]


def _literals(path: Path) -> set[str]:
    return {n.value for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)}


@pytest.mark.slow
def test_the_hunter_is_named_only_in_its_module_the_registry_and_the_decisions_table():
    """No module of the package branches on the Hunter or its decision: the string "Hunter" is a constant in its
    role module and the names registry only, and so is "shoot" (the decisions' table lists only the engine's own)."""
    package = sorted((ROOT / "toolkit").rglob("*.py"))
    named = {str(p.relative_to(ROOT)) for p in package if "Hunter" in _literals(p)}
    shoots = {str(p.relative_to(ROOT)) for p in package if "shoot" in _literals(p)}
    assert named == {"toolkit/core/werewolf_names.py", "toolkit/werewolf/engine/roles/hunter.py"}
    assert shoots == {"toolkit/core/werewolf_names.py", "toolkit/werewolf/engine/roles/hunter.py"}
    prompts = {str(p.relative_to(ROOT)) for p in (ROOT / "prompts").rglob("*.j2") if "Hunter" in p.read_text()}
    assert prompts == {"prompts/werewolf/roles/hunter.j2", "prompts/werewolf/shoot.j2"}


def test_every_shipped_role_has_its_module_prompt_file_and_decision_templates():
    assert tuple(registry.REGISTRY)[:len(ROLES)] == ROLES  # the shuffle deals in this order: new roles last
    for name in ROLES:
        role = registry.get(name)
        assert type(role).__module__ == f"toolkit.werewolf.engine.roles.{name.lower()}"
        source = (ROOT / "prompts" / role.prompt).read_text()
        special = re.search(r"{% set special = (true|false) %}", source).group(1)
        assert (special == "true") is role.special, name
        assert re.search(r"{% macro play\(\) %}", source) and re.search(r"{% set text_order = \d+ %}", source)
        for action in role.actions:
            assert action in TARGETED_ACTIONS and (ROOT / "prompts" / "werewolf" / f"{action}.j2").exists()
    assert registry.special_roles() == ("Guard", "Witch", "Seer", "Doctor", "Hunter")
    with pytest.raises(KeyError, match="unknown role 'Jester'"):
        registry.get("Jester")


def test_the_engine_and_the_observation_name_no_role_but_the_werewolf():
    """rules.py (the engine), the observation and the completeness reader ask the roles; the one role they name
    is the Werewolf (every game has its victim)."""
    for path in ("toolkit/werewolf/engine/rules.py", "toolkit/werewolf/seat/observation.py",
                 "tests/werewolf/completeness.py"):
        assert _literals(ROOT / path) & set(registry.REGISTRY) <= {"Werewolf"}, path
