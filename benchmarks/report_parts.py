"""Where a report's memory goes: ``toolkit report`` of a results folder rendered part by part in this process,
printing after the load and after each part its CPU time, the process's resident memory (RSS) and its peak so
far (``VmHWM``), the bytes Arrow's memory pool holds for live buffers and the pool's name. Resident memory
that neither Arrow's pool nor Python holds is what an allocator keeps after a free.

    python benchmarks/report_parts.py RESULTS OUT [--pool mimalloc|jemalloc|system] [--reset]

``--pool`` picks Arrow's memory pool for the run (the default is Arrow's: mimalloc in the wheels). ``--reset``
resets the peak before each part (``/proc/self/clear_refs``), so each line's peak is that part's own.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--pool", choices=("mimalloc", "jemalloc", "system"), help="Arrow's memory pool")
    parser.add_argument("--reset", action="store_true", help="each part's peak its own (reset before it)")
    args = parser.parse_args(argv)
    import pyarrow as pa

    if args.pool:
        pa.set_memory_pool({"mimalloc": pa.mimalloc_memory_pool, "jemalloc": pa.jemalloc_memory_pool,
                            "system": pa.system_memory_pool}[args.pool]())
    from toolkit.analysis.report import Report

    warnings.simplefilter("ignore")

    def line(what: str, cpu: float) -> None:
        print(f"{what:<34} cpu {cpu:7.1f} s  rss {status_mb('VmRSS'):7.0f} MB  peak {status_mb('VmHWM'):7.0f} MB  "
              f"arrow {pa.total_allocated_bytes() / 2**20:7.0f} MB ({pa.default_memory_pool().backend_name})",
              flush=True)

    start = time.process_time()
    report = Report(args.results, args.out)
    line("load", time.process_time() - start)
    text = []
    for part in report.parts:
        if args.reset:
            Path("/proc/self/clear_refs").write_text("5")
        start = time.process_time()
        text.append(report.render(part))
        line(part.title[:34], time.process_time() - start)
    (args.out / "summary.md").write_text("\n".join(t for t in text if t))
    if not args.reset:
        print(f"whole run: peak {status_mb('VmHWM'):.0f} MB", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
