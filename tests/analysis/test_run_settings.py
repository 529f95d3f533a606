"""Run settings are not conditions: a cell stopped at one spending cap and resumed with a higher one (and other
concurrency, another at-cap behaviour) is one condition in the report, not two (issue 42: "split by model,
max_usd")."""

import pytest

from toolkit import analysis as A
from toolkit.analysis.report import write_report
from toolkit.record.load import games_with_params, load
from toolkit.study.experiments import run_werewolf_cell


def resumed(root):
    cell = str(root / "cell")
    run_werewolf_cell(cell, n_games=1, seed=0, max_usd=0.03, concurrency=2)
    run_werewolf_cell(cell, n_games=2, seed=0, max_usd=0.1, max_tokens=10_000, at_cap="finish", concurrency=4)
    return load(root)


def test_a_cap_raised_on_resume_is_not_a_condition(tmp_path):
    games = games_with_params(resumed(tmp_path / "res"))
    assert len(games) == 2 and games["max_usd"].nunique() == 2  # two runs, two caps
    assert A.conditions(games) == []


@pytest.mark.slow
def test_the_report_of_a_resumed_cell_is_not_split_by_its_cap(tmp_path):
    resumed(tmp_path / "res")
    write_report(tmp_path / "res", tmp_path / "out")
    text = (tmp_path / "out" / "summary.md").read_text()
    assert "split by" not in text and "max_usd" not in text
