"""A werewolf cell's kernel, phase by phase: what experiments/werewolf.ipynb runs (play the cell's games, then
summarise them as its cells do: ``cell_summary``, the win rates, the costs per game and the two plots), in one
process of its own per cell, printing after each phase the process's peak memory (``VmHWM``: its high-water
mark, not a sample) and its CPU; the code at an old revision (checked out by this run as a git worktree in a
temporary folder) beside today's.

- ``play``: ``play_werewolf_cell`` of N heuristic classic7 games (every call logged), today's code;
- ``summary``: the notebook's summary in the same process, after the play; the peak printed is the whole
  process's so far (play and summary: the kernel's peak);
- the old revision summarises the same played folder in a process of its own (``--old-play`` makes it play its
  own games first: the same games, the play's code unchanged since, and as much CPU again); with ``--cell DIR``
  no game is played and both summarise DIR (a copied study, ``benchmarks/copy_study.py``).

Not the Jupyter kernel itself: papermill's kernel (ipykernel, zmq) adds its own imports, the same for both.

    python benchmarks/cell_kernel.py [--games 1000,5000] [--against f803ca9] [--old-play] [--no-old] [--keep DIR]
    python benchmarks/cell_kernel.py --cell DIR [--against f803ca9]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from study_scale import old_checkout  # noqa: E402

KERNEL = """
import os, sys, time, warnings
warnings.simplefilter("ignore")
import matplotlib
matplotlib.use("Agg")
folder, n = sys.argv[1], int(sys.argv[2])

def phase(name):
    peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) / 1024
    t = os.times()
    print(f"{name:8s} peak {peak:6.0f} MB  cpu {t.user + t.system:7.1f} s", flush=True)

from toolkit.study.experiments import cell_summary, play_werewolf_cell
phase("imports")
if n:
    play_werewolf_cell(folder, n_games=n, seed=0, model="heuristic", concurrency=16)
    phase("play")
summary = cell_summary(folder)
from toolkit import analysis
from toolkit.analysis import plots
win, costs = analysis.win_rates(summary.games), analysis.per_game_costs(summary.games)
plots.plot_win_rates(summary.games)
if hasattr(summary, "votes"):
    votes = summary.vote_accuracy
    plots.plot_vote_accuracy_by_day(counts=summary.votes)
else:  # the old summary: a row per ballot
    votes = analysis.ballot_accuracy(summary.ballots, ["round", "day"])
    plots.plot_vote_accuracy_by_day(ballots=summary.ballots)
phase("summary")
print("numbers", len(summary.games), "games", round(float(win["rate"].iloc[0]), 9),
      [round(r, 9) for r in votes["rate"]], [round(r, 9) for r in votes["ci_low"]], flush=True)
"""


def kernel(root: Path, folder: Path, n: int, label: str) -> str | None:
    """Run the kernel's code at ``root``; print its lines; return its numbers' line."""
    env = {**os.environ, "PYTHONPATH": str(root), "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, "-c", KERNEL, str(folder), str(n)], cwd=root, env=env,
                          capture_output=True, text=True)
    numbers = None
    for line in proc.stdout.splitlines():
        if line.startswith("numbers"):
            numbers = line
        else:
            print(f"{label:8s} {n or '-':>7} {line}", flush=True)
    if proc.returncode:
        print(f"{label:8s} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1][:300]}", flush=True)
    return numbers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default="1000,5000", help="cell sizes to play, e.g. 1000,5000,10000")
    parser.add_argument("--against", default="f803ca9", help="the old revision")
    parser.add_argument("--old-play", action="store_true", help="the old revision plays its own games too")
    parser.add_argument("--cell", metavar="DIR", help="summarise this results folder (no play), old and new")
    parser.add_argument("--no-old", action="store_true", help="today's code only")
    parser.add_argument("--keep", metavar="DIR", help="keep the played cells here (default: a temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        old = old_checkout(args.against, Path(tmp) / "old")
        base = Path(args.keep or tmp)
        try:
            for n in [0] if args.cell else [int(x) for x in args.games.split(",") if x]:
                folder = Path(args.cell) if args.cell else base / f"cell-{n}"
                seen = {"new": kernel(ROOT, folder, n, "new")}
                if args.no_old:
                    continue
                if args.old_play and n:
                    seen["old"] = kernel(old, base / f"old-cell-{n}", n, args.against)
                else:
                    seen["old"] = kernel(old, folder, 0, args.against)
                print(seen["new"], "\n" + ("same numbers" if seen["new"] == seen["old"] else
                                            f"THE NUMBERS DIFFER: {seen['old']}"), flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], capture_output=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
