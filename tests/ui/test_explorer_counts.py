"""The explorer's header counts the model calls of tables exported without their calls table from the games
table, as the report's header does: it said "0 model calls" above the report's "model calls: 110276"."""

import asyncio

import pytest

from toolkit.record.run_log import Run
from toolkit.study.tournament import export_tables
from toolkit.ui import ResultsExplorer
from toolkit.werewolf.game import GameConfig, GameRunner


@pytest.mark.slow
def test_the_explorer_counts_the_calls_of_exported_tables(tmp_path):
    with Run(tmp_path / "played", "t") as run:
        runner = GameRunner(GameConfig(seed=2), run)
        runner.start()
        asyncio.run(runner.play())
    export_tables(tmp_path / "played", tmp_path / "tables")  # (no calls table)
    e = ResultsExplorer()
    e._read_tables(tmp_path / "tables")
    assert f"{runner.log.calls} model calls (counted in the games table" in e.summary.value
    assert runner.log.calls > 0
