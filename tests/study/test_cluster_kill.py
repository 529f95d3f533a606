"""A Dask worker killed while it plays a shard takes the shard's papermill kernel with it: the kernel (a process of
its own session, which a kill of the worker's process group does not reach) ends within seconds (ipykernel's
watch on its parent, which the kernel manager arms with JPY_PARENT_PID), so it neither plays on nor holds the
shard's lock; Dask gives the shard to the other worker, which plays its missing games, and every game is in the
cell once. A real cluster started the documented way (``dask scheduler``, two ``dask worker`` processes), real
kernels, real HTTP to the loopback server (one seat of each game, so that a game lasts seconds)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from toolkit.record.load import load
from toolkit.testing.dask_cluster import dask_cluster
from toolkit.testing.loopback_server import FakeOpenAIServer

pytest.importorskip("dask.distributed")
REPO = Path(__file__).resolve().parents[2]


def kernels(pid: int) -> list[psutil.Process]:
    try:
        return [p for p in psutil.Process(pid).children(recursive=True) if "ipykernel" in " ".join(p.cmdline())]
    except psutil.Error:
        return []


def alive(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.slow
def test_a_killed_workers_shard_kernel_dies_with_it_and_its_games_are_played_once(tmp_path):
    env = {"PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    with FakeOpenAIServer(latency=0.3) as server, dask_cluster(2, tmp_path / "cluster", env=env) as cluster:
        sweep = tmp_path / "kill.yaml"
        sweep.write_text("name: kill\nnotebook: experiments/werewolf.ipynb\nshard_games: 4\n"
                         "parameters: {n_games: 8, seed: 0, concurrency: 1}\n"
                         f"grid:\n  seats: [{{Player1: 'openai:ok@{server.base_url}'}}]\n")
        sweeping = subprocess.Popen([sys.executable, "-m", "toolkit", "sweep", str(sweep), "--scheduler",
                                     cluster.address, "--out", str(tmp_path / "results")], cwd=REPO,
                                    env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
        victim = cluster.workers[0].pid
        deadline = time.monotonic() + 240
        while not (kernels(victim) and server.accepted >= 3) and time.monotonic() < deadline:
            time.sleep(0.1)
        (kernel,) = kernels(victim)  # the shard's kernel, playing
        os.killpg(victim, signal.SIGKILL)  # the worker: its nanny and its process
        killed = time.monotonic()
        while alive(kernel) and time.monotonic() - killed < 20:
            time.sleep(0.1)
        lived = time.monotonic() - killed
        out, err = sweeping.communicate(timeout=300)
    assert lived < 10, lived  # ended with its worker (within ipykernel's 1 s watch, on a busy machine)
    assert sweeping.returncode == 0, out[-2000:] + err[-2000:]
    (cell,) = [p for p in (tmp_path / "results" / "kill").iterdir() if p.is_dir() and p.name[0] != "."]
    games = load(cell, complete_games=True).games
    assert sorted(games["seed"]) == list(range(8))  # every game once: the killed shard's played by the other
