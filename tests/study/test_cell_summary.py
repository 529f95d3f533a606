"""A cell's summary (what experiments/werewolf.ipynb shows after its games) reads the games' columns and the
ballots, not every table: the same numbers as the whole tables give, in memory that does not grow with every
event and call of the study."""

import pandas as pd
import pytest

from toolkit import analysis as A
from toolkit.analysis import plots as P
from toolkit.record.load import LoadWarning, load
from toolkit.study.experiments import BALLOTS, SUMMARY_GAMES, cell_summary, play_werewolf_cell

pytestmark = pytest.mark.slow  # games played: seconds of CPU


@pytest.fixture(scope="module")
def cell(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cell") / "c"
    play_werewolf_cell(str(folder), n_games=12, seed=3, wolf_model="random")
    return folder


def test_the_summary_gives_the_numbers_the_whole_tables_give(cell):
    summary = cell_summary(cell, batch_games=5)  # three batches of games
    t = load(cell)
    assert repr(summary) == f"CellSummary(games=12, ballots={len(summary.ballots)})"
    assert list(summary.games.columns) == SUMMARY_GAMES and list(summary.ballots.columns) == BALLOTS
    pd.testing.assert_frame_equal(A.win_rates(summary.games), A.win_rates(t.games))
    pd.testing.assert_frame_equal(A.per_game_costs(summary.games), A.per_game_costs(t.games))
    for by in (["round", "day"], ["spec", "round"], ["role"]):
        pd.testing.assert_frame_equal(A.ballot_accuracy(summary.ballots, by),
                                      A.vote_accuracy(t.events, t.players, by, games=t.games))
    full = A.votes(t.events, t.players, t.games)
    assert len(summary.ballots) == len(full) > 12
    # the plot from the ballots is the plot from the tables: the same points and intervals
    a = P.plot_vote_accuracy_by_day(ballots=summary.ballots).axes[0]
    b = P.plot_vote_accuracy_by_day(t.events, t.players, games=t.games).axes[0]
    assert [line.get_ydata().tolist() for line in a.lines] == [line.get_ydata().tolist() for line in b.lines]


def test_the_ballots_keep_their_text_as_categories_across_batches(cell):
    """A ballot's text (its game, round, model, role, side) is a category, its categories the union of every
    batch's: about 45 bytes a ballot, where text kept as Python strings made it about 215 (308 MB of ballots at
    100,000 games)."""
    summary = cell_summary(cell, batch_games=5)  # three batches: three sets of categories put together
    ballots = summary.ballots
    assert list(ballots["game_id"].cat.categories) == sorted(summary.games["game_id"])
    for column in ("round", "spec", "role", "side"):
        assert isinstance(ballots[column].dtype, pd.CategoricalDtype), column
        assert list(ballots[column].cat.categories) == sorted(ballots[column].dropna().unique()), column
    assert ballots["spec"].nunique() == 2  # heuristic and random: both batches' models
    assert ballots.memory_usage(deep=True).sum() / len(ballots) < 80


def test_a_cell_without_games_summarises_to_empty_frames(tmp_path):
    folder = tmp_path / "empty"
    play_werewolf_cell(str(folder), n_games=1, seed=0)
    (games,) = list(folder.rglob("games.parquet"))
    games.unlink()  # the players' and events' rows of a game with no games row: a partial game, left out
    with pytest.warns(LoadWarning, match="left out 1 partial game"):
        summary = cell_summary(folder)
    assert len(summary.games) == 0 and len(summary.ballots) == 0 and list(summary.ballots.columns) == BALLOTS
