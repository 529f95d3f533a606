"""A sweep of 1,000 heuristic games (4 cells × 250, two workers): peak memory of the whole process
tree (sweep, workers, kernels), and the time ``toolkit.results.load`` takes over its results.

    python benchmarks/sweep_memory.py [GAMES_PER_CELL]
"""

import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from toolkit.results import load
from toolkit.sweep import run_sweep
from toolkit.agent.terminal import descendants


def tree_rss_mb(pid: int) -> float:
    total = 0
    for p in [pid, *descendants(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def main(per_cell: int) -> None:
    peak = [0.0]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], tree_rss_mb(os.getpid()))
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
        print(f"games: {len(tables.games)} in {len(summary)} cells ({int(summary['ok'].sum())} ok); sweep wall {wall:.1f} s")
        print(f"peak memory of the process tree: {peak[0]:.0f} MB")
        print(f"toolkit.results.load: {load_s:.2f} s for {len(tables.calls)} calls, {len(tables.events)} events")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 250)
