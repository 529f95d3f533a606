"""Issue 42, points 1-4: what a failing endpoint does to a game, old (51c499d) beside new in one run, against the
loopback server (toolkit/testing/loopback_server.py, real HTTP).

(a) The time for one classic7 game to stop on a never-answering endpoint (``hang``) and on one answering 429 to
    everything (``429:1``, Retry-After 1 s), at the default settings (TOOLKIT_TIMEOUT_S 60, 6 attempts, the new
    code's TOOLKIT_ENDPOINT_DEADLINE_S 90). A run still going at the cap is stopped and printed ``> cap``.
(b) The winner and event log of the same seeded games with and without a 429 storm (every request answered 429
    with Retry-After 1 s for STORM seconds, from the 20th request of the game on), under every error policy,
    at the default settings: ``same`` when the events (kind, actor, target, text, fallback) and the winner are
    identical.

Each game runs in its own process (``--child``), the old code's with PYTHONPATH at OLD (a worktree of 51c499d:
``git worktree add /tmp/old-51c499d 51c499d``); every server is a thread of this process.

    python benchmarks/endpoint_failures.py [--old /tmp/old-51c499d] [--cap 150] [--storm 20] [--seed 3]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

NEW = str(Path(__file__).resolve().parents[1])
POLICIES = ("fallback", "forfeit", "eliminate_after:2")


def child(model: str, seed: int, policy: str) -> None:
    """One game (in this process, with whatever toolkit PYTHONPATH gives); one JSON line on stdout."""
    from toolkit.werewolf.game import GameConfig, GameRunner

    runner = GameRunner(GameConfig(seed=seed, model=model, error_policy=policy))
    started = time.monotonic()
    result = asyncio.run(runner.play())
    events = [(e.kind, e.actor, e.target, e.text, bool(e.fallback)) for e in result.events]
    print(json.dumps({"winner": result.winner, "reason": result.win_reason.splitlines()[0][:160],
                      "took": time.monotonic() - started, "events": len(events), "calls": result.log.calls,
                      "fallbacks": sum(e[4] for e in events),
                      "digest": hashlib.sha256(json.dumps([events, result.winner]).encode()).hexdigest()[:12]}))


def run_child(code: str, model: str, seed: int, policy: str, cap: float) -> dict:
    env = {**os.environ, "PYTHONPATH": code}
    for name in ("TOOLKIT_TIMEOUT_S", "TOOLKIT_MAX_ATTEMPTS", "TOOLKIT_ENDPOINT_DEADLINE_S"):
        env.pop(name, None)  # the default settings
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, __file__, "--child", model, str(seed), policy], env=env, cwd=code,
                              capture_output=True, text=True, timeout=cap)
    except subprocess.TimeoutExpired:
        return {"capped": True, "took": time.monotonic() - started}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"failed": done.stderr.strip().splitlines()[-1:] or ["no output"]}
    return json.loads(lines[-1])


def stop_times(old: str, cap: float, seed: int) -> None:
    from toolkit.testing.loopback_server import FakeOpenAIServer

    print(f"(a) one classic7 game (seed {seed}) on a failing endpoint, default settings; cap {cap:g} s")
    with FakeOpenAIServer(seed=1) as server, ThreadPoolExecutor(4) as pool:
        jobs = {(name, code_name): pool.submit(run_child, code, f"openai:{name}@{server.base_url}", seed, "fallback",
                                               cap)
                for name in ("hang", "429:1") for code_name, code in (("old", old), ("new", NEW))}
        print("| endpoint | old 51c499d | new |\n|---|---|---|")
        for name in ("hang", "429:1"):
            cells = []
            for code_name in ("old", "new"):
                r = jobs[(name, code_name)].result()
                cells.append(f"> {cap:g} s (still playing: {r['took']:.0f} s)" if r.get("capped") else
                             f"failed: {r['failed']}" if "failed" in r else
                             f"{r['took']:.0f} s: {r['winner']} ({r['reason'][:90]}), {r['calls']} calls")
            label = "never answers" if name == "hang" else "429 to everything (Retry-After 1)"
            print(f"| {label} | {cells[0]} | {cells[1]} |")


def storm_games(old: str, storm: float, seed: int, cap: float) -> None:
    from toolkit.testing.loopback_server import FakeOpenAIServer

    print(f"\n(b) classic7 seed {seed}, model `stormy` (deterministic answers), without and with a {storm:g} s storm "
          "of 429s (Retry-After 1 s) from the game's 20th request; default settings")
    servers, jobs = [], {}
    with ThreadPoolExecutor(12) as pool:
        for policy in POLICIES:
            for code_name, code in (("old", old), ("new", NEW)):
                for stormy in (False, True):
                    server = FakeOpenAIServer(seed=1).start()
                    servers.append(server)
                    if stormy:
                        server.storm(storm, after=20, retry_after=1)
                    jobs[(policy, code_name, stormy)] = (server, pool.submit(
                        run_child, code, f"openai:stormy@{server.base_url}", seed, policy, cap))
        print("| policy | code | without storm | with storm | 429s sent | same? |\n|---|---|---|---|---|---|")
        for policy in POLICIES:
            for code_name in ("old", "new"):
                calm = jobs[(policy, code_name, False)][1].result()
                server, future = jobs[(policy, code_name, True)]
                hit = future.result()

                def cell(r: dict) -> str:
                    if r.get("capped"):
                        return f"> {cap:g} s"
                    if "failed" in r:
                        return f"failed: {r['failed']}"
                    return (f"{r['winner']} ({r['reason'][:60]}), {r['events']} events, {r['fallbacks']} fallbacks, "
                            f"{r['took']:.0f} s")

                same = "yes" if calm.get("digest") and calm.get("digest") == hit.get("digest") else "**no**"
                print(f"| {policy} | {code_name} | {cell(calm)} | {cell(hit)} | {server.stormed} | {same} |")
    for server in servers:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default="/tmp/old-51c499d", help="a worktree of 51c499d")
    parser.add_argument("--cap", type=float, default=150.0, help="seconds before a game is stopped (part a)")
    parser.add_argument("--storm", type=float, default=20.0, help="seconds of 429s (part b)")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--only", choices=["a", "b"], help="one part")
    parser.add_argument("--child", nargs=3, metavar=("MODEL", "SEED", "POLICY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child[0], int(args.child[1]), args.child[2])
    if not (Path(args.old) / "toolkit").is_dir():
        sys.exit(f"error: no old code at {args.old}: git worktree add {args.old} 51c499d")
    started = time.monotonic()
    if args.only != "b":
        stop_times(args.old, args.cap, args.seed)
    if args.only != "a":
        storm_games(args.old, args.storm, args.seed, max(args.cap, 4 * args.storm + 60))
    print(f"\n{time.monotonic() - started:.0f} s in all")


if __name__ == "__main__":
    main()
