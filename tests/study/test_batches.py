"""An adaptive round cut into batches for the workers (toolkit.study.batches): every game once, a side-swapped pair
never split, no batch above its size."""

from toolkit.study.adaptive import _round_rows
from toolkit.study.batches import batches, pairs


def test_a_round_is_cut_into_batches_of_whole_side_swapped_pairs():
    rows = _round_rows([("classic7", "heuristic", "random", 2), ("classic7", "random", "mixed", 1)], 1, 0, 7)
    matchup = rows.drop_duplicates("seed").set_index("seed")["matchup"]
    units = pairs(rows)
    by_matchup = pairs(rows.drop(columns="pair"))  # the schedule's pairs are the k-th games of each side
    assert [sorted(u) for u in units] == [sorted(u) for u in by_matchup]
    assert sorted(s for u in units for s in u) == sorted(matchup.index)  # every game once
    two = [sorted(matchup[s] for s in u) for u in units]
    assert sorted(map(tuple, two)) == [("heuristic vs random", "random vs heuristic")] * 2 + [
        ("mixed vs random", "random vs mixed")]
    for size in (1, 2, 3, 8):
        cut = batches(rows, size)
        assert sorted(s for b in cut for s in b) == sorted(matchup.index)
        assert all(len(b) <= max(size, 2) for b in cut)
        assert all(any(set(u) <= set(b) for b in cut) for u in units)  # no pair split
    assert [len(batches(rows, n)) for n in (1, 3, 4, 8)] == [3, 3, 2, 1]


def test_without_a_pair_column_a_game_with_no_partner_is_alone():
    rows = _round_rows([("classic7", "heuristic", "random", 2)], 1, 0, 7).drop(columns="pair")
    rows = rows[rows["seed"] != rows["seed"].max()]  # the second pair's second game left out
    assert sorted(len(u) for u in pairs(rows)) == [1, 2]
