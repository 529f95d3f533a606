"""An adaptive round cut into batches for the workers (toolkit.study.batches): every game once, a side-swapped pair
never split, no batch above its size."""

import numpy as np

from toolkit.study.adaptive import _round_rows
from toolkit.study.batches import batches, pairs

MODELS = ["heuristic", "random", "mixed"]


def test_a_round_is_cut_into_batches_of_whole_side_swapped_pairs():
    counts = {"classic7": np.array([[1, 3, 0], [2, 0, 1], [0, 1, 0]])}  # heuristic-random 3 and 2: a game alone
    rows = _round_rows(counts, MODELS, 1, 0, 7)
    matchup = rows.drop_duplicates("seed").set_index("seed")["matchup"]
    units = pairs(rows)
    assert sorted(s for u in units for s in u) == sorted(matchup.index)  # every game once
    two = [sorted(matchup[s] for s in u) for u in units if len(u) == 2]
    assert sorted(map(tuple, two)) == [("heuristic vs random", "random vs heuristic")] * 2 + [
        ("mixed vs random", "random vs mixed")]
    assert sorted(len(u) for u in units) == [1, 1, 2, 2, 2]  # heuristic self-play and the third heuristic-random
    for size in (1, 2, 3, 8):
        cut = batches(rows, size)
        assert sorted(s for b in cut for s in b) == sorted(matchup.index)
        assert all(len(b) <= max(size, 2) for b in cut)
        assert all(any(set(u) <= set(b) for b in cut) for u in units)  # no pair split
    assert [len(batches(rows, n)) for n in (1, 3, 8)] == [5, 3, 1]
