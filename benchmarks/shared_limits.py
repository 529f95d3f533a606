"""One limit per endpoint for a whole study (issue 48): four worker processes, each playing classic7 games at once
(every seat ``openai:det`` on the loopback server), against an endpoint that allows RPM requests a minute and
CAPACITY in flight and answers 429 beyond either (``toolkit/testing/loopback_server.py --rpm --capacity``).

Old (51c499d, run from a worktree of it): each process has its own gate (64 in flight, halved on 429s) and
learns the limit by itself. New: the workers share each endpoint's limits (``TOOLKIT_SHARED_LIMITS``), once with
the limits stated in the spec (``?max_connections=CAPACITY&rpm=RPM``), and with no limit stated: learned from the
429s alone, and from the ``x-ratelimit-*`` headers OpenAI sends (the endpoint says its rpm, what remains of it
and when it is whole again, in every answer; the concurrency limit is still learned from 429s).

Printed per setting: requests the endpoint let through per second while all four workers were playing, as a
share of its limit (the rpm, or CAPACITY/LATENCY where that is lower); 429s as a share of the calls answered (each
429 is a call retried); wall time. The workers are processes of their own, as a sweep's are (a sweep's cells
also run a papermill kernel each, which changes nothing at the endpoint).

    python benchmarks/shared_limits.py [--old /tmp/old-51c499d] [--rpm 900] [--capacity 8] [--latency 0.4]
                                       [--games 6] [--workers 4] [--only TEXT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from toolkit.testing.loopback_server import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[1]
WORKER = """
import asyncio, json, sys, tempfile, time
from toolkit.record.run_log import Run
from toolkit.werewolf.game import GameConfig, play_games

spec, games, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with tempfile.TemporaryDirectory() as folder, Run(folder, "worker") as run:
    configs = [GameConfig(seed=seed + s, model=spec) for s in range(games)]
    print("start", time.time(), flush=True)
    results = asyncio.run(play_games(configs, run, concurrency=games))
print(json.dumps({"end": time.time(), "games": len(results), "calls": sum(r.log.calls for r in results)}))
"""


class Counting(FakeOpenAIServer):
    """The loopback server, keeping the time of every request it let through."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.times: list[float] = []
        self.over_rate: list[float] = []  # when a request was refused for the rpm (the rest: for the concurrency)
        self._lock2 = threading.Lock()

    def rate_wait(self, now=None):
        wait = super().rate_wait(now)
        (self.over_rate if wait else self.times).append(time.time())
        return wait


def sweep(args, code: Path, spec_tail: str, shared: bool, headers: bool = False) -> dict:
    server = Counting(latency=args.latency, capacity=args.capacity, retry_after=1.0, rpm=args.rpm,
                      ratelimit_headers=headers).start()
    try:
        spec = f"openai:det@{server.base_url}{spec_tail}"
        with tempfile.TemporaryDirectory() as limits:
            env = {**os.environ, "PYTHONPATH": str(code)}
            env.pop("TOOLKIT_SHARED_LIMITS", None)
            if shared:
                env["TOOLKIT_SHARED_LIMITS"] = limits
            started = time.time()
            procs = [subprocess.Popen([sys.executable, "-c", WORKER, spec, str(args.games), str(100 * w)], env=env,
                                      cwd=code, stdout=subprocess.PIPE, text=True) for w in range(args.workers)]
            outs = [p.communicate(timeout=3600)[0].splitlines() for p in procs]
        wall = time.time() - started
    finally:
        server.stop()
    starts = [float(o[0].split()[1]) for o in outs]
    done = [json.loads(o[-1]) for o in outs]
    first_end = min(d["end"] for d in done)
    window = [t for t in server.times if t <= first_end]  # while every worker was still playing
    span = first_end - max(min(window), max(starts))
    rate = sum(1 for t in window if t >= first_end - span) / span
    limit = min(args.rpm / 60, args.capacity / args.latency)
    calls = sum(d["calls"] for d in done)
    return {"rate": rate, "used": rate / limit, "limited": server.rejected, "calls": calls,
            "retried": server.rejected / calls, "wall": wall, "games": sum(d["games"] for d in done),
            "peak": server.max_active, "over_rate": len(server.over_rate), "began": started,
            "first_429s": [round(t - started, 1) for t in sorted(server.over_rate)][:8]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default="/tmp/old-51c499d", help="a checkout of 51c499d (git worktree add)")
    parser.add_argument("--rpm", type=float, default=900, help="requests a minute the endpoint allows")
    parser.add_argument("--capacity", type=int, default=8, help="requests in flight the endpoint allows")
    parser.add_argument("--latency", type=float, default=0.4, help="seconds per answer")
    parser.add_argument("--games", type=int, default=6, help="games per worker, all at once")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--only", help="the settings whose name holds this (e.g. headers)")
    args = parser.parse_args()
    limit = min(args.rpm / 60, args.capacity / args.latency)
    print(f"{args.workers} workers x {args.games} classic7 games at once; endpoint: {args.rpm:g} requests/min, "
          f"{args.capacity} in flight, {args.latency:g} s an answer, 429 beyond (limit {limit:.1f} requests/s)")
    settings = [("old 51c499d: a gate per process", Path(args.old), f"?max_connections={args.capacity}", False, False),
                ("new: shared, limits in the spec", ROOT, f"?max_connections={args.capacity}&rpm={args.rpm:g}", True,
                 False),
                ("new: shared, learned from 429s", ROOT, "", True, False),
                ("new: shared, learned from headers", ROOT, "", True, True)]
    if args.only:
        settings = [s for s in settings if args.only in s[0]]
    print(f"{'setting':<34} {'req/s':>6} {'of limit':>8} {'429s':>5} {'of rpm':>6} {'calls':>6} {'retried':>7} "
          f"{'peak':>5} {'games':>5} {'wall s':>6}")
    for name, code, tail, shared, headers in settings:
        if not (code / "toolkit").is_dir():
            print(f"{name:<34} (no checkout at {code}: git worktree add {code} 51c499d)")
            continue
        r = sweep(args, code, tail, shared, headers)
        print(f"{name:<34} {r['rate']:>6.1f} {r['used']:>8.0%} {r['limited']:>5} {r['over_rate']:>6} {r['calls']:>6} "
              f"{r['retried']:>7.1%} {r['peak']:>5} {r['games']:>5} {r['wall']:>6.0f}")


if __name__ == "__main__":
    main()
