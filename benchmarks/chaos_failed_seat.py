"""N seeded ``chaos:0.3`` games (default 300, seeds 0..N-1): how many end as an error now and how many the first
failed-seat rule would have ended so (a seat asked at least twice whose every call got no answer), recomputed from
the same games' calls table, side by side. (Issue 42 replaced the failed-seat streak rule: an endpoint's failures
are no seat's decisions and a dead endpoint stops the game, toolkit/llm/health.py; the faults the chaos backend
injects by design stay the model's.)

    python benchmarks/chaos_failed_seat.py [N]
"""

import asyncio
import sys
import tempfile
import time

from toolkit.record.load import load
from toolkit.record.run_log import Run
from toolkit.werewolf.game import GameConfig, play_games


def main(n: int = 300) -> None:
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        with Run(folder) as run:
            results = asyncio.run(play_games([GameConfig(seed=s, model="chaos:0.3") for s in range(n)], run))
        wall = time.perf_counter() - started
        calls = load(folder).calls
    per_seat = calls.assign(no_answer=calls["response_text"].isna()).groupby(["game_id", "seat"])["no_answer"]
    old = per_seat.agg(lambda s: len(s) >= 2 and s.all())
    old_errors = old[old].index.get_level_values("game_id").nunique()
    new_errors = sum(r.winner == "error" for r in results)
    print(f"{n} chaos:0.3 games in {wall:.1f} s")
    print(f"games ended as an error: old rule {old_errors}, new rule {new_errors}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
