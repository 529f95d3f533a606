"""Rules and offline players: protect_and_save, the scripted format's ``text:``, and ``random`` passing at the
rate a uniform choice over the legal answers implies."""

import asyncio
import json
import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from toolkit.prompting.structured_call import json_schema
from toolkit.llm import Request, Sampling, get_model
from toolkit.record.run_log import Run
from toolkit.record.load import load
from toolkit.werewolf.seat.decisions import output_model
from toolkit.werewolf.game import GameConfig, GameRunner, play_games
from toolkit.werewolf.engine.preset import Preset, load_preset
from toolkit.werewolf.engine.rules import Game

SCENARIOS = Path(__file__).parent / "scenarios"


def play_script(name, tmp_path, preset, **kwargs):
    config = GameConfig(preset=preset, seed=5, model=f"scripted:{SCENARIOS / name}", **kwargs)
    with Run(tmp_path) as run:
        result = asyncio.run(GameRunner(config, run).play())
    return result, load(tmp_path)


@pytest.mark.parametrize("rule,dies", [("survive", False), ("die", True)])
def test_protected_and_saved_on_one_night_follows_the_preset(tmp_path, rule, dies):
    preset = load_preset("classic7").model_copy(update={"protect_and_save": rule})
    result, _ = play_script("protect_and_save.yaml", tmp_path, preset, max_days=1)
    assert any(e.kind == "save" and e.target == "Player3" for e in result.events)
    assert any(e.kind == "protect" and e.target == "Player3" for e in result.events)
    died = any(e.kind == "death" and e.target == "Player3" and e.day == 1 for e in result.events)
    assert died == dies


def test_protect_and_save_is_a_checked_preset_field():
    assert load_preset("classic7").protect_and_save == "survive"
    with pytest.raises(ValidationError, match="protect_and_save"):
        Preset.model_validate({"name": "x", "roles": {"Werewolf": 1, "Villager": 2}, "protect_and_save": "maybe"})


def test_only_saved_or_only_protected_survives_under_both_rules():
    for rule in ("survive", "die"):
        preset = load_preset("classic7").model_copy(update={"protect_and_save": rule})
        roles = {"Player1": "Werewolf", "Player2": "Werewolf", "Player3": "Villager", "Player4": "Villager",
                 "Player5": "Guard", "Player6": "Witch", "Player7": "Seer"}
        for protect, save in (("Player3", None), ("Player4", "Player3")):
            game = Game(preset, seed=1, roles=roles)
            plan = {"protect": protect, "hunt": "Player3", "verify": "Player1", "save": save, "poison": None}
            while game.phase == "night":
                ask = game.pending()[0]
                game.apply(ask.seat, ask.action, plan[ask.action])
            assert "Player3" in game.alive, (rule, protect, save)


def test_scripted_speeches_accept_text_as_the_readme_shows(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("""
roles: {Player1: Werewolf, Player2: Werewolf, Player3: Villager, Player4: Villager,
        Player5: Guard, Player6: Witch, Player7: Seer}
default: heuristic
decisions:
  - {day: 1, action: speak, seat: Player4, text: "I am the Seer. Player1 is a werewolf."}
  - {day: 1, action: speak, seat: Player5, speech: "I am the Guard."}
""")
    config = GameConfig(seed=5, model=f"scripted:{script}", max_days=1)
    with Run(tmp_path / "run") as run:
        result = asyncio.run(GameRunner(config, run).play())
    said = {e.actor: e.text for e in result.events if e.kind == "speech"}
    assert said["Player4"] == "I am the Seer. Player1 is a werewolf." and said["Player5"] == "I am the Guard."
    calls = load(tmp_path / "run").calls
    assert not calls[calls["seat"].isin(["Player4", "Player5"]) & (calls["action"] == "speak")]["fallback"].any()


def sample(action, choices, can_pass, n, seed=0):
    model = get_model("random")
    schema = json_schema(output_model(action, choices, can_pass))

    async def draw():
        out = []
        for i in range(n):
            request = Request(messages=[{"role": "user", "content": "x"}], schema=schema, sampling=Sampling(seed=seed),
                              replay_key=f"{action}/{i}")
            out.append(json.loads((await model.generate(request)).text)["target"])
        return out

    return asyncio.run(draw())


@pytest.mark.parametrize("action,choices", [("save", ("Player3",)), ("poison", ("Player1", "Player2", "Player4")),
                                            ("protect", tuple(f"Player{i}" for i in range(1, 8)))])
def test_random_passes_as_often_as_a_uniform_choice_over_legal_answers(action, choices):
    n = 4000
    answers = sample(action, choices, True, n)
    expected = n / (len(choices) + 1)  # the pass is one legal answer among len(choices) + 1
    sigma = math.sqrt(n * (1 / (len(choices) + 1)) * (1 - 1 / (len(choices) + 1)))
    passes = answers.count(None)
    assert abs(passes - expected) < 4 * sigma, (passes, expected)
    for c in choices:  # every target is as likely as the pass
        assert abs(answers.count(c) - expected) < 4 * sigma
    assert set(answers) <= set(choices) | {None}
    # where passing is not legal, random never passes
    assert None not in sample(action, choices, False, 300)


@pytest.mark.slow
def test_random_witch_sometimes_keeps_her_potions_in_games(tmp_path):
    with Run(tmp_path) as run:
        asyncio.run(play_games([GameConfig(seed=s, model="random") for s in range(60)], run))
    calls = load(tmp_path).calls
    for action in ("save", "poison", "protect"):
        targets = [json.loads(p)["target"] for p in calls[calls["action"] == action]["parsed"]]
        assert 0 < targets.count(None) < len(targets), action
    save = [json.loads(p)["target"] for p in calls[calls["action"] == "save"]["parsed"]]
    assert 0.35 < save.count(None) / len(save) < 0.65  # one victim or a pass: half and half
