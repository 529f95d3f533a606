"""32 concurrent classic7 games against a loopback OpenAI-compatible server that takes 200 ms per call.

Prints the wall time, the critical-path lower bound (the longest game's chain of calls that had to wait
for one another, times the latency) and their ratio bound / wall (1.0 = nothing waited needlessly).

    python benchmarks/werewolf_concurrency.py [GAMES] [LATENCY_S]
"""

import asyncio
import sys
import tempfile
import time

from toolkit.testing.loopback_server import serve_in_subprocess
from toolkit.llm import get_model
from toolkit.record.run_log import Run
from toolkit.werewolf.game import GameConfig, play_games


def main(games: int, latency: float) -> None:
    server, base_url = serve_in_subprocess()
    try:
        spec = f"openai:slow:{latency}@{base_url}"
        # One endpoint, capped high enough for every seat of every game to be waiting at once.
        models = {spec: get_model(spec, max_connections=games * 9, timeout_s=30)}
        with tempfile.TemporaryDirectory() as tmp, Run(tmp, "concurrency") as run:
            t0 = time.perf_counter()
            results = asyncio.run(play_games([GameConfig(seed=s, model=spec) for s in range(games)], run,
                                             concurrency=games, models=models))
            wall = time.perf_counter() - t0
    finally:
        server.terminate()
    bound = max(r.critical_path_calls for r in results) * latency
    calls = sum(r.log.calls for r in results)
    print(f"games: {games}, calls: {calls}, latency per call: {latency * 1000:.0f} ms, "
          f"fallbacks: {sum(r.log.fallbacks for r in results)}, winners: "
          f"{sorted({r.winner for r in results})}")
    print(f"wall time: {wall:.2f} s")
    print(f"critical-path lower bound: {bound:.2f} s")
    print(f"ratio bound/wall: {bound / wall:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 32, float(sys.argv[2]) if len(sys.argv) > 2 else 0.2)
