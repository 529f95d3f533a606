"""Degraded games (issue 42, point 4): a game where a seat's decisions were mostly fallbacks is left out of the
ratings by default, put back by a switch, counted in the report beside the tables, and the error-survival check
still reads it. Each test fails on 51c499d (no ``include_degraded``, no ``degraded`` column)."""

import asyncio

import pandas as pd
import pytest

from toolkit.analysis.error_policy import error_survival
from toolkit.analysis.ratings import ratings, separation
from toolkit.record.load import load
from toolkit.record.run_log import Run
from toolkit.werewolf.game import GameConfig, play_games


def study(n=40):
    """A against B, sides swapped game by game; every fourth game degraded (and won by A)."""
    games, players = [], []
    for i in range(n):
        village, wolves = ("A", "B") if i % 2 == 0 else ("B", "A")
        degraded = i % 4 == 0
        winner = ("village" if village == "A" else "werewolves") if degraded else ("village" if i % 3 else "werewolves")
        games.append({"game_id": f"g{i}", "winner": winner, "win_reason": "x", "n_fallbacks": 5 * degraded,
                      "degraded": degraded})
        players += [{"game_id": f"g{i}", "seat": "P1", "spec": village, "side": "village", "role": "Villager"},
                    {"game_id": f"g{i}", "seat": "P2", "spec": wolves, "side": "werewolves", "role": "Werewolf"}]
    return pd.DataFrame(games), pd.DataFrame(players)


def test_ratings_leave_degraded_games_out_unless_asked():
    games, players = study()
    default = ratings(games, players, by_side=True).set_index(["spec", "side"])
    every = ratings(games, players, by_side=True, include_degraded=True).set_index(["spec", "side"])
    assert default.loc[("A", "village"), "n"] == 10 and every.loc[("A", "village"), "n"] == 20
    sep = separation(games, players)
    assert len(sep) == 2 and (sep["n_a"] + sep["n_b"]).eq(30).all()  # 40 games, 10 of them degraded
    # results written before the column (no degraded column, or nulls) count as not degraded
    assert ratings(games.drop(columns="degraded"), players, by_side=True)["n"].iloc[0] == 20
    assert ratings(games.assign(degraded=None), players, by_side=True)["n"].iloc[0] == 20


def test_the_error_survival_check_still_reads_the_degraded_games():
    games, players = study()
    table = error_survival(games, players).set_index(["spec", "side"])
    assert table.loc[("A", "village"), "n_all"] == 20 and table.loc[("A", "village"), "n_clean"] == 10


@pytest.mark.slow
def test_the_report_counts_degraded_games_beside_its_tables_and_rates_them_only_when_asked(tmp_path):
    from toolkit.analysis.report import write_report

    # chaos:0.6 on the village side: its bad answers make two of these nine games mostly fallbacks for a seat
    configs = [GameConfig(seed=s, model="heuristic", side_models={"village": "chaos:0.6"}) for s in range(9)]
    with Run(tmp_path / "r") as run:
        asyncio.run(play_games(configs, run))
    games = load(tmp_path / "r").games
    assert int(games["degraded"].sum()) == 2
    text = write_report(tmp_path / "r", tmp_path / "out")[-1].read_text()
    assert text.count("**Degraded games:** 2 of 9") >= 3 and "not in the ratings" in text
    text = write_report(tmp_path / "r", tmp_path / "out2", include_degraded=True)[-1].read_text()
    assert "and in the ratings (`--include-degraded`)" in text
