"""Start-up time of the command line: ``python -m toolkit --help`` and ``python -m toolkit play --help``, old
(the commit before the CLI was split into one module per command, 873c7f3, extracted with ``git archive``)
and new (this checkout), side by side in one run. Each figure is the median (and the fastest) wall time of
N fresh interpreters; the target is under 1 s each.

    python benchmarks/cli_startup.py [N] [OLD_COMMIT]
"""

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OLD = "873c7f3"
COMMANDS = (["--help"], ["play", "--help"])


def timed(tree: Path, args: list[str], cwd: str) -> float:
    """Seconds for one fresh ``python -m toolkit ARGS`` importing the toolkit from ``tree``."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree), "HOME": cwd}
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "toolkit", *args], cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if out.returncode != 0 or "usage:" not in out.stdout:
        raise SystemExit(f"{tree}: python -m toolkit {' '.join(args)} failed: {out.stderr[-500:]}")
    return elapsed


def which_toolkit(tree: Path, cwd: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree), "HOME": cwd}
    return subprocess.run([sys.executable, "-c", "import toolkit; print(toolkit.__file__)"], cwd=cwd, env=env,
                          capture_output=True, text=True, check=True).stdout.strip()


def main(n: int, old_commit: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        old.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", old_commit, "toolkit", "prompts"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        cwd = Path(tmp) / "cwd"
        cwd.mkdir()
        trees = {f"old ({old_commit})": old, "new (this checkout)": ROOT}
        for name, tree in trees.items():  # the toolkit each run imports really is that tree's
            assert which_toolkit(tree, str(cwd)).startswith(str(tree)), (name, which_toolkit(tree, str(cwd)))
        times = {(name, tuple(args)): [] for name in trees for args in COMMANDS}
        for _ in range(n):  # interleaved, so a busy moment of the machine falls on both sides alike
            for name, tree in trees.items():
                for args in COMMANDS:
                    times[(name, tuple(args))].append(timed(tree, args, str(cwd)))
    print(f"python -m toolkit start-up, {n} fresh interpreters each ({sys.executable})")
    print(f"{'command':<26}" + "".join(f"{name:>30}" for name in trees) + f"{'old/new':>10}")
    for args in COMMANDS:
        cells, medians = [], []
        for name in trees:
            t = times[(name, tuple(args))]
            medians.append(statistics.median(t))
            cells.append(f"{statistics.median(t):.2f} s (fastest {min(t):.2f} s)")
        print(f"{'toolkit ' + ' '.join(args):<26}" + "".join(f"{c:>30}" for c in cells)
              + f"{medians[0] / medians[1]:>9.1f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, sys.argv[2] if len(sys.argv) > 2 else OLD)
