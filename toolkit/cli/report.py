"""``python -m toolkit report``: plots (PNG) and summary.md for a results folder."""

from __future__ import annotations

import argparse
import sys

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
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar on stderr (which section renders, at which condition), only the "
                             "files written")


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
    from toolkit.analysis import progress
    from toolkit.analysis.report import write_report
    from toolkit.cli.preflight import out_folder, results_folder

    results_folder(args.dir)
    out_folder(args.out or args.dir)
    return_freed_memory()
    bar = None if args.quiet else ProgressBar()
    try:
        with progress.listening(bar):
            written = write_report(args.dir, args.out, include_degraded=args.include_degraded)
    finally:
        if bar is not None:
            bar.close()
    for path in written:
        show(path)
    return 0


class ProgressBar:
    """The report's progress on stderr (``toolkit.analysis.progress``): its sections done of all, the time so far,
    the section rendering and the condition it is at (tqdm redraws one line on a terminal)."""

    def __init__(self):
        self.bar, self.title = None, ""  # drawn from the first section on: a refused folder gets its one line alone

    def part(self, index: int, total: int, title: str) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=total, file=sys.stderr, leave=False,
                            bar_format="report: {n_fmt}/{total_fmt} sections done [{elapsed}] {desc}")
        self.bar.n, self.title = index - 1, title
        self.bar.set_description_str(title)

    def step(self, text: str) -> None:
        if self.bar is not None:
            self.bar.set_description_str(f"{self.title}: {text}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
