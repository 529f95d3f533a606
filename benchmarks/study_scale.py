"""A study at 1,000, 10,000 and 100,000 games: peak memory and time of each step, the code at an old revision
(default e01e9c5, checked out by this run as a git worktree in a temporary folder) beside today's.

Steps, each a process of its own (its peak is its own) over heuristic classic7 games, every call logged:

- ``sweep``: a sweep of one cell of N games (one worker): the cell's kernel plays the games (``play`` is that
  process's peak), the sweep's parent summarises them (``summary`` is its peak), ``sweep`` is the peak of the
  whole process tree (PSS: pages the processes share are counted once);
- ``load``: ``toolkit.record.load.load`` of the cell's results;
- ``report``: ``toolkit report`` of them;
- ``export <format>``: each exporter of werewolf games (kaggle, inspect, otel, hf) with the calls in, over the
  first E games (``--export-games``), timed after the load; games/s by this process's CPU and by the clock;
- ``cli <format>``: ``python -m toolkit export FORMAT CELL --out DIR`` of the whole study, as a user runs it (its
  peak is the whole export's, reading included: the old code loads every table, today's reads a batch of games at
  a time); games/s by the process's CPU and by the clock, from the command's start.

A process's peak is its own high-water mark (``VmHWM`` in /proc, read every 0.2 s while it lives); the tree's
PSS is sampled at the same times (a peak shorter than that can be missed). CPU is the step's user + system
time, its children's included.

    python benchmarks/study_scale.py [--games 1000,10000] [--old-games 1000,10000] [--export-games 1000]
                                     [--against e01e9c5] [--keep DIR] [--steps ...] [--cell DIR]
                                     [--formats kaggle,inspect,otel,hf]

The whole-study exports, old revision beside today's, on a played cell and on its ten copies:

    python benchmarks/study_scale.py --cell CELL --games 1000 --old-games 1000 --against 3286297 --steps cli
    python benchmarks/copy_study.py CELL STUDY --copies 10
    python benchmarks/study_scale.py --cell STUDY --games 10000 --old-games 10000 --against 3286297 --steps cli
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sweep_memory import tree_memory_mb  # noqa: E402

SWEEP = """
import sys
from pathlib import Path
from toolkit.study.sweep import run_sweep
root, n = Path(sys.argv[1]), int(sys.argv[2])
(root / "scale.yaml").write_text(f"name: scale\\nnotebook: experiments/werewolf.ipynb\\nparameters: {{n_games: {n}}}\\n"
                                 "grid:\\n  model: [heuristic]\\n")
summary = run_sweep(root / "scale.yaml", workers=1, results_root=root, progress=False)
assert summary["ok"].all(), summary["error"].tolist()
print("games", int(summary["games"].sum()))
"""

LOAD = """
import sys, warnings
from toolkit.record.load import load
warnings.simplefilter("ignore")
t = load(sys.argv[1])
print("games", len(t.games), "calls", len(t.calls))
"""

REPORT = """
import sys, warnings
from toolkit.analysis.report import write_report
warnings.simplefilter("ignore")
write_report(sys.argv[1], sys.argv[2])
"""

EXPORT = """
import importlib, sys, time, warnings
from pathlib import Path
from toolkit.record.load import load
warnings.simplefilter("ignore")
name, folder, out, n = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
out.mkdir(parents=True, exist_ok=True)
results = load(folder)
keep = set(results.games["game_id"].iloc[:n])
for table in ("games", "players", "events", "calls", "beliefs"):
    frame = getattr(results, table)
    setattr(results, table, frame[frame["game_id"].isin(keep)].reset_index(drop=True))
import inspect_ai.log, opentelemetry.sdk.trace  # the writers' libraries, imported before the clock starts
importlib.import_module("toolkit.export." + {"inspect": "inspect_log"}.get(name, name))
import toolkit.analysis  # (the inspect export's headline imports it: scipy, a second or more, not the writing)
writer = [0.0]
if name == "inspect":  # Inspect's own writer (write_eval_log), timed apart: how much of the time is not ours
    write_eval_log = inspect_ai.log.write_eval_log
    def timed(*args, **kwargs):
        start = time.process_time()
        try:
            return write_eval_log(*args, **kwargs)
        finally:
            writer[0] += time.process_time() - start
    inspect_ai.log.write_eval_log = timed
wall, cpu = time.perf_counter(), time.process_time()
importlib.import_module("toolkit.export." + {"inspect": "inspect_log"}.get(name, name)).write(results, out)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
alone = f" (Inspect's writer alone: {len(keep) / writer[0]:.1f} games/s)" if writer[0] else ""
print("export", len(keep), "games", len(results.calls), "calls", f"{len(keep) / cpu:.1f}", f"{len(keep) / wall:.1f}"
      + alone)
"""

CLI = """
import sys, time, warnings
warnings.simplefilter("ignore")
from toolkit.cli import main
from toolkit.record.load import load
name, folder, out = sys.argv[1:4]
n = len(load(folder, columns={"games": ["game_id"]}).games)
wall, cpu = time.perf_counter(), time.process_time()
assert main(["export", name, folder, "--out", out]) == 0
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print("cli export", n, "games", f"{n / cpu:.1f}", f"{n / wall:.1f}")
"""

FORMATS = ("kaggle", "inspect", "otel", "hf")


def measure(code: str, args: list[str], root: Path) -> dict:
    """Run ``code`` with the package at ``root``: wall and CPU seconds, the peak PSS of its process tree, the
    peak RSS of the process itself and of its largest descendant, and its last line of output."""
    env = {**os.environ, "PYTHONPATH": str(root), "MPLBACKEND": "Agg"}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, *args], cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    peak = {"tree": 0.0, "self": 0.0, "child": 0.0}
    stop = threading.Event()

    def watch() -> None:
        from sweep_memory import descendants
        while not stop.is_set():
            peak["tree"] = max(peak["tree"], tree_memory_mb(proc.pid)[0])
            peak["self"] = max(peak["self"], rss_mb(proc.pid))
            for child in descendants(proc.pid):
                peak["child"] = max(peak["child"], rss_mb(child))
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out, err = proc.communicate()
    status = proc.returncode
    stop.set()
    watcher.join()
    wall = time.perf_counter() - start
    if status:
        return {"error": (err.strip().splitlines() or ["?"])[-1][:200], "wall": wall, **peak}
    return {"wall": wall, "out": out.strip().splitlines()[-1] if out.strip() else "", **peak}


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):  # the process's own high-water mark, not a sample
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def cpu_of(before: os.times_result) -> float:
    now = os.times()
    return (now.children_user - before.children_user) + (now.children_system - before.children_system)


def step(label: str, version: str, n: int, code: str, args: list[str], root: Path, rows: list) -> dict:
    before = os.times()
    r = measure(code, args, root)
    r["cpu"] = cpu_of(before)
    rows.append((label, version, n, r))
    shown = r.get("error") or r.get("out", "")
    print(f"{label:16s} {version:8s} {n:7d} games  wall {r['wall']:8.1f} s  cpu {r['cpu']:8.1f} s  "
          f"peak {r['self']:7.0f} MB (tree PSS {r['tree']:7.0f} MB, largest child {r['child']:7.0f} MB)  {shown}",
          flush=True)
    return r


def old_checkout(rev: str, where: Path) -> Path:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(where), rev], check=True,
                   capture_output=True)
    return where


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default="1000", help="study sizes for today's code, e.g. 1000,10000")
    parser.add_argument("--old-games", default="1000", help="study sizes for the old code (\"\": none)")
    parser.add_argument("--export-games", type=int, default=1000, help="games each export writes")
    parser.add_argument("--against", default="e01e9c5", help="the old revision")
    parser.add_argument("--keep", metavar="DIR", help="keep the results here (default: a temporary folder)")
    parser.add_argument("--steps", default="sweep,load,report,export",
                        help="the steps to run (without sweep: the results --keep DIR already holds); cli: the "
                             "whole-study exports through the CLI")
    parser.add_argument("--formats", default=",".join(FORMATS), help="the exports to run (default: all)")
    parser.add_argument("--cell", metavar="DIR", help="a study's results folder to run the steps after the sweep on, "
                        "old and new code alike (no sweep; its size is --games)")
    args = parser.parse_args(argv)
    if args.cell:
        args.steps = ",".join(s for s in args.steps.split(",") if s != "sweep")
    sizes = {"new": [int(x) for x in args.games.split(",") if x],
             "old": [int(x) for x in args.old_games.split(",") if x]}
    rows: list = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(args.keep or tmp)
        roots = {"new": ROOT}
        if sizes["old"]:
            roots["old"] = old_checkout(args.against, Path(tmp) / "old")
        try:
            for n in sorted(set(sizes["new"]) | set(sizes["old"])):
                for version in ("old", "new"):
                    if n not in sizes[version]:
                        continue
                    root, work = roots[version], base / f"{version}-{n}"
                    work.mkdir(parents=True, exist_ok=True)
                    label = version if version == "new" else args.against
                    steps = args.steps.split(",")
                    if "sweep" in steps and "error" in step("sweep", label, n, SWEEP, [str(work), str(n)], root,
                                                            rows):
                        continue
                    cell = Path(args.cell) if args.cell else next((work / "scale").glob("model-*"))
                    if "load" in steps:
                        step("load", label, n, LOAD, [str(cell)], root, rows)
                    if "report" in steps:
                        step("report", label, n, REPORT, [str(cell), str(work / "report")], root, rows)
                    for name in args.formats.split(",") if "cli" in steps else ():
                        step(f"cli {name}", label, n, CLI, [name, str(cell), str(work / f"cli-{name}")], root, rows)
                    for name in args.formats.split(",") if "export" in steps else ():
                        step(f"export {name}", label, min(n, args.export_games), EXPORT,
                             [name, str(cell), str(work / f"export-{name}"), str(args.export_games)], root, rows)
        finally:
            if "old" in roots:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(roots["old"])],
                               capture_output=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
