"""Exports name their files after ids they read (a game id, a run id): a results folder someone sends you
with ``../`` in those ids cannot make an export write outside its output folder. A real game is played, its ids
rewritten in every table as a crafted folder would hold them, then exported."""

import asyncio

import pytest

from toolkit.export import inspect_log, kaggle, mini
from toolkit.record.load import load
from toolkit.record.run_log import Run
from toolkit.werewolf.game import GameConfig, GameRunner

GAME, RUN, SESSION = "../../../pwn-game", "../../../pwn-run", "../../../pwn-session"


def crafted(tmp_path):
    with Run(tmp_path / "res") as run:
        asyncio.run(GameRunner(GameConfig(seed=2), run).play())
    results = load(tmp_path / "res")
    for name in ("games", "players", "events", "calls", "runs", "beliefs"):
        frame = getattr(results, name)
        if "game_id" in frame:
            frame["game_id"] = GAME
        if "run_id" in frame:
            frame["run_id"] = RUN
    return results


def outside(tmp_path, out):
    return {p for p in tmp_path.rglob("*") if p != out and out not in p.parents and "res" not in p.parts}


@pytest.mark.interop  # the Inspect export needs inspect-ai (the interop extra)
def test_crafted_game_and_run_ids_stay_inside_the_export_folder(tmp_path):
    results = crafted(tmp_path)
    out = tmp_path / "a" / "b" / "out"
    before = outside(tmp_path, out)
    written = kaggle.write(results, out) + inspect_log.write(results, out)
    assert len(written) == 2 and all(p.resolve().parent == out.resolve() for p in written)
    assert all("pwn-" in p.name and not p.name.startswith(".") for p in written)
    assert outside(tmp_path, out) - before <= {tmp_path / "a", tmp_path / "a" / "b"}


def test_a_crafted_session_id_stays_inside_the_export_folder(tmp_path):
    import pandas as pd

    results = crafted(tmp_path)
    results.sessions = pd.DataFrame([{"session_id": SESSION, "run_id": RUN, "task": "t", "spec": "random"}])
    out = tmp_path / "out"
    before = outside(tmp_path, out)
    written = mini.write(results, out, {SESSION: None})
    assert [p.parent for p in written] == [out] and written[0].name.startswith("pwn-session-")
    assert outside(tmp_path, out) == before
