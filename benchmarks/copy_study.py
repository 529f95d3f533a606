"""A large study folder made from a smaller one's real games: each run folder of SRC copied K times into DST, each
copy with fresh ids and seeds, so that ``load`` and the report take them for K times as many distinct games (a
run whose id an earlier run has is left out; a row whose key another has is kept once). Playing 100,000 games is
about an hour of CPU here; ten copies of 10,000 played games are a 100,000-game study for what the report's memory
and time grow with (rows), in a few minutes.

Copy k (1..K) of every table: each id column (``run_id``, ``game_id``, ``call_id``, ``session_id``) gets the
suffix ``-c<k>``; ``seed`` is shifted by k times (the largest seed + 1), and so is the seed in ``replay_key``
(``<preset>/<seed>/...``). Everything else (prompts, answers, events, configs) is the original's, byte for byte:
the copies are the same games played again, so the report's rates are the original's with narrower intervals,
and the degeneracy check's "stock line said in two games or more" finds every speech in K games: a benchmark's
input, not a study's. Tables are rewritten a batch at a time (memory bounded by one batch, prompts included).

    python benchmarks/copy_study.py SRC DST [--copies 10] [--first 1] [--one-run]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolkit.record.load import run_folders  # noqa: E402

IDS = ("run_id", "game_id", "call_id", "session_id")


def largest_seed(folders: list[Path]) -> int:
    seeds = [pc.max(pq.read_table(f / "games.parquet", columns=["seed"])["seed"]).as_py()
             for f in folders if (f / "games.parquet").exists()]
    return max((s for s in seeds if s is not None), default=0)


def renamed(batch: pa.RecordBatch, k: int, shift: int) -> pa.RecordBatch:
    """The batch as copy ``k``: ids suffixed, seeds shifted by ``k * shift``."""
    columns = []
    for name, column in zip(batch.schema.names, batch.columns):
        if name in IDS and pa.types.is_string(column.type):
            column = pc.binary_join_element_wise(column, pa.scalar(f"-c{k}"), "")
        elif name == "seed" and pa.types.is_integer(column.type):
            column = pc.add(column, pa.scalar(k * shift, column.type))
        elif name == "replay_key" and pa.types.is_string(column.type):
            parts = pc.split_pattern(column, "/", max_splits=2)
            seed = pc.cast(pc.add(pc.cast(pc.list_element(parts, 1), pa.int64()), k * shift), pa.string())
            column = pc.binary_join_element_wise(pc.list_element(parts, 0), seed, pc.list_element(parts, 2), "/")
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def copy_run(folder: Path, dst: Path, k: int, shift: int) -> int:
    """Copy ``k`` of one run folder's Parquet tables into ``dst``; its rows."""
    dst.mkdir(parents=True, exist_ok=True)
    rows = 0
    for table in sorted(folder.glob("*.parquet")):
        source = pq.ParquetFile(table)
        with pq.ParquetWriter(dst / table.name, source.schema_arrow) as writer:
            for batch in source.iter_batches(batch_size=20_000):
                writer.write_batch(renamed(batch, k, shift))
                rows += batch.num_rows
    return rows


def copy_into_one_run(folder: Path, dst: Path, copies: range, shift: int, row_group: int | None = None) -> int:
    """``copies`` of one run folder's games as ONE run in ``dst`` (a sweep's cell holds its games so: one run of
    N games): every id but ``run_id`` renamed per copy, the runs table's one row kept once; rows. Each of the
    source's row groups is one row group of each copy (a played cell's row groups are its compaction's: about
    2,000 calls each), or, with ``row_group``, the copies are rewritten in row groups of that many rows (the whole
    table in memory at once: for a test's few games)."""
    dst.mkdir(parents=True, exist_ok=True)
    rows = 0
    for table in sorted(folder.glob("*.parquet")):
        source = pq.ParquetFile(table)
        held = []
        with pq.ParquetWriter(dst / table.name, source.schema_arrow) as writer:
            for k in copies if table.stem != "runs" else copies[:1]:
                for i in range(source.num_row_groups):
                    group = source.read_row_group(i)
                    copied = []
                    for batch in group.to_batches():
                        copy = renamed(batch, k, shift)
                        if "run_id" in batch.schema.names:  # the run stays one
                            copy = copy.set_column(batch.schema.get_field_index("run_id"), "run_id",
                                                   batch["run_id"])
                        copied.append(copy)
                    rows += group.num_rows
                    if row_group is None:
                        writer.write_table(pa.Table.from_batches(copied, source.schema_arrow),
                                           row_group_size=max(group.num_rows, 1))
                    else:
                        held += copied
            if row_group is not None and held:
                writer.write_table(pa.Table.from_batches(held, source.schema_arrow), row_group_size=row_group)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=Path, help="a results folder of played games (Parquet: finished runs)")
    parser.add_argument("dst", type=Path, help="the new study's folder (must not exist)")
    parser.add_argument("--copies", type=int, default=10, help="copies of every run (the study is this many times "
                                                                "as large)")
    parser.add_argument("--first", type=int, default=1, help="the first copy's number (copies made apart, e.g. by "
                                                             "two processes, need numbers of their own)")
    parser.add_argument("--one-run", action="store_true", help="the copies of a one-run study as one run of K times "
                        "its games (as a sweep's cell holds them), not K runs")
    args = parser.parse_args(argv)
    if args.dst.exists():
        parser.error(f"{args.dst} exists: give a new folder")
    folders = run_folders(args.src)
    if not folders or any(not (f / "runs.parquet").exists() for f in folders):
        parser.error(f"{args.src}: needs finished runs (runs.parquet) and no killed ones")
    shift = largest_seed(folders) + 1
    start, rows = time.perf_counter(), 0
    if args.one_run:
        if len(folders) != 1:
            parser.error(f"{args.src}: --one-run copies a study of one run; it has {len(folders)}")
        rows = copy_into_one_run(folders[0], args.dst / folders[0].relative_to(args.src),
                                 range(args.first, args.first + args.copies), shift)
    for k in range(args.first, args.first + args.copies) if not args.one_run else ():
        for folder in folders:
            rows += copy_run(folder, args.dst / f"copy{k}" / folder.relative_to(args.src), k, shift)
    print(f"{args.dst}: {args.copies} copies of {len(folders)} run(s) of {args.src}, {rows:,} rows, "
          f"seeds shifted by multiples of {shift}, in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
