"""A sweep on a real Dask cluster started the documented way: ``dask scheduler`` and two ``dask worker``
processes, the sweep given the scheduler's address. One cell of many games runs as shards on both workers, each
a papermill notebook writing its own run; the cell reads as one; a shard a kill left half played plays only its
missing games."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolkit.analysis import conditions
from toolkit.record.load import games_with_params, load
from toolkit.study.experiments import play_werewolf_cell
from toolkit.study.sweep import load_sweep
from toolkit.study.shards import shards
from toolkit.testing.dask_cluster import dask_cluster

pytest.importorskip("dask.distributed")
REPO = Path(__file__).resolve().parents[2]
N_GAMES, SHARD = 16, 8


@pytest.mark.slow
def test_one_cell_runs_as_shards_on_two_dask_workers_and_reads_as_one(tmp_path):
    sweep = tmp_path / "big.yaml"
    sweep.write_text(f"name: big\nnotebook: experiments/werewolf.ipynb\nshard_games: {SHARD}\n"
                     f"parameters: {{n_games: {N_GAMES}, seed: 100}}\ngrid:\n  model: [heuristic]\n")
    results = tmp_path / "results"
    _, (cell,) = load_sweep(sweep, results)
    first = shards(cell, SHARD)[0]  # a shard a kill stopped after 3 of its games: the cut, then 3 games
    play_werewolf_cell(first.folder, n_games=3, seed=100)
    env = {"PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    with dask_cluster(2, tmp_path / "cluster", env=env) as cluster:
        out = subprocess.run([sys.executable, "-m", "toolkit", "sweep", str(sweep), "--scheduler", cluster.address,
                              "--out", str(results)], cwd=REPO, capture_output=True, text=True, timeout=240,
                             env={**os.environ, **env})
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    folder = Path(cell.folder)
    done = json.loads((folder / "DONE.json").read_text())
    assert done["ok"] and done["shards"] == 2
    assert len(done["where"]) == 2, done  # two worker processes played the cell's games
    tables = load(folder, complete_games=True)
    assert sorted(tables.games["seed"]) == list(range(100, 100 + N_GAMES))  # every game once: none lost, none twice
    runs = {k: len(load(folder / "shards" / k).runs) for k in ("00000", "00001")}
    assert runs == {"00000": 2, "00001": 1}  # the half-played shard: one more run, of its 5 missing games
    assert all((folder / "shards" / k / "notebook.ipynb").exists() for k in runs)  # each a papermill notebook
    assert conditions(games_with_params(load(results / "big"))) == []  # the report: one condition, not two
    assert "model-heuristic" in out.stdout and f" {N_GAMES} " in out.stdout
