"""A sweep on a Dask cluster keeps one limit per endpoint across its workers' notebook kernels, through the
scheduler (toolkit.llm.dask_limits), when it is given the cluster's address: a real cluster started the
documented way (``dask scheduler``, two ``dask worker`` processes), two shards of one cell playing at once in two
papermill kernels, against the loopback server enforcing a concurrency limit with 429s. Before, a sweep given a
scheduler's address shared nothing (its workers could not inherit a folder): each kernel kept its own limit, 4 in
flight against 2 allowed (the two kernels' games did not always overlap on a loaded machine, so the test asks the
scheduler for the figures the kernels kept there: none before)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolkit.llm.shared_limits import digest
from toolkit.record.load import load
from toolkit.testing.dask_cluster import dask_cluster
from toolkit.testing.loopback_server import FakeOpenAIServer

pytest.importorskip("dask.distributed")
from dask.distributed import Client  # noqa: E402
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_sweep_given_a_dask_scheduler_keeps_one_limit_across_its_kernels(tmp_path, monkeypatch):
    monkeypatch.delenv("TOOLKIT_SHARED_LIMITS", raising=False)
    monkeypatch.setenv("PYTHONPATH", f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    with FakeOpenAIServer(latency=0.5, capacity=2, retry_after=0.2) as server, \
            dask_cluster(2, tmp_path / "cluster") as cluster:
        sweep = tmp_path / "limited.yaml"
        spec = f"openai:ok@{server.base_url}?max_connections=2"  # two seats of each game: fewer calls than all
        sweep.write_text(f"name: limited\nnotebook: experiments/werewolf.ipynb\nshard_games: 2\n"
                         f"parameters: {{n_games: 4, seed: 0, concurrency: 2}}\n"
                         f"grid:\n  seats: [{{Player1: '{spec}', Player2: '{spec}'}}]\n")
        out = subprocess.run([sys.executable, "-m", "toolkit", "sweep", str(sweep), "--scheduler",
                              cluster.address, "--out", str(tmp_path / "results")], cwd=REPO,
                             capture_output=True, text=True, timeout=900)
        with Client(cluster.address, set_as_default=False) as client:  # what the kernels kept on the scheduler
            kept = client.get_metadata(["toolkit-limits", digest(server.base_url)], default=None)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    (cell,) = [p for p in (tmp_path / "results" / "limited").iterdir() if p.is_dir() and p.name[0] != "."]
    tables = load(cell, complete_games=True)
    assert sorted(tables.games["seed"]) == [0, 1, 2, 3]
    assert tables.runs["run_id"].nunique() == 2  # two shards, two kernels
    assert kept is not None  # the kernels kept their endpoint's figures on the scheduler
    assert server.rejected == 0 and server.max_active == 2  # one limit for both kernels, kept through the scheduler
    assert not (tmp_path / "results" / "limited" / ".limits").exists()  # Dask's primitives, no folder
