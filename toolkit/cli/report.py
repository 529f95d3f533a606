"""``python -m toolkit report``: plots (PNG) and summary.md for a results folder."""

from __future__ import annotations

import argparse

from toolkit.cli.common import show

DESCRIPTION = None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", help="a results folder (every run below it is read)")
    parser.add_argument("--out", metavar="DIR", help="where to write (default: DIR)")


def run(args: argparse.Namespace) -> int:
    from toolkit.analysis.report import write_report
    from toolkit.cli.preflight import out_folder, results_folder

    results_folder(args.dir)
    out_folder(args.out or args.dir)
    for path in write_report(args.dir, args.out):
        show(path)
    return 0
