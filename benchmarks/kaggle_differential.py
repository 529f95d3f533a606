"""The differential run at scale: N seeded games played by Kaggle's werewolf engine (kaggle-environments 1.33.2)
with its random agent (or the harness's abstaining agent), cycling through the rule settings of
toolkit/werewolf/kaggle/harness.py (CONFIGS), each
one's decisions played through this engine with the preset its configuration means; prints the count of games
with identical eliminations, winner and final day, and every divergence or unsupported game. The suite's
tests/werewolf/test_kaggle_differential.py does the same on 200 games; docs/werewolf.md ("The rules card")
quotes this script's count.

    python benchmarks/kaggle_differential.py [--games 2000] [--processes 2] [--first-seed 0] [--save DIR]
        [--settings bidturn7,bidname6,...]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolkit.werewolf.kaggle import differential, harness, replay  # noqa: E402


def _play(job: tuple[str, int]) -> tuple[str, int, dict]:
    return job[0], job[1], harness.play(*job)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--save", type=Path, help="write each diverging replay here")
    parser.add_argument("--settings", help="comma-separated names of harness.CONFIGS to cycle (default: all)")
    args = parser.parse_args()
    names = args.settings.split(",") if args.settings else list(harness.CONFIGS)
    unknown = [n for n in names if n not in harness.CONFIGS]
    if unknown:
        print(f"error: no setting {', '.join(unknown)}; settings are {', '.join(harness.CONFIGS)}", file=sys.stderr)
        return 2
    jobs = [(names[i % len(names)], args.first_seed + i // len(names)) for i in range(args.games)]
    counts: Counter[str] = Counter()
    per_setting: Counter[tuple[str, str]] = Counter()
    start = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.processes) as pool:
        for name, seed, rep in pool.imap_unordered(_play, jobs, chunksize=8):
            try:
                kg = replay.read(rep)
                if kg.winner is None:
                    raise replay.Unsupported("the Kaggle game did not finish")
                differential.compare(kg)
                result = "identical"
            except replay.Unsupported as err:
                result = "unsupported"
                print(f"unsupported  {name} seed {seed}: {err}")
            except differential.Divergence as err:
                result = "diverged"
                print(f"DIVERGED     {name} seed {seed}: {err}")
                if args.save:
                    args.save.mkdir(parents=True, exist_ok=True)
                    (args.save / f"{name}-{seed}.json").write_text(json.dumps(rep))
            counts[result] += 1
            per_setting[(name, result)] += 1
            done = sum(counts.values())
            if done % 100 == 0:
                print(f"... {done} games: identical {counts['identical']}, diverged {counts['diverged']}, "
                      f"unsupported {counts['unsupported']} ({time.perf_counter() - start:.0f} s)", flush=True)
    wall = time.perf_counter() - start
    print(f"{args.games} Kaggle games in {wall:.0f} s ({args.processes} processes)")
    for name in names:
        row = ", ".join(f"{r} {per_setting[(name, r)]}" for r in ("identical", "diverged", "unsupported"))
        print(f"  {name:14s} {row}")
    print(f"identical {counts['identical']} / {args.games}, diverged {counts['diverged']}, "
          f"unsupported {counts['unsupported']}")
    return 1 if counts["diverged"] else 0


if __name__ == "__main__":
    sys.exit(main())
