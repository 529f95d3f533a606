"""How long the results explorer (toolkit/ui/results.py) takes to show a folder's report: the first open (the
report computed, as ``toolkit report`` would, and kept in the report cache) and the next (read from the cache),
side by side in one run, each until the report is on display and until the tables for the replays are read too.
The cache is a temporary folder, so every run starts cold.

    python benchmarks/explorer_open.py [FOLDER]     (default: the committed example, results/examples/tables)
"""

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def open_once(folder: Path) -> tuple[float, float, str]:
    """Seconds until the report shows and until Load is done, and what the progress line said."""
    from toolkit.ui import ResultsExplorer

    r = ResultsExplorer(str(folder))
    shown = []
    r.report.observe(lambda change: shown.append(time.perf_counter()) if change["new"] else None, "outputs")
    started = time.perf_counter()
    r.load()
    done = time.perf_counter() - started
    if not shown:
        raise SystemExit(f"{folder}: no report was shown: {r.progress.value}")
    return shown[0] - started, done, r.progress.value


def main(folder: Path) -> None:
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TOOLKIT_REPORT_CACHE"] = cache
        cold = open_once(folder)
        warm = open_once(folder)
    print(f"folder: {folder}")
    print(f"{'open':<10}{'report shown':>14}{'all loaded':>12}")
    for name, (shown, done, _) in (("first", cold), ("again", warm)):
        print(f"{name:<10}{shown:>12.1f} s{done:>10.1f} s")
    print(f"report shown after {cold[0]:.1f} s the first time, {warm[0]:.2f} s from the cache")
    print(f"progress line, again: {warm[2]}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "results" / "examples" / "tables")
