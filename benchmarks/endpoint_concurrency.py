"""Concurrency that fits the endpoint: a werewolf study against the loopback server playing a hosted model that
takes LATENCY seconds per answer and allows CAPACITY requests in flight (a 429 with Retry-After beyond it).

Old: at most 8 requests per endpoint per process, fixed (the default before). New: 64, adaptive (a 429 halves the
limit and holds every game of the process for its Retry-After; answers raise it again). For each latency and
each, one line: requests in flight (mean and peak, sampled every 20 ms), the 429s, games/hour, and the ideal
(games at once × 3600 / the games' mean critical path: their longest chain of calls one after another × the
latency), so the distance to the endpoint's limits is a number. ``floor s``: the longest game's critical path ×
the latency, the shortest wall time these games could take at any concurrency.

    python benchmarks/endpoint_concurrency.py [--games 16] [--latencies 0.2,1.0] [--capacity 48]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from toolkit.llm import get_model
from toolkit.llm.gate import gate
from toolkit.testing.loopback_server import serve_in_subprocess
from toolkit.werewolf.game import GameConfig, play_games

SETTINGS = {"old: 8 per endpoint, fixed": {"max_connections": 8, "rate_adaptive": False},
            "new: 64, adaptive": {"max_connections": 64, "rate_adaptive": True}}


async def study(url: str, games: int, options: dict, retry_after_cap: float) -> dict:
    spec = f"openai:det@{url}"
    models = {spec: get_model(spec, retry_after_cap_s=retry_after_cap, max_attempts=20, max_total_wait_s=600,
                              **options)}
    configs = [GameConfig(seed=s, model=spec) for s in range(games)]
    samples: list[int] = []
    endpoint = models[spec].base_url

    async def sample() -> None:
        while True:
            samples.append(gate(endpoint, options["max_connections"], options["rate_adaptive"]).in_flight)
            await asyncio.sleep(0.02)

    sampler = asyncio.create_task(sample())
    started = time.perf_counter()
    results = await play_games(configs, None, concurrency=games, models=models)
    wall = time.perf_counter() - started
    sampler.cancel()
    g = gate(endpoint, options["max_connections"], options["rate_adaptive"])
    return {"wall_s": wall, "games": len(results), "mean_in_flight": statistics.fmean(samples), "peak": g.peak,
            "rate_limited": g.throttled, "critical_path": statistics.fmean(r.critical_path_calls for r in results),
            "longest_path": max(r.critical_path_calls for r in results),
            "errors": sum(r.winner == "error" for r in results)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=16, help="games, all played at once (default 16)")
    parser.add_argument("--latencies", default="0.2,1.0", help="seconds per answer, comma-separated")
    parser.add_argument("--capacity", type=int, default=48, help="requests the endpoint allows in flight")
    args = parser.parse_args()
    print(f"{args.games} werewolf games at once (classic7, every seat openai:det on the loopback server), "
          f"endpoint capacity {args.capacity} in flight (429 + Retry-After: 1 beyond it)")
    print(f"{'latency':>7}  {'setting':<27} {'in flight':>9} {'peak':>5} {'429s':>5} {'wall s':>7} {'floor s':>7} "
          f"{'games/h':>8} {'ideal/h':>8} {'of ideal':>8}")
    for latency in (float(x) for x in args.latencies.split(",")):
        proc, url = serve_in_subprocess(seed=0, latency=latency, capacity=args.capacity, retry_after=1.0)
        try:
            for name, options in SETTINGS.items():
                r = asyncio.run(study(url, args.games, options, retry_after_cap=5.0))
                per_hour = r["games"] / r["wall_s"] * 3600
                ideal = args.games * 3600 / (r["critical_path"] * latency)
                print(f"{latency:>6g}s  {name:<27} {r['mean_in_flight']:>9.1f} {r['peak']:>5} {r['rate_limited']:>5} "
                      f"{r['wall_s']:>7.1f} {r['longest_path'] * latency:>7.1f} {per_hour:>8.0f} {ideal:>8.0f} "
                      f"{per_hour / ideal:>8.0%}"
                      + (f"  ({r['errors']} error games)" if r["errors"] else ""))
        finally:
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    main()
