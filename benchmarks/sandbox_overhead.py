"""The added cost per command of the sandbox: median (and p95) ms of one Terminal command (the persistent
shell: ``true``, ``ls``, ``python -c pass``) and of one one-off program (``git status``, as the Git tool
runs it: a fresh sandbox each time), ``local`` vs ``bubblewrap``, side by side. Also the session start
(first command, which starts the shell) and stop.

    python benchmarks/sandbox_overhead.py [N]
"""

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from toolkit.agent.environments.environment import bwrap_problem, make_environment

COMMANDS = {"true": "true", "ls -la": "ls -la", "python -c pass": "python -c pass"}


def stats(samples: list[float]) -> str:
    ordered = sorted(samples)
    return f"{statistics.median(ordered):8.2f} {ordered[int(0.95 * (len(ordered) - 1))]:8.2f}"


async def measure(kind: str, workspace: Path, n: int) -> dict[str, list[float]]:
    env = make_environment(kind, workspace)
    out: dict[str, list[float]] = {}
    t0 = time.perf_counter()
    await env.execute("true", 30)
    out["session start (first command)"] = [(time.perf_counter() - t0) * 1000]
    for name, cmd in COMMANDS.items():
        for _ in range(3):  # warm up
            await env.execute(cmd, 30)
        samples = []
        for _ in range(n):
            t = time.perf_counter()
            result = await env.execute(cmd, 30)
            samples.append((time.perf_counter() - t) * 1000)
            assert result.exit_code == 0, result.output
        out[f"shell: {name}"] = samples
    samples = []
    for _ in range(max(5, n // 4)):
        t = time.perf_counter()
        assert env.run(["git", "status", "--short"]).returncode == 0
        samples.append((time.perf_counter() - t) * 1000)
    out["one-off: git status"] = samples
    t = time.perf_counter()
    await env.stop()
    out["session stop"] = [(time.perf_counter() - t) * 1000]
    return out


def main(n: int) -> None:
    kinds = ["local"] + ([] if bwrap_problem() else ["bubblewrap"])
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
        results = {k: asyncio.run(measure(k, ws, n)) for k in kinds}
    print(f"{n} commands each; ms per command (median, p95)")
    print(f"{'':32s} {'local med':>9s} {'p95':>8s}" + (f" {'bwrap med':>9s} {'p95':>8s} {'added':>8s}"
                                                       if "bubblewrap" in results else ""))
    for row in results["local"]:
        line = f"{row:32s} {stats(results['local'][row])}"
        if "bubblewrap" in results:
            added = statistics.median(results["bubblewrap"][row]) - statistics.median(results["local"][row])
            line += f"  {stats(results['bubblewrap'][row])} {added:+8.2f}"
        print(line)
    if bwrap_problem():
        print(f"bubblewrap not measured: {bwrap_problem()}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
