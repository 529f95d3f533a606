"""A werewolf cell's summary (what experiments/werewolf.ipynb shows after its games: win rates, costs per game,
the vote-accuracy plot), old way and new side by side, each in a process of its own: peak memory (the process's
high-water mark) and CPU.

- ``tables``: the old notebook's way, every table but the prompts loaded back (``run_werewolf_cell``'s return)
  and summarised from them;
- ``summary``: ``cell_summary`` (the games' columns and their ballots counted per game and day, a batch of events
  at a time).

Both print the village's win rate and the first-round vote accuracy by day (the same numbers, or the script
says they differ).

    python benchmarks/cell_summary.py [--ways tables,summary] RESULTS_DIR [RESULTS_DIR ...]

(``--ways summary`` alone where the old way would not fit: about 20 GB at 100,000 games.)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from study_scale import ROOT, cpu_of, measure  # noqa: E402

COMMON = """
import sys, warnings
warnings.simplefilter("ignore")
import matplotlib
matplotlib.use("Agg")
from toolkit import analysis as A
from toolkit.analysis import plots as P
from toolkit.record.load import load
from toolkit.study.experiments import WITHOUT_PROMPTS, cell_summary
folder = sys.argv[1]
"""
TABLES = COMMON + """
t = load(folder, complete_games=True, columns=WITHOUT_PROMPTS)
win, costs = A.win_rates(t.games), A.per_game_costs(t.games)
P.plot_win_rates(t.games)
votes = A.vote_accuracy(t.events, t.players, ["round", "day"], games=t.games)
P.plot_vote_accuracy_by_day(t.events, t.players, games=t.games)
print(len(t.games), "games", round(float(win["rate"].iloc[0]), 6), [round(r, 6) for r in votes["rate"]])
"""
SUMMARY = COMMON + """
s = cell_summary(folder)
win, costs = A.win_rates(s.games), A.per_game_costs(s.games)
P.plot_win_rates(s.games)
votes = s.vote_accuracy
P.plot_vote_accuracy_by_day(counts=s.votes)
print(len(s.games), "games", round(float(win["rate"].iloc[0]), 6), [round(r, 6) for r in votes["rate"]])
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", metavar="RESULTS_DIR")
    parser.add_argument("--ways", default="tables,summary", help="which ways to run: tables, summary or both")
    args = parser.parse_args(argv)
    ways = args.ways.split(",")
    for folder in args.folders:
        seen = {}
        for name, code in (("tables", TABLES), ("summary", SUMMARY)):
            if name not in ways:
                continue
            before = os.times()
            r = measure(code, [folder], ROOT)
            r["cpu"] = cpu_of(before)
            seen[name] = r.get("out")
            print(f"{name:8s} {folder}: peak {r['self']:7.0f} MB  cpu {r['cpu']:6.1f} s  wall {r['wall']:6.1f} s  "
                  f"{r.get('error') or r.get('out')}", flush=True)
        if len(seen) == 2:
            print("same numbers" if seen["tables"] == seen["summary"] else "THE NUMBERS DIFFER", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
