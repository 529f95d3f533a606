"""``python -m toolkit sweep``: a sweep file, one papermill notebook run per grid cell."""

from __future__ import annotations

import argparse
from pathlib import Path

from toolkit.cli.common import CAPPED, ENDPOINT_DOWN, add_cap_arguments, endpoints_line, plural, show
from toolkit.study.executors import EXECUTORS, help_text

DESCRIPTION = None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the sweep's YAML file (see experiments/sweeps/)")
    parser.add_argument("--workers", type=int, default=1, help="cells run at once (default 1)")
    parser.add_argument("--executor", choices=list(EXECUTORS), help=f"{help_text()} (dask is the default with "
                        "--scheduler)")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler's address, e.g. "
                        "tcp://HOST:8786 (`dask scheduler`; its workers: `dask worker ADDRESS --nthreads 1`); "
                        "default: a LocalCluster of --workers processes")
    parser.add_argument("--shard-games", type=int, metavar="N", help="a werewolf cell of more than N games runs as "
                        "shards of N games that any worker plays (default: the file's shard_games, else 1000; a "
                        "rerun keeps the first run's cut)")
    parser.add_argument("--out", "--results", dest="out", default="results", metavar="DIR",
                       help="results root, as every command's --out; cells go to DIR/<sweep>/<cell>/, the summary "
                       "and plots to DIR/<sweep>/ (default: results; --results is its old name)")
    add_cap_arguments(parser, "the sweep (all cells, every run of it)")


def run(args: argparse.Namespace) -> int:
    from toolkit.cli.preflight import check_executor, check_named_specs, check_spec, out_folder
    from toolkit.core.files import FileError, SweepFile, load_file

    if args.workers < 1:
        raise FileError(f"--workers must be at least 1, got {args.workers}")
    if args.shard_games is not None and args.shard_games < 1:
        raise FileError(f"--shard-games must be at least 1, got {args.shard_games}")
    if args.scheduler and args.executor == "local":
        raise FileError("--scheduler needs --executor dask (a Dask scheduler's address; local workers have none)")
    check_executor(args)
    out_folder(args.out, "--out")
    raw = load_file(args.file, SweepFile, "sweep")
    check_named_specs({**raw.parameters, **raw.grid}, args.file)  # before the notebook machinery is imported
    from toolkit.study.sweep import cell_spec_keys, load_sweep, run_sweep

    sweep, cells = load_sweep(args.file, args.out)  # the whole file is checked before any cell runs
    specs: dict[str, str] = {}
    for cell in cells:  # every model spec a cell would use (a dead endpoint fails here, not in each game)
        for spec, key in cell_spec_keys(cell).items():
            specs.setdefault(spec, key)
    for spec, key in specs.items():
        if "{task}" not in spec:  # the engineer suite fills in each task's folder itself
            check_spec(spec, option=f"{args.file}: {key}")
    summary = run_sweep(args.file, results_root=args.out, workers=args.workers, executor=args.executor,
                        scheduler=args.scheduler, max_usd=args.max_usd, max_tokens=args.max_tokens, at_cap=args.at_cap,
                        shard_games=args.shard_games)
    columns = [c for c in ("cell_id", cell_state(summary), "games", "village_win_rate", "village_ci_low",
                           "village_ci_high", "sessions", "interrupted", "success_rate", "error")
               if c in summary.columns]
    show(summary[columns].to_string(index=False))
    show(written(Path(args.out) / sweep["name"]))
    if (line := endpoints_line(Path(args.out) / sweep["name"])) is not None:
        show(line)
    return cells_line(summary)  # the last lines: cells, failed, capped, and what the budget spent


def cell_state(summary) -> str:
    """The per-cell table's column saying what became of each cell: ``status`` (``ok``, ``capped``,
    ``interrupted (endpoint)``, ``not started``, ``failed``), or ``ok`` in a summary without it."""
    return "status" if "status" in summary.columns else "ok"


def cells_line(summary) -> int:
    """The last lines of a sweep or a tournament (cells, failed, the budget's line) and its exit code; a dead
    endpoint that stopped the study is the last line (on stderr too), exit code 4, and its cells are counted
    apart (``interrupted (endpoint)``, and the cells it kept from starting: ``not started``), not as failed: a
    rerun resumes them; a spending cap that stopped it, a ``stopped:`` line on stderr, exit code 3."""
    import sys

    capped = summary["capped"].fillna(False).astype(bool) if "capped" in summary else False
    down = summary["endpoint"].dropna() if "endpoint" in summary else ()
    ok = summary["ok"].fillna(False).astype(bool)
    stopped = summary["endpoint"].notna() if len(down) else ok & False
    # the cells it kept from starting, sharded ones too (their error names a shard; the column says it)
    unstarted = ((summary["not_started"].fillna(False).astype(bool) if "not_started" in summary
                  else summary.get("error", ok & False) == "not started") & ~ok & ~stopped) if len(down) else ok & False
    failed = int((~ok & ~capped & ~stopped & ~unstarted).sum())
    show(f"cells: {len(summary)}, failed: {failed}" + (f", capped: {int(capped.sum())}" if capped is not False
                                                         and capped.any() else "")
         + (f", interrupted (endpoint): {int(stopped.sum())}, not started: {int(unstarted.sum())}" if len(down)
            else ""))
    if "budget" in summary.attrs:
        show(summary.attrs["budget"])
    if len(down):
        show(f"stopped: {down.iloc[0]}", file=sys.stderr)
        return ENDPOINT_DOWN
    if capped is not False and capped.any():  # on stderr too, as a dead endpoint's line (seen under --quiet)
        spent, cells = summary.attrs.get("spent", ""), plural(int(capped.sum()), "cell")
        show(f"stopped: the spending cap was reached{f' ({spent})' if spent else ''}: {cells} unfinished (a rerun "
             "with a higher cap resumes them)",
             file=sys.stderr)
    return 1 if failed else CAPPED if capped is not False and capped.any() else 0


def written(folder: Path) -> str:
    """Where the sweep's summary and plots went (``toolkit report FOLDER`` makes the full report)."""
    names = [p.name for p in sorted(folder.glob("*")) if p.suffix in (".parquet", ".png")]
    return (f"summary and plots in {folder}/: {', '.join(names)}; the full report: "
            f"python -m toolkit report {folder}")
