"""How long the results explorer (toolkit/ui/results.py) takes to show a folder's report, old way and new way side
by side in one run:

- old: the first open waited for the whole report (``write_report``, what ``toolkit report`` computes) before
  anything showed;
- new, first open: until the summary (conditions, Conclusions, design matrix, win rates) is on display, until the
  tables for the replays are read too, and until every other section has been opened (each computed on demand);
- new, again: the same folder opened again (every part read from the report cache).

The cache is a temporary folder, so every run starts cold.

    python benchmarks/explorer_open.py [FOLDER]     (default: the committed example, results/examples/tables)
"""

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def whole_report(folder: Path) -> float:
    """Seconds to compute every part of the report at once (the old first open)."""
    from toolkit.analysis.report import write_report

    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        write_report(folder, out)
        return time.perf_counter() - started


def open_once(folder: Path) -> tuple[float, float, float, str]:
    """Seconds until the summary shows (its last part on display), until Load is done and until every section is
    open; the progress line."""
    from toolkit.ui import ResultsExplorer

    r = ResultsExplorer(str(folder))
    shown = []
    r.report.observe(lambda change: shown.append(time.perf_counter()) if change["new"] else None, "outputs")
    started = time.perf_counter()
    r.load()
    done = time.perf_counter() - started
    if not shown:
        raise SystemExit(f"{folder}: no report was shown: {r.progress.value}")
    progress = r.progress.value
    summary = shown[-1]
    r.open_all()
    return summary - started, done, time.perf_counter() - started, progress


def main(folder: Path) -> None:
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TOOLKIT_REPORT_CACHE"] = cache
        cold = open_once(folder)
        warm = open_once(folder)
    old = whole_report(folder)
    print(f"folder: {folder}")
    print(f"{'open':<22}{'summary shown':>15}{'all loaded':>12}{'every section open':>20}")
    print(f"{'old: whole report':<22}{old:>13.1f} s{old:>10.1f} s{old:>18.1f} s")
    for name, (shown, done, every, _) in (("new: first open", cold), ("new: again (cache)", warm)):
        print(f"{name:<22}{shown:>13.1f} s{done:>10.1f} s{every:>18.1f} s")
    print(f"summary shown after {cold[0]:.1f} s the first time (the old way: {old:.1f} s), {warm[0]:.2f} s from the "
          "cache")
    print(f"progress line, first open: {cold[3]}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "results" / "examples" / "tables")
