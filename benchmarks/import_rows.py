"""What ``import toolkit.record.rows`` costs (the row classes: the tables' contract, which the run log and a
plug-in's rows need without pandas), old (a commit before the record package's face was lazy) and new (this
checkout), side by side in one run: the median (and fastest) wall time of N fresh interpreters, and whether the
import loaded pandas.

    python benchmarks/import_rows.py [N] [OLD_COMMIT]
"""

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OLD = "197a8d0"
CODE = "import sys, toolkit.record.rows; print('pandas' in sys.modules, toolkit.record.rows.__file__)"


def timed(tree: Path, cwd: str) -> tuple[float, bool]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree), "HOME": cwd}
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CODE], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - started
    pandas, where = out.stdout.split()
    assert where.startswith(str(tree)), (tree, where)  # the tree's own toolkit was imported
    return elapsed, pandas == "True"


def main(n: int, old_commit: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        old.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", old_commit, "toolkit"], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        trees = {f"old ({old_commit})": old, "new (this checkout)": ROOT}
        times: dict[str, list[float]] = {name: [] for name in trees}
        pandas: dict[str, bool] = {}
        for _ in range(n):  # interleaved, so a busy moment of the machine falls on both sides alike
            for name, tree in trees.items():
                t, pandas[name] = timed(tree, tmp)
                times[name].append(t)
    print(f"python -c 'import toolkit.record.rows', {n} fresh interpreters each ({sys.executable})")
    for name in trees:
        print(f"{name:<24} {statistics.median(times[name]):.3f} s median (fastest {min(times[name]):.3f} s); "
              f"pandas imported: {'yes' if pandas[name] else 'no'}")
    old_t, new_t = (statistics.median(times[name]) for name in trees)
    print(f"old/new: {old_t / new_t:.1f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, sys.argv[2] if len(sys.argv) > 2 else OLD)
