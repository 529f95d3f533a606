"""A sweep of 1,000 heuristic games (4 cells × 250, two workers): peak memory of the whole process
tree (sweep, workers, kernels), and the time ``toolkit.record.load.load`` takes over its results.

    python benchmarks/sweep_memory.py [GAMES_PER_CELL]
"""

import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from toolkit.record.load import load
from toolkit.study.sweep import run_sweep
from toolkit.agent.tools.terminal import descendants


def tree_memory_mb(pid: int) -> tuple[float, float]:
    """(PSS, RSS) of a process and all its descendants, in MB. PSS splits pages shared between
    processes (forked workers share most of theirs) so the sum is the tree's real footprint; the RSS
    sum counts every shared page once per process, an upper bound."""
    pss = rss = 0
    for p in [pid, *descendants(pid)]:
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1])
                elif line.startswith("Rss:"):
                    rss += int(line.split()[1])
        except OSError:
            continue
    return pss / 1024, rss / 1024


def main(per_cell: int) -> None:
    peak = [0.0, 0.0]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            pss, rss = tree_memory_mb(os.getpid())
            peak[0], peak[1] = max(peak[0], pss), max(peak[1], rss)
            time.sleep(0.1)

    with tempfile.TemporaryDirectory() as tmp:
        sweep = Path(tmp) / "mem.yaml"
        sweep.write_text(f"name: mem\nnotebook: experiments/werewolf.ipynb\nparameters: {{n_games: {per_cell}}}\n"
                         "grid:\n  wolf_model: [heuristic, random]\n  village_model: [heuristic, random]\n")
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        t0 = time.perf_counter()
        summary = run_sweep(sweep, workers=2, results_root=tmp, progress=False)
        wall = time.perf_counter() - t0
        stop.set()
        watcher.join()
        t1 = time.perf_counter()
        tables = load(Path(tmp) / "mem", complete_games=True)
        load_s = time.perf_counter() - t1
        print(f"games: {len(tables.games)} in {len(summary)} cells ({int(summary['ok'].sum())} ok); "
              f"sweep wall {wall:.1f} s")
        print(f"peak memory of the process tree: {peak[0]:.0f} MB PSS (RSS summed over processes, "
              f"shared pages counted in each: {peak[1]:.0f} MB)")
        print(f"toolkit.record.load.load: {load_s:.2f} s for {len(tables.calls)} calls, {len(tables.events)} events")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 250)
