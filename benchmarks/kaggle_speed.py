"""The same rules in both engines, one run, one process each, side by side: N seeded games of Kaggle's 7-seat
default with its random agent in Kaggle's engine (kaggle-environments 1.33.2, as shipped; and with two costs of its
runner skipped, toolkit/werewolf/kaggle/harness.py), and N games of the matching preset (kaggle7) with
this toolkit's random model, full prompt rendering and every table written. Prints games/s of each and the ratio
(target: this engine >= 5x Kaggle's as shipped).

    python benchmarks/kaggle_speed.py [N]     (default 100)
"""

from __future__ import annotations

import asyncio
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolkit.record.run_log import Run  # noqa: E402
from toolkit.werewolf.game import GameConfig, play_games  # noqa: E402
from toolkit.werewolf.kaggle import harness  # noqa: E402


def kaggle_games(n: int, fast: bool) -> float:
    """Wall seconds for n Kaggle games in this (fresh) process."""
    harness.play("default7", 10_000, fast)  # imports and first-use costs out of the timing
    start = time.perf_counter()
    for seed in range(n):
        harness.play("default7", seed, fast)
    return time.perf_counter() - start


def toolkit_games(n: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        with Run(tmp, "bench") as run:
            asyncio.run(play_games([GameConfig(preset="kaggle7", seed=10_000, model="random")], run))
        with Run(tmp, "bench") as run:
            start = time.perf_counter()
            asyncio.run(play_games([GameConfig(preset="kaggle7", seed=s, model="random") for s in range(n)], run))
        return time.perf_counter() - start


def main(n: int) -> None:
    ctx = multiprocessing.get_context("spawn")  # each Kaggle timing in a fresh process: the patch stays out
    with ctx.Pool(1) as pool:
        shipped = pool.apply(kaggle_games, (n, False))
    with ctx.Pool(1) as pool:
        fast = pool.apply(kaggle_games, (n, True))
    ours = toolkit_games(n)
    print(f"{n} games of Kaggle's 7-seat default, random agents, one process each")
    print(f"  Kaggle engine, as shipped           {n / shipped:7.2f} games/s  ({shipped / n * 1000:.0f} ms/game)")
    print(f"  Kaggle engine, runner costs skipped{n / fast:7.2f} games/s  ({fast / n * 1000:.0f} ms/game)")
    print(f"  this engine (kaggle7), all tables   {n / ours:7.2f} games/s  ({ours / n * 1000:.0f} ms/game)")
    print(f"  ratio this/Kaggle as shipped {shipped / ours:.1f}x (target >= 5x); "
          f"this/Kaggle with runner costs skipped {fast / ours:.1f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
