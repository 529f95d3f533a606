"""A cell of many games cut into shards (toolkit.study.shards): where it is cut, that a rerun keeps the first cut,
that a cell played whole before is played whole again, and the cell's status from its shards'."""

import json

from toolkit.record.run_log import Run
from toolkit.study.shards import cell_status, cut, shardable, shards
from toolkit.study.sweep import Cell

KNOWN = {"preset", "n_games", "seed", "seats", "results_dir", "model", "experience"}


def cell(tmp_path, n_games=2500, seed=100, **params):
    folder = str(tmp_path / "cell")
    return Cell("s", "cell", "nb.ipynb", folder, {"n_games": n_games, "seed": seed, "results_dir": folder, **params},
                {"model": "heuristic"})


def test_a_cell_is_cut_every_shard_games_seeds_into_shards_of_its_own(tmp_path):
    c = cell(tmp_path)
    parts = shards(c, 1000)
    assert [(p.parameters["seed"], p.parameters["n_games"]) for p in parts] == [(100, 1000), (1100, 1000),
                                                                                 (2100, 500)]
    assert [p.cell_id for p in parts] == ["cell/shard0", "cell/shard1", "cell/shard2"]
    assert all(p.parameters["results_dir"] == p.folder and p.folder.startswith(c.folder + "/shards/") for p in parts)
    assert len({p.folder for p in parts}) == 3 and c.parameters["n_games"] == 2500  # the cell itself unchanged
    assert shards(cell(tmp_path / "small", n_games=1000), 1000) == [cell(tmp_path / "small", n_games=1000)]


def test_a_rerun_keeps_the_first_cut_and_a_cell_played_whole_stays_whole(tmp_path):
    c = cell(tmp_path)
    first = cut(c, 1000)
    assert cut(c, 300) == first  # another --shard-games: the recorded cut (else seeds would be played twice)
    assert json.loads((tmp_path / "cell" / "shards.json").read_text()) == {"shard_games": 1000}
    old = cell(tmp_path / "old")
    with Run(old.folder, "werewolf"):  # games recorded in the cell's folder before it was ever cut
        pass
    assert cut(old, 1000) == [(100, 2500)]


def test_only_cells_of_seeded_games_that_do_not_learn_from_each_other_are_cut(tmp_path):
    assert shardable(cell(tmp_path), KNOWN)
    assert not shardable(cell(tmp_path, experience=True), KNOWN)  # each game adds to a pool the next ones read
    assert not shardable(cell(tmp_path), {"tasks", "model", "results_dir"})  # the engineer notebook


def test_the_cell_is_done_when_every_shard_is(tmp_path):
    c = cell(tmp_path)
    parts = shards(c, 1000)
    ok = [{"cell_id": p.cell_id, "ok": True, "error": None, "capped": False, "wall_s": 2.0, "where": f"h:{i}"}
          for i, p in enumerate(parts)]
    bad = [*ok[:2], {**ok[2], "ok": False, "capped": True, "error": "spending cap"}]
    status = cell_status(c, bad)
    assert not status["ok"] and status["capped"] and "1 of 3 shards not done; cell/shard2: spending cap" in \
        status["error"]
    assert not (tmp_path / "cell" / "DONE.json").exists()
    status = cell_status(c, ok)
    assert status["ok"] and status["wall_s"] == 6.0 and status["shards"] == 3 and status["where"] == ["h:0", "h:1",
                                                                                                      "h:2"]
    assert json.loads((tmp_path / "cell" / "DONE.json").read_text())["cell_id"] == "cell"
