"""``python -m toolkit tournament``: plan and run a tournament file."""

from __future__ import annotations

import argparse

from toolkit.cli.common import add_cap_arguments

HELP = "plan and run a tournament file (every ordered pair of models per side, seat shuffling)"
DESCRIPTION = None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a tournament YAML file (models, presets, design; see "
                        "experiments/tournaments/example.yaml)")
    parser.add_argument("--plan", action="store_true", help="print the schedule's balance, size and the expected "
                        "interval width of every model's rating per side; run nothing")
    parser.add_argument("--workers", type=int, default=1, help="cells run at once (default: 1)")
    parser.add_argument("--executor", choices=["local", "dask"], default="local",
                        help="local processes (default) or a Dask cluster")
    parser.add_argument("--scheduler", help="a dask scheduler address (default: a LocalCluster)")
    parser.add_argument("--out", "--results", dest="out", default="results", metavar="DIR",
                        help="results root, as every command's --out; cells go to DIR/<name>/<cell>/ (default: "
                        "results; --results is its old name)")
    parser.add_argument("--export", metavar="DIR", help="afterwards, write the complete games' tables (no calls) "
                        "to DIR as one Parquet file per table")
    add_cap_arguments(parser, "the tournament (all cells, every run of it)")


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from toolkit.study.tournament import (balance, expected_widths, export_tables, load_tournament, plan_from_file,
                                          run_tournament)

    try:
        if args.plan:
            spec, plan = plan_from_file(args.file)
            games = plan["game"].nunique()
            print(f"{spec['name']}: {games} games in {plan['cell'].nunique()} cells")
            print(balance(plan).to_string())
            widths, pairs = expected_widths(plan)
            print("\nExpected 95% half-width of each rating (logits; equal models, P(village wins) = 0.5 assumed):")
            print(widths.to_string(index=False, float_format="{:.2f}".format))
            if len(pairs):
                print("\nSmallest true difference between two models detected with 80% power (logits):")
                print(pairs.to_string(index=False, float_format="{:.2f}".format))
            return 0
        summary = run_tournament(args.file, workers=args.workers, executor=args.executor,
                                 scheduler=args.scheduler, results_root=args.out, max_usd=args.max_usd,
                                 max_tokens=args.max_tokens, at_cap=args.at_cap)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.export:
        spec = load_tournament(args.file)
        for path in export_tables(Path(args.out) / spec["name"], args.export):
            print(path)
    from toolkit.cli.sweep import cells_line

    cols = [c for c in ("cell_id", "ok", "games", "village_win_rate", "error") if c in summary.columns]
    print(summary[cols].to_string(index=False))
    return cells_line(summary)
