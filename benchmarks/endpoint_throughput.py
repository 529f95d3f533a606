"""Throughput to the endpoint's limit (issue 42): N classic7 games at once (every seat ``openai:det`` on the
loopback server) against an endpoint that takes LATENCY seconds an answer and allows as many requests in flight
as come, old (51c499d, from a worktree of it) beside new, each in a process of its own.

For each number of games and latency, one line per code: games/hour, the one-wave ideal (every game started at
once and none waiting for anything but its own calls, so the wave ends when its longest game does: games × 3600 /
(the longest critical path of the games - a game's longest chain of calls one after another - × the latency)) and
the share of it reached; beside it the mean-path bound (the same with the games' mean critical path: what a stream
of games, each replaced as it ends, could reach; no single wave can, since its games differ in length), the
requests in flight (the mean of samples taken twice a second while playing - a probe every 50 ms, as until
session 19, woke the process 20 times a second and its CPU counted as the client's: ~0.35 wake-ups a call at 64 games
and 1 s - and the peak the endpoint's gate saw), and the client's CPU per model call (the process's user + system
CPU over the games, divided by the calls: prompt rendering, the HTTP client, parsing, the rows written; after one
warm-up game that is not counted, so that the process's imports, the templates' compilation and the first connections,
paid once per process whatever the study's size, are not spread over these calls). The new code's process sets
its garbage collector after the warm-up as the tournament command does
(``toolkit.core.collector``; ``--gc-defaults`` adds a line with Python's defaults, what a notebook gets). The
server runs in a process of its own. (``endpoint_concurrency.py`` compares the gates of two sessions before,
against an endpoint with a capacity, in one process.)

    python benchmarks/endpoint_throughput.py [--old /tmp/old-51c499d] [--games 64,256] [--latencies 1.0,0.2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from toolkit.testing.loopback_server import serve_in_subprocess

ROOT = Path(__file__).resolve().parents[1]
WORKER = """
import asyncio, json, os, statistics, sys, tempfile, time
from toolkit.llm import get_model
from toolkit.record.run_log import Run
from toolkit.werewolf.game import GameConfig, GameRunner

url, games = sys.argv[1], int(sys.argv[2])
spec = f"openai:det@{url}"

async def warm_up(run):
    # one game first, not counted: the process's imports, the templates' compilation, the first connections
    model = get_model(spec, timeout_s=120, max_attempts=20, max_total_wait_s=600)
    await GameRunner(GameConfig(seed=10**6, model=spec), run, {spec: model}).play()
    return model

async def study(run, model):
    models = {spec: model}
    samples, runners = [], [GameRunner(GameConfig(seed=s, model=spec), run, models) for s in range(games)]
    async def sample():  # twice a second: the probe wakes the process, and its CPU counts as the client's
        from toolkit.llm.gate import stats
        while True:
            samples.append(sum(g["in_flight"] for g in stats().values()))
            await asyncio.sleep(0.5)
    sampler = asyncio.create_task(sample())
    results = await asyncio.gather(*(r.play() for r in runners))
    sampler.cancel()
    return results, samples

with tempfile.TemporaryDirectory() as folder, Run(folder, "throughput") as run:
    loop = asyncio.new_event_loop()
    model = loop.run_until_complete(warm_up(run))
    try:  # the collector as the tournament command sets it; 51c499d has none (defaults)
        from toolkit.core.collector import for_many_games
    except ImportError:
        for_many_games = None
    if for_many_games is not None and os.environ.get("THROUGHPUT_GC") != "defaults":
        for_many_games()
    cpu0, t0 = os.times(), time.perf_counter()
    results, samples = loop.run_until_complete(study(run, model))
    wall, cpu1 = time.perf_counter() - t0, os.times()
    loop.close()
from toolkit.llm.gate import stats
calls = sum(r.log.calls for r in results)
print(json.dumps({"wall": wall, "cpu": (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system), "calls": calls,
                  "games": len(results), "errors": sum(r.winner in ("error", "unfinished") for r in results),
                  "critical": statistics.fmean(r.critical_path_calls for r in results),
                  "longest": max(r.critical_path_calls for r in results),
                  "mean_in_flight": statistics.fmean(samples) if samples else 0,
                  "peak": sum(g["peak"] for g in stats().values())}))
"""


def play(code: Path, url: str, games: int, gc_defaults: bool = False) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code), "THROUGHPUT_GC": "defaults" if gc_defaults else "set"}
    env.pop("TOOLKIT_SHARED_LIMITS", None)
    out = subprocess.run([sys.executable, "-c", WORKER, url, str(games)], env=env, cwd=code, capture_output=True,
                         text=True, timeout=7200)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default="/tmp/old-51c499d", help="a checkout of 51c499d (git worktree add)")
    parser.add_argument("--games", default="64,256", help="games at once, comma-separated")
    parser.add_argument("--latencies", default="1.0,0.2", help="seconds an answer, comma-separated")
    parser.add_argument("--gc-defaults", action="store_true",
                        help="also the new code with Python's collector defaults (what a notebook gets)")
    args = parser.parse_args()
    codes = [("old 51c499d", Path(args.old), False), ("new", ROOT, False)]
    codes += [("new, gc dflt", ROOT, True)] if args.gc_defaults else []
    print(f"classic7 games, every seat openai:det on the loopback server (its own process); load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the start")
    print(f"{'games':>5} {'latency':>7}  {'code':<12} {'games/h':>8} {'ideal/h':>8} {'of ideal':>8} "
          f"{'mean-path/h':>11} {'of it':>5} {'in flight':>9} {'peak':>5} {'calls':>6} "
          f"{'CPU ms/call':>11} {'wall s':>6}")
    for games in (int(x) for x in args.games.split(",")):
        for latency in (float(x) for x in args.latencies.split(",")):
            for name, code, gc_defaults in codes:
                if not (code / "toolkit").is_dir():
                    print(f"{games:>5} {latency:>6g}s  {name:<12} (no checkout: git worktree add {code} 51c499d)")
                    continue
                proc, url = serve_in_subprocess(seed=0, latency=latency)
                try:
                    r = play(code, url, games, gc_defaults)
                finally:
                    proc.terminate()
                    proc.wait(10)
                per_hour = r["games"] / r["wall"] * 3600
                ideal = games * 3600 / (r["longest"] * latency)
                stream = games * 3600 / (r["critical"] * latency)
                cpu_ms = r["cpu"] / r["calls"] * 1000
                print(f"{games:>5} {latency:>6g}s  {name:<12} {per_hour:>8.0f} {ideal:>8.0f} {per_hour / ideal:>8.0%} "
                      f"{stream:>11.0f} {per_hour / stream:>5.0%} "
                      f"{r['mean_in_flight']:>9.1f} {r['peak']:>5} {r['calls']:>6} {cpu_ms:>11.2f} "
                      f"{r['wall']:>6.0f}" + (f"  ({r['errors']} games unfinished or error)" if r["errors"] else ""),
                      flush=True)


if __name__ == "__main__":
    main()
