"""Every kind of events row is declared once (the engine's in toolkit/werewolf/engine/events.py, a role's in its
module) and every reader of the rows takes its vocabulary from that declaration: the report's per-model fallback
rates, the Kaggle export, the HTML replay and Kaggle's readers (its moderator log and its harness's actions).

Two drifts this replaced: the report's fallback rate left out the Doctor's heals, the Hunter's shots and every
bid, and the Kaggle export wrote the Doctor's heals as moderator announcements. Real games are played (offline
seats: chaos answers badly at a rate, so there are fallbacks) and every reader is run on their rows."""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path

import pytest

from toolkit.analysis.report_tables import fallback_rates
from toolkit.export import html, kaggle
from toolkit.record.load import load
from toolkit.record.run_log import Run
from toolkit.werewolf.engine import roles as registry
from toolkit.werewolf.engine.events import ENGINE, MODERATOR, VIEWS
from toolkit.werewolf.game import GameConfig, play_game
from toolkit.werewolf.kaggle import calls as kaggle_calls
from toolkit.werewolf.kaggle import replay as kaggle_replay

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """Chaos games of the two presets that have a Doctor (kaggle7) and a Hunter (competitive12)."""
    folder = tmp_path_factory.mktemp("kinds")
    with Run(folder, experiment="kinds") as run:
        for preset, seeds in (("kaggle7", range(6)), ("competitive12", range(6))):
            for seed in seeds:
                asyncio.run(play_game(GameConfig(preset=preset, seed=seed, model="chaos:0.3", max_days=6), run))
    return load(folder)


def _emitted_literals(path: Path, call: str) -> set[str]:
    """The kinds a module emits: the first argument of each ``emit(...)``/``_emit(...)`` call, when a literal."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == call \
                and node.args and isinstance(node.args[0], ast.Constant):
            found.add(node.args[0].value)
    return found


def test_every_kind_the_engine_or_a_role_emits_is_declared():
    engine = _emitted_literals(ROOT / "toolkit/werewolf/engine/rules.py", "_emit")
    assert engine and engine <= {k.name for k in ENGINE}
    for name, role in registry.REGISTRY.items():
        module = ROOT / "toolkit/werewolf/engine/roles" / f"{name.lower()}.py"
        declared = {k.name for k in role.events} | {k.name for k in ENGINE}
        assert _emitted_literals(module, "emit") <= declared, name
        # every decision the role takes is recorded by a kind it declares
        assert set(role.actions) <= {k.decision for k in role.events}, name


def test_every_declared_kind_is_known_to_every_reader():
    """The report counts each decision kind; the Kaggle writer can fill each declared entry; the HTML view draws
    each view; Kaggle's readers map each declared entry and action back to its decision."""
    kinds = registry.event_kinds()
    assert {"heal", "shot", "bid", "protect", "check", "hunt_proposal", "save", "poison", "speech", "vote"} <= \
        {name for name, k in kinds.items() if k.decision}
    assert not {"kill", "death", "elimination", "announcement"} & {name for name, k in kinds.items() if k.decision}
    actions, entries = kaggle_calls.actions(), kaggle_replay.entries()
    for name, k in kinds.items():
        assert k.kaggle[0] in kaggle.DATA, name  # the Kaggle writer fills this entry
        assert k.view in VIEWS, name
        if k.kaggle_action:
            assert actions[k.kaggle_action] == k.decision, name
        if k.decision and k.kaggle != MODERATOR and k.decision != "bid":
            assert entries[k.kaggle[0]] == k.decision, name
    assert kinds["heal"].kaggle == ("DoctorHealActionDataEntry", "heal_action")
    assert registry.removing_kinds() == ("death", "elimination", "disqualification", "shot")


def test_a_kind_declared_twice_differently_or_emitted_undeclared_is_refused():
    from toolkit.werewolf.engine.events import EventKind
    from toolkit.werewolf.engine.preset import Preset
    from toolkit.werewolf.engine.rules import Game

    class Liar(registry.Role):
        name, events = "Liar", (EventKind("vote"),)  # the engine's ballot, declared otherwise

    with pytest.raises(ValueError, match="'vote' is declared twice"):
        registry.register(Liar())
    assert "Liar" not in registry.REGISTRY
    game = Game(Preset(name="p", roles={"Werewolf": 2, "Villager": 3}), 0)
    with pytest.raises(ValueError, match="no role declares the event kind 'wink'"):
        game.emit("wink", "Player1", None, "winks", "public")


@pytest.mark.slow
def test_fallback_rates_count_every_decision_a_seat_took(played):
    """The per-model decisions are every events row a seat acted in: the Doctor's heals, the Hunter's shots and
    the bids included (before, 'heal', 'shot' and 'bid' rows were left out of the count)."""
    t = played
    acted = t.events[t.events["actor"].notna()]
    assert {"heal", "shot"} <= set(acted["kind"])
    rates = fallback_rates(t)
    assert int(rates["decisions"].sum()) == len(acted)
    per_spec = acted.merge(t.players[["game_id", "seat", "spec"]].rename(columns={"seat": "actor"}))
    fell = per_spec[per_spec["kind"].isin(["heal", "shot"]) & per_spec["fallback"].astype(bool)]
    assert len(fell) > 0  # chaos made some of them fall back: they are in the rate now
    row = rates.set_index("spec").loc["chaos:0.3"]
    assert row["fallback_rate"] == pytest.approx(per_spec["fallback"].astype(bool).mean())


@pytest.mark.slow
def test_the_kaggle_export_writes_each_heal_as_kaggles_doctor_heal_and_reads_back(played, tmp_path):
    t = played
    heals = t.events[t.events["kind"] == "heal"]
    assert len(heals) > 0
    paths = kaggle.write(t, tmp_path)
    assert paths
    written = []
    for path in paths:
        replay = json.loads(path.read_text())
        for step in replay["info"]["MODERATOR_OBSERVATION"]:
            for entry in step:
                event = json.loads(entry["json_str"])
                if entry["data_type"] == "DoctorHealActionDataEntry":
                    written.append((path.stem, event["data"]["actor_id"], event["data"]["target_id"],
                                    event["event_name"], event["visible_to"]))
                if entry["data_type"] == "dict" and event["data"].get("kind") == "heal":
                    assert event["data"]["target_id"] is None  # a heal of nobody: Kaggle's heal needs a target
    decided = set(kaggle.decided(t.games)["game_id"])
    protections = t.events[t.events["kind"].isin(["heal", "protect"])]  # the Guard's too: Kaggle's nearest entry
    doctors = protections[protections["game_id"].isin(decided) & protections["target"].notna()]  # a pass: none
    assert heals["target"].isna().any() and len(doctors)
    expected = sorted((r.game_id, r.actor, r.target, "heal_action", [r.actor]) for r in doctors.itertuples())
    assert sorted(written) == expected
    # Kaggle's own record model takes the entry as it is written (when the interop extra is installed)
    records = pytest.importorskip("kaggle_environments.envs.werewolf.game.records")
    data = json.loads(next(e for p in paths for s in json.loads(p.read_text())["info"]["MODERATOR_OBSERVATION"]
                           for e in s if e["data_type"] == "DoctorHealActionDataEntry")["json_str"])["data"]
    assert records.DoctorHealActionDataEntry.model_validate(data).target_id == data["target_id"]


def test_the_html_replay_shows_heals_and_marks_a_shot_player_dead(played):
    t = played
    shot = t.events[t.events["kind"] == "shot"].iloc[0]
    context = html.game_context(t, shot["game_id"])
    rows = [e for b in context["blocks"] for e in b["events"]]
    (shown,) = [e for e in rows if e["seq"] == shot["seq"]]
    assert shown["died"] and shown["view"] == "text" and shown["text"] == shot["text"]
    heal = t.events[t.events["kind"] == "heal"].iloc[0]
    page = html.game_page(t, heal["game_id"])
    assert f'data-seq="{heal["seq"]}" data-kind="heal"' in page
