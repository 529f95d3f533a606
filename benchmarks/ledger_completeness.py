"""Ledger completeness: for every call of seeded games, is every public event before it in its prompt?

Plays GAMES seeded games per preset (classic7, standard9) and per player model (random, heuristic,
chaos:0.3; reflection on, so reflection prompts are checked too). Each prompt is read back by
``tests/werewolf/completeness.py`` (a test oracle: it parses the rendered text, not the observation) and every public
event so far must be in it: deaths with their night, every vote of every round (revotes marked), ties,
eliminations, last words, claims, and every day speech either quoted or counted in an "omitted" note.
Prints completeness per cell (target 100%) and the mean/max prompt size.

    python benchmarks/ledger_completeness.py [GAMES]      # default 500
"""

import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: the oracle is in tests/
from tests.werewolf.ledger_check import check_games, new_stats  # noqa: E402
from toolkit.werewolf.game import GameConfig

METAGPT_MEAN = 11453


def main(games: int) -> int:
    worst = 1.0
    for preset in ("classic7", "standard9"):
        for model in ("random", "heuristic", "chaos:0.3"):
            t0 = time.perf_counter()
            stats = asyncio.run(check_games([GameConfig(preset=preset, seed=s, model=model, reflection=True)
                                             for s in range(games)], new_stats()))
            facts, gaps = stats["facts"], stats["missing"]
            share = 1 - gaps / facts if facts else 1.0
            worst = min(worst, share)
            print(f"{preset:9s} {model:9s} games={stats['games']} calls={stats['calls']} "
                  f"public facts checked={facts} missing={gaps} completeness={share:.4%} "
                  f"complete calls={stats['complete_calls'] / stats['calls']:.2%} "
                  f"calls with condensed days={stats['condensed_calls']} "
                  f"prompt chars mean={statistics.mean(stats['chars']):.0f} max={max(stats['chars'])} "
                  f"({time.perf_counter() - t0:.0f}s)")
            for example in stats["examples"]:
                print("   missing:", example)
    print(f"lowest completeness: {worst:.4%}")
    return 0 if worst == 1.0 else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 500))
