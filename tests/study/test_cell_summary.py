"""A cell's summary (what experiments/werewolf.ipynb shows after its games) reads the games' columns and counts
their ballots per game, round and day: the same numbers as the whole tables give, in memory that grows by a few
numbers a game, not with every event and ballot of the study."""

import tracemalloc

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from toolkit import analysis as A
from toolkit.analysis import plots as P
from toolkit.analysis.metrics import DAY_VOTES
from toolkit.record.load import LoadWarning, load
from toolkit.study.experiments import SUMMARY_GAMES, cell_summary, play_werewolf_cell

pytestmark = pytest.mark.slow  # games played: seconds of CPU


@pytest.fixture(scope="module")
def cell(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cell") / "c"
    play_werewolf_cell(str(folder), preset="standard9", n_games=12, seed=3, wolf_model="random")  # revotes
    return folder


def test_the_summary_gives_the_numbers_the_whole_tables_give(cell):
    summary = cell_summary(cell, batch_rows=100)  # ~7 batches of events: 16 games in flight span them
    t = load(cell)
    full = A.votes(t.events, t.players, t.games)
    decided = full[~full["forced"] & ~full["abstain"] & (full["side"] == "village")]
    assert repr(summary) == f"CellSummary(games=12, votes={len(decided)} ballots)" and len(decided) > 12
    assert list(summary.games.columns) == SUMMARY_GAMES and list(summary.votes.columns) == DAY_VOTES
    pd.testing.assert_frame_equal(A.win_rates(summary.games), A.win_rates(t.games))
    pd.testing.assert_frame_equal(A.per_game_costs(summary.games), A.per_game_costs(t.games))
    whole = A.vote_accuracy(t.events, t.players, ["round", "day"], games=t.games)
    assert len(whole) >= 3 and set(whole["round"]) == {"first", "revote"}
    # every rate, chance level and interval to the bit; the random player's mean (summed per game first) to rounding
    pd.testing.assert_frame_equal(summary.vote_accuracy.drop(columns="random"), whole.drop(columns="random"),
                                  check_exact=True)
    pd.testing.assert_series_equal(summary.vote_accuracy["random"], whole["random"], rtol=1e-12)
    # the plot from the counts is the plot from the tables: the same points and intervals
    a = P.plot_vote_accuracy_by_day(counts=summary.votes).axes[0]
    b = P.plot_vote_accuracy_by_day(t.events, t.players, games=t.games).axes[0]
    assert [line.get_ydata().tolist() for line in a.lines] == [line.get_ydata().tolist() for line in b.lines]
    with pytest.raises(ValueError, match="by needs the ballots"):
        P.plot_vote_accuracy_by_day(counts=summary.votes, by="spec")


def test_the_counts_do_not_depend_on_how_the_events_are_batched(cell):
    """A game's events are written while it plays, between other games' rows: a batch ending mid-game keeps its
    rows until the game's last row is read; the counts are the same from 50 rows a batch as from one batch."""
    def counts(rows):
        votes = cell_summary(cell, batch_rows=rows).votes
        return votes.sort_values(["game_id", "round", "day"], ignore_index=True)

    one = counts(1_000_000)
    assert one["game_id"].nunique() == 12 and (one["ballots"] >= one["hits"]).all()
    assert list(one["game_id"].cat.categories) == sorted(load(cell).games["game_id"])
    pd.testing.assert_frame_equal(counts(50), one)
    pd.testing.assert_frame_equal(counts(7), one)


def copies(cell, folder, k):
    """``k`` copies of the cell's run with fresh run and game ids (the tables the summary reads): k x 12 games."""
    (run,) = [f for f in cell.iterdir() if f.is_dir()]
    for i in range(k):
        out = folder / f"{run.name}-{i}"
        out.mkdir(parents=True)
        for table in ("runs", "games", "players", "events"):
            t = pq.read_table(run / f"{table}.parquet")
            for name in ("run_id", "game_id"):
                if name in t.column_names:
                    t = t.set_column(t.column_names.index(name), name,
                                     pc.binary_join_element_wise(t[name], pa.scalar(f"-c{i}"), ""))
            pq.write_table(t, out / f"{table}.parquet")
    return folder


def traced_peak(folder):
    tracemalloc.start()
    try:
        summary = cell_summary(folder, batch_rows=500, batch_games=20)  # (the configs: a few KB a game)
        return tracemalloc.get_traced_memory()[1], summary
    finally:
        tracemalloc.stop()


def test_the_summary_memory_grows_by_a_few_numbers_a_game(cell, tmp_path):
    """From 24 to 480 games the summary's Python peak (tracemalloc: pandas and numpy included) grows by what it
    keeps a game (its games row, nine players' codes, its rules, a few counts: ~0.9 KB measured), not by the
    study's events or ballots, nor by the number of batches (a frame of counts a batch, kept apart, grew 4.8 KB a
    game here: they are put together every four batches)."""
    small_folder, large_folder = copies(cell, tmp_path / "small", 2), copies(cell, tmp_path / "large", 40)
    cell_summary(small_folder)  # what a first call allocates once (a lazy import, a cache) is not the games'
    small, summary = traced_peak(small_folder)
    large, big = traced_peak(large_folder)
    assert (len(summary.games), len(big.games)) == (24, 480)
    assert big.votes["ballots"].sum() == 20 * summary.votes["ballots"].sum()
    per_game = (large - small) / (480 - 24)
    assert per_game < 2_000, f"{per_game:.0f} bytes a game"


def test_a_cell_without_games_summarises_to_empty_frames(tmp_path):
    folder = tmp_path / "empty"
    play_werewolf_cell(str(folder), n_games=1, seed=0)
    (games,) = list(folder.rglob("games.parquet"))
    games.unlink()  # the players' and events' rows of a game with no games row: a partial game, left out
    with pytest.warns(LoadWarning, match="left out 1 partial game"):
        summary = cell_summary(folder)
    assert len(summary.games) == 0 and len(summary.votes) == 0 and list(summary.votes.columns) == DAY_VOTES
    assert len(summary.vote_accuracy) == 0
    P.plot_vote_accuracy_by_day(counts=summary.votes)  # an empty plot, no error
