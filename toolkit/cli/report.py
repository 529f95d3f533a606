"""``python -m toolkit report``: plots (PNG) and summary.md for a results folder."""

from __future__ import annotations

import argparse

from toolkit.cli.common import show

DESCRIPTION = None

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter (malloc.h)
MMAP_THRESHOLD = 128 * 1024  # glibc's initial threshold, kept fixed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", help="a results folder (every run below it is read)")
    parser.add_argument("--out", metavar="DIR", help="where to write (default: DIR)")
    parser.add_argument("--include-degraded", action="store_true",
                        help="rate the degraded games too (a seat's decisions mostly fallbacks: games.degraded); "
                             "by default they are counted beside every table but left out of the ratings")


def return_freed_memory() -> bool:
    """This process's allocators give a large block back to the system when it is freed. A report builds and drops
    frames of hundreds of MB part after part; Arrow's default pool (mimalloc) and glibc's malloc, whose threshold
    for mapping a block apart rises to the largest block freed so far (up to 32 MB), keep much of that memory
    resident for reuse, so the process's peak is the tables plus what the allocators kept. Arrow's system pool
    (glibc's malloc) and a fixed threshold (glibc's initial 128 KB) return it: measured in docs/benchmarks.md
    ("100,000 games, fifth session"). Process-wide, so only the CLI's report command does this, never the
    library; False where it could not be done (no glibc)."""
    import ctypes

    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
    try:
        return bool(ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    except (OSError, AttributeError):  # not glibc (musl, macOS): its own allocator's defaults
        return False


def run(args: argparse.Namespace) -> int:
    from toolkit.analysis.report import write_report
    from toolkit.cli.preflight import out_folder, results_folder

    results_folder(args.dir)
    out_folder(args.out or args.dir)
    return_freed_memory()
    for path in write_report(args.dir, args.out, include_degraded=args.include_degraded):
        show(path)
    return 0
