"""Cost per command of the sandbox against a previous one (default: commit e01e9c5, the last that worked in
the user's folder in place), side by side, in one run.

    python benchmarks/sandbox_cost.py [--commands 200] [--old e01e9c5]

The previous toolkit is extracted with ``git archive OLD toolkit prompts`` into a temporary folder and run
in a child Python with PYTHONPATH pointing there; the current one runs from this checkout. For each of
``bubblewrap`` and ``local`` it prints the median and 90th percentile milliseconds of: a command in the
persistent shell (``true``), a one-off program (``env.run(["true"])``: a fresh sandbox each time) and a
session's start and stop (environment made, first command, stop), on a small git repository (20 files):
the new start includes making the private copy and its start snapshot.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import asyncio, json, statistics, sys, tempfile, time
try:
    from toolkit.agent.environments.environment import make_environment
except ImportError:  # before the reorganisation (873c7f3)
    from toolkit.agent.environment import make_environment

def stats(xs):
    xs = sorted(xs)
    return [round(statistics.median(xs) * 1000, 2), round(xs[int(len(xs) * 0.9) - 1] * 1000, 2)]

async def main(kind, n):
    import subprocess
    ws = tempfile.mkdtemp(prefix="sandbox-cost-")
    for i in range(20):
        open(f"{ws}/f{i}.py", "w").write(f"x = {i}\n" * 50)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "s"]):
        subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True)
    env = make_environment(kind, ws)
    await env.execute("true", 30)
    shell = []
    for _ in range(n):
        t = time.perf_counter(); await env.execute("true", 30); shell.append(time.perf_counter() - t)
    one_off = []
    for _ in range(max(10, n // 5)):
        t = time.perf_counter(); env.run(["true"]); one_off.append(time.perf_counter() - t)
    await env.stop()
    sessions = []
    for _ in range(max(5, n // 20)):
        t = time.perf_counter()
        e = make_environment(kind, ws); await e.execute("true", 30); await e.stop()
        sessions.append(time.perf_counter() - t)
    print(json.dumps({"shell": stats(shell), "one_off": stats(one_off), "session": stats(sessions)}))

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def measure(pythonpath: str, kind: str, n: int) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, kind, str(n)], capture_output=True, text=True, timeout=1800,
                         env={**os.environ, "PYTHONPATH": pythonpath}, cwd=tempfile.gettempdir())
    if out.returncode != 0:
        raise SystemExit(f"{kind} ({pythonpath}) failed: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=200, help="commands in the persistent shell per environment")
    parser.add_argument("--old", default="e01e9c5", help="the previous sandbox's commit")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sandbox-old-") as old:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.old, "toolkit", "prompts"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
        print(f"cost per command, milliseconds (median / p90); old = {args.old}, new = this checkout; "
              f"{args.commands} shell commands each")
        print(f"{'environment':<12} {'what':<22} {'old':>16} {'new':>16} {'new/old':>8}")
        for kind in ("bubblewrap", "local"):
            before, after = measure(old, kind, args.commands), measure(str(ROOT), kind, args.commands)
            for what, label in (("shell", "persistent-shell cmd"), ("one_off", "one-off program"),
                                ("session", "session start+stop")):
                (om, op), (nm, np_) = before[what], after[what]
                print(f"{kind:<12} {label:<22} {om:>7.2f} / {op:>6.2f} {nm:>7.2f} / {np_:>6.2f} {nm / om:>8.2f}")


if __name__ == "__main__":
    main()
