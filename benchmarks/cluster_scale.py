"""A study across processes (issue 48): one cell of offline games on a Dask cluster started the documented way
(``dask scheduler`` and ``dask worker --nthreads 1`` processes, ``toolkit.testing.dask_cluster``), old beside new
in one run, and an adaptive tournament on the cluster against the same tournament in one process.

    python benchmarks/cluster_scale.py [--games 1000] [--old /tmp/old-51c499d] [--skip-old] [--skip-adaptive]
                                       [--control N]

For the cell: wall-clock games/s of the whole sweep command (start to summary, kernels included) on one worker and
on two, and the peak memory of each worker (the RSS of its processes: nanny, worker and the papermill kernels it
runs, summed, sampled every 0.2 s), the CPU seconds each worker used, the cores the workers used together (their CPU
seconds over the wall clock: what a machine shared with other work gave them), of those the papermill kernels' CPU
seconds (the games; the rest is Dask's nanny and worker processes and papermill in them), the seconds from the sweep
command's start to its first shard's start, the tail (seconds the worker that finished first stood idle while
another played its last shard), the load average, at ``--games`` and at half of it (flat in the number of games: the
same peak). The old code (51c499d: ``git worktree add /tmp/old-51c499d 51c499d``) runs the cell on one worker of the
two, whatever the cluster (its unit of work is the cell). For the adaptive tournament: the games played, why it
stopped and the comparisons table in one process and with its rounds' batches on two workers (the same seeds: the
same decision, or the script says so).

``--control N``: what the machine gives two processes at this load, without Dask, papermill or kernels: a cell of
N heuristic games played in a Python process of its own (``play_werewolf_cell``), one process alone and then two
at once; their games/s ratio is the most any 2-worker figure could reach here, and their CPU seconds say whether
a game costs more CPU with two running.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd
import psutil
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from toolkit.testing.dask_cluster import dask_cluster  # noqa: E402


class Peak(threading.Thread):
    """The peak RSS (MB) of each worker's processes (the ``dask worker`` process and all its descendants), the
    CPU seconds they used (their own and their ended children's: the kernels of the shards they ran), and of
    those the CPU seconds of the papermill kernels alone (each kernel's last sample: all but its last 0.2 s)."""

    def __init__(self, pids: list[int]):
        super().__init__(daemon=True)
        self.pids, self.stop = pids, threading.Event()
        self.peak, self.cpu = [0.0] * len(pids), [0.0] * len(pids)
        self.kernels: dict[int, float] = {}

    def run(self) -> None:
        while not self.stop.is_set():
            for i, pid in enumerate(self.pids):
                try:
                    root = psutil.Process(pid)
                    tree = [root, *root.children(recursive=True)]
                    rss = sum(p.memory_info().rss for p in tree)
                    cpu = sum(sum(p.cpu_times()[:4]) for p in tree)
                    for p in tree[1:]:
                        if "ipykernel" in " ".join(p.cmdline()):
                            self.kernels[p.pid] = sum(p.cpu_times()[:2])
                except psutil.Error:
                    continue
                self.peak[i], self.cpu[i] = max(self.peak[i], rss / 1e6), max(self.cpu[i], cpu)
            time.sleep(0.2)


def shard_times(results: Path, started: float) -> dict:
    """When the shards ran, from their folders (``STARTED`` written as each starts, ``DONE.json``'s wall time):
    seconds from the sweep command's start to the first shard's start, and the tail: from the end of the worker
    whose last shard ended first to the end of the last shard (a worker idle while the other plays on)."""
    ends: dict[str, float] = {}
    first = None
    for done in results.glob("*/*/shards/*/DONE.json"):
        status = json.loads(done.read_text())
        start = (done.parent / "STARTED").stat().st_mtime - started
        first = start if first is None else min(first, start)
        ends[status["where"]] = max(ends.get(status["where"], 0.0), start + status["wall_s"])
    if first is None:
        return {"first_shard_s": None, "tail_s": None}
    return {"first_shard_s": round(first, 1), "tail_s": round(max(ends.values()) - min(ends.values()), 1)}


def sweep_file(folder: Path, games: int, shard: int | None) -> Path:
    path = folder / f"cell{games}.yaml"
    spec = {"name": f"cell{games}", "notebook": "experiments/werewolf.ipynb",
            "parameters": {"n_games": games, "seed": 0}, "grid": {"model": ["heuristic"]}}
    if shard:
        spec["shard_games"] = shard
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def one_cell(code: Path, workers: int, games: int, shard: int | None, folder: Path) -> dict:
    """The sweep of one cell of ``games`` heuristic games on a fresh cluster of ``workers`` workers running
    ``code``; its wall time and each worker's peak memory."""
    env = {"PYTHONPATH": str(code), "OMP_NUM_THREADS": "1"}
    out = folder / f"{code.name}-{workers}w-{games}"
    path = sweep_file(folder, games, shard)
    with dask_cluster(workers, out / "cluster", env=env) as cluster:
        peak = Peak([w.pid for w in cluster.workers])
        peak.start()
        args = [sys.executable, "-m", "toolkit", "sweep", str(path), "--executor", "dask", "--scheduler",
                cluster.address, "--out", str(out / "results")]
        load, started, epoch = os.getloadavg()[0], time.perf_counter(), time.time()
        done = subprocess.run(args, cwd=code, env={**os.environ, **env}, capture_output=True, text=True)
        wall = time.perf_counter() - started
        peak.stop.set()
        peak.join()
        load = (load + os.getloadavg()[0]) / 2
    if done.returncode != 0:
        raise SystemExit(f"{code}: sweep failed: {done.stderr[-1500:]}")
    summary = pd.read_parquet(out / "results" / f"cell{games}" / "summary.parquet")
    assert int(summary["games"].iloc[0]) == games, summary
    return {"code": code.name, "workers": workers, "games": games, "wall_s": round(wall, 1),
            "games_per_s": round(games / wall, 2), "peak_mb_per_worker": [round(p) for p in peak.peak],
            "worker_cpu_s": [round(c) for c in peak.cpu], "cores_used": round(sum(peak.cpu) / wall, 2),
            "kernel_cpu_s": round(sum(peak.kernels.values())), "load_avg": round(load, 1),
            **shard_times(out / "results", epoch)}


CONTROL = """
import json, resource, sys, time
from toolkit.study.experiments import play_werewolf_cell
play_werewolf_cell(sys.argv[1], n_games=int(sys.argv[2]), model="heuristic", seed=0, progress=False)
used = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps(round(used.ru_utime + used.ru_stime, 1)))
"""


def control(folder: Path, games: int, processes: int) -> dict:
    """``processes`` processes at once, each playing a fresh cell (a new folder) of ``games`` heuristic games
    in-process."""
    folder = Path(tempfile.mkdtemp(dir=folder))
    load, started = os.getloadavg()[0], time.perf_counter()
    running = [subprocess.Popen([sys.executable, "-c", CONTROL, str(folder / f"cell{i}"), str(games)],
                                stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
               for i in range(processes)]
    cpu = [float(p.communicate()[0].strip().splitlines()[-1]) for p in running]
    wall = time.perf_counter() - started
    return {"processes": processes, "games_each": games, "wall_s": round(wall, 1),
            "games_per_s": round(processes * games / wall, 2), "cpu_s_each": cpu,
            "cores_used": round(sum(cpu) / wall, 2), "load_avg": round((load + os.getloadavg()[0]) / 2, 1)}


def adaptive(folder: Path, scheduler: str | None) -> tuple[object, float]:
    from toolkit.study import adaptive as AD

    spec = {"name": "ad", "models": ["heuristic", "random", "chaos:0"], "presets": ["classic7"],
            "design": "adaptive", "min_difference": 1.0, "seed": 11, "concurrency": 4}
    path = folder / "ad.yaml"
    path.write_text(yaml.safe_dump(spec))
    started = time.perf_counter()
    status = AD.run_adaptive(path, results_root=folder / ("cluster" if scheduler else "one"), progress=False,
                             scheduler=scheduler, executor="dask" if scheduler else "local")
    return status, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--shards", type=int, default=4, help="shards of the cell (new code)")
    parser.add_argument("--old", default="/tmp/old-51c499d")
    parser.add_argument("--skip-old", action="store_true")
    parser.add_argument("--skip-adaptive", action="store_true")
    parser.add_argument("--skip-half", action="store_true", help="no run at half the games")
    parser.add_argument("--control", type=int, default=0, metavar="N",
                        help="also N games in-process in one process, then in two at once (the machine's share)")
    args = parser.parse_args()
    n, shard = args.games, -(-args.games // args.shards)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if not args.skip_old:
            rows.append(one_cell(Path(args.old), 2, n, None, tmp))
            print(rows[-1], flush=True)
        for workers, games in ((1, n), (2, n), *([] if args.skip_half else [(2, n // 2)])):
            rows.append(one_cell(REPO, workers, games, shard, tmp))
            print(rows[-1], flush=True)
        table = pd.DataFrame(rows)
        one = table[(table["code"] == REPO.name) & (table["workers"] == 1)]["games_per_s"].iloc[0]
        table["vs_one_worker"] = (table["games_per_s"] / one).round(2)
        print(f"\nOne cell of heuristic games (new: shards of {shard} games), the sweep command's wall clock:")
        print(table.to_string(index=False))
        if args.control:
            runs = pd.DataFrame([control(tmp, args.control, k) for k in (1, 2, 1)])
            runs["vs_one_process"] = (runs["games_per_s"] / runs["games_per_s"].iloc[[0, 2]].mean()).round(2)
            print("\nThe machine's share (no Dask, papermill or kernels): games in-process, one process, two at once:")
            print(runs.to_string(index=False))
        if args.skip_adaptive:
            return
        one_proc, t1 = adaptive(tmp, None)
        with dask_cluster(2, tmp / "adcluster", env={"PYTHONPATH": str(REPO)}) as cluster:
            on_cluster, t2 = adaptive(tmp, cluster.address)
        same = (one_proc.coordinator.table().equals(on_cluster.coordinator.table())
                and one_proc.games == on_cluster.games)
        print("\nAn adaptive tournament (heuristic, random, chaos:0 on classic7, seed 11):")
        for name, s, t in (("one process", one_proc, t1), ("2 Dask workers", on_cluster, t2)):
            print(f"  {name}: {s.games} games in {s.coordinator.rounds} rounds, {t:.0f} s; stopped: {s.stopped}")
        print(on_cluster.coordinator.table().to_string(index=False))
        print(f"  the same games and decisions in both: {same}")


if __name__ == "__main__":
    main()
