"""Reflection as in the seed (a summary and a role guess with confidence for every other living seat, at the
cadence a study chooses), the beliefs table, and experience retrieved for the moment from a named pool."""

import asyncio

import pytest

from toolkit.record.run_log import Run
from toolkit.record.load import load
from toolkit.werewolf.experience import ExperiencePool
from toolkit.werewolf.game import GameConfig, GameRunner, play_game

BELIEF_COLUMNS = ["game_id", "seq", "day", "phase", "seat", "about", "guessed_role", "confidence", "call_id"]


def play(tmp_path, **kw):
    with Run(tmp_path) as run:
        result = asyncio.run(play_game(GameConfig(**{"seed": 3, "reflection": True, **kw}), run))
    return result, load(tmp_path)


def test_per_action_reflection_writes_a_belief_about_every_other_living_seat(tmp_path):
    result, t = play(tmp_path, reflect="per_action")
    reflections = t.calls[(t.calls["action"] == "reflect") & t.calls["ok"]]
    others = t.calls[t.calls["action"] != "reflect"]
    assert len(reflections) >= len(others) * 0.9  # one before (nearly) every decision
    beliefs = t.beliefs
    assert list(beliefs.columns[:len(BELIEF_COLUMNS)]) == BELIEF_COLUMNS
    per_call = beliefs.groupby("call_id")
    assert set(per_call.groups) == set(reflections["call_id"])
    roles = dict(zip(t.players["seat"], t.players["role"]))
    for call_id, rows in per_call:
        seat = rows["seat"].iloc[0]
        assert seat not in set(rows["about"]) and rows["about"].is_unique
        # one row per other seat alive at that moment: the deaths before the reflection's event seq
        dead = set(t.events[(t.events["kind"].isin(["death", "elimination"]))
                            & (t.events["seq"] < rows["seq"].iloc[0])]["target"])
        assert set(rows["about"]) == set(roles) - dead - {seat}
    assert beliefs["confidence"].between(0, 1).all() and set(beliefs["guessed_role"]) <= set(roles.values())


@pytest.mark.parametrize("cadence", ["per_action", "per_phase", "per_day", "off"])
def test_the_cadence_decides_how_often_seats_reflect(tmp_path, cadence):
    _, t = play(tmp_path, reflect=cadence, max_days=3)
    reflect = t.calls[t.calls["action"] == "reflect"]
    days = t.games.iloc[0]["days"]
    living = len(t.players)
    if cadence == "off":
        assert reflect.empty and t.beliefs.empty
    elif cadence == "per_day":
        assert reflect.groupby(["seat", "day"]).size().max() == 1 and reflect["phase"].eq("day_speech").all()
    elif cadence == "per_phase":
        assert reflect.groupby(["seat", "day", "phase"]).size().max() == 1 and reflect["phase"].nunique() >= 2
    else:
        assert len(reflect) > living * days
    assert (t.beliefs.empty) == reflect.empty


def test_an_unknown_cadence_is_refused():
    with pytest.raises(ValueError, match="reflect must be one of"):
        GameRunner(GameConfig(reflect="sometimes"))


def test_no_beliefs_gives_an_empty_table_with_its_columns(tmp_path):
    _, t = play(tmp_path, reflection=False)
    assert t.beliefs.empty and list(t.beliefs.columns) == BELIEF_COLUMNS


@pytest.mark.slow
def test_beliefs_are_deterministic_and_better_than_chance_for_the_heuristic(tmp_path):
    _, a = play(tmp_path / "a", reflect="per_phase")
    _, b = play(tmp_path / "b", reflect="per_phase")
    cols = ["seq", "seat", "about", "guessed_role", "confidence"]
    assert a.beliefs[cols].reset_index(drop=True).equals(b.beliefs[cols].reset_index(drop=True))


def test_experience_is_retrieved_for_the_moment_and_never_from_the_run_itself(tmp_path):
    old = ExperiencePool(tmp_path / "pool.jsonl", version="earlier-study")
    old.add("Seer", "As Seer I revealed my check on a wolf early and the village voted it out.", "won", "x1",
            preset="classic7")
    old.add("Seer", "A guard protected me after a quiet first night; nobody died.", "won", "x2", preset="classic7")
    for i, text in enumerate(["Player1 was voted out on day 2 and was a wolf.",
                              "Player5 died at night; suspect Player2.", "A tie in the vote wasted a day.",
                              "Check Player7 first when Player3 accuses.", "Speak last and count the votes of day 1."]):
        old.add("Seer", text, "lost", f"y{i}", preset="classic7")
    old.add("Seer", "Lesson from another preset.", "won", "x3", preset="standard9")
    old.add("Werewolf", "Wolves should fake a seer claim.", "won", "x4", preset="classic7")
    pool = ExperiencePool(tmp_path / "pool.jsonl", version="this-study")
    seen: dict[str, list] = {}
    with Run(tmp_path / "run") as run:
        runner = GameRunner(GameConfig(seed=3, experience=True, reflection=True, experience_pool=pool), run)
        original = runner.decide

        async def spy(ask):
            decision = await original(ask)
            seen.setdefault(runner.players[ask.seat].role, []).append(tuple(runner.players[ask.seat].experiences))
            return decision

        runner.decide = spy
        asyncio.run(runner.play())
    lessons = {lesson for role in seen.values() for group in role for lesson in group}
    assert not any("another preset" in x for x in lessons)  # filtered by preset before ranking
    assert not any("fake a seer claim" in x for x in lessons)  # wolves use experience only if their config says so
    seer = seen.get("Seer", [])
    assert seer and all(len(group) <= 3 for group in seer)
    assert len(set(seer)) >= 2 or len(seer) == 1  # retrieval follows the moment: the ranking changes
    # the run's own lessons were written (this study's version) but are never retrieved by it
    written = [e for e in pool.entries() if e["version"] == "this-study"]
    assert written and not any(e["reflection"] in lessons for e in written)
