"""make example's tables are byte-identical for the same seeds (toolkit.study.stable_tables): two plays of the
same games (each draws its own game and run ids, and times itself) export to the same bytes once stabilised.
On the old code the exports differed in their ids, row order and timings (and there was no such module)."""

import asyncio

import pytest

from toolkit.record.run_log import Run
from toolkit.study.stable_tables import stabilise
from toolkit.study.tournament import export_tables
from toolkit.werewolf.game import GameConfig, GameRunner


def play_and_export(folder, seeds):
    with Run(folder / "played", "example", config={"cell": "classic7__part0"}) as run:
        for seed in seeds:
            runner = GameRunner(GameConfig(seed=seed), run)
            runner.start()
            asyncio.run(runner.play())
    export_tables(folder / "played", folder / "tables")
    stabilise(folder / "tables")
    return {p.name: p.read_bytes() for p in sorted((folder / "tables").glob("*.parquet"))}


@pytest.mark.slow
def test_the_same_seeds_export_the_same_bytes(tmp_path):
    first = play_and_export(tmp_path / "a", [3, 1])
    second = play_and_export(tmp_path / "b", [1, 3])  # another order of play: the same tables
    assert first == second and set(first) == {"runs.parquet", "games.parquet", "players.parquet",
                                              "events.parquet", "beliefs.parquet"}
    import pandas as pd
    games = pd.read_parquet(tmp_path / "a" / "tables" / "games.parquet")
    assert list(games["game_id"]) == ["g1", "g3"] and games["wall_s"].isna().all()
    assert list(pd.read_parquet(tmp_path / "a" / "tables" / "runs.parquet")["run_id"]) == ["example-classic7__part0"]
