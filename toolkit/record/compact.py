"""A table's JSONL → Parquet in bounded batches: compaction holds a few batches of rows, never the table, so a
run of 100,000 games closes in the memory of a run of 100.

The columns' types come from the row classes (``toolkit.record.rows``: a column added there is carried
through with its type); a column no row class declares keeps the type its values have. Arrow parses the file
block by block against those types; a file it cannot parse that way (a damaged line, a column of mixed types,
a line longer than a block) is compacted row by row in two passes over the file, the first to find each
column's type (the union over every row: ``1`` and ``"Player1"`` in one column make it text, with the
non-text values written as JSON), the second to write it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from toolkit.record.tables import ROW_CLASSES

BLOCK_BYTES = 1 << 23  # JSONL Arrow parses at once (a longer line is parsed alone)
BATCH_ROWS = 1024  # rows the row-by-row path holds at once ...
BATCH_BYTES = 1 << 23  # ... or fewer, when they are long
ARROW = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
# A text column with a value longer than this in the first piece (a prompt, an answer) is written without min/max
# statistics: each row group's were a prompt twice, ~7 KB of the ~10 KB of footer a row group of a calls table
# adds (20 MB at 100,000 games). The footer is held by the writer until it closes and parsed by every reader:
# 4,000 games' calls cut in 5,273 row groups took 242 MB to open with them, 172 MB without.
SHORT_TEXT = 64


class DamagedLines(UserWarning):
    """Rows of a JSONL file that could not be parsed and were left out."""


def declared_schema(table: str) -> pa.Schema:
    """The Arrow types of the columns the table's row class declares with one scalar type (``str``,
    ``int | None``...); a column of another type is left to its values."""
    fields = []
    for f in dataclasses.fields(ROW_CLASSES[table]) if table in ROW_CLASSES else ():
        kinds = [k.strip() for k in str(f.type).split("|") if k.strip() != "None"]
        if len(kinds) == 1 and kinds[0] in ARROW:
            fields.append(pa.field(f.name, ARROW[kinds[0]]))
    return pa.schema(fields)


def iter_jsonl(path: Path, damaged: list[int]) -> Iterator[tuple[dict[str, Any], int]]:
    """(row, its length in bytes) for every row of a JSONL file; the numbers of damaged lines go to
    ``damaged`` (a torn last line, the row being written when a process died, is not counted)."""
    last = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            last = number
            try:
                row = json.loads(line)
            except ValueError:
                damaged.append(number)
                continue
            if isinstance(row, dict):
                yield row, len(line)
            else:
                damaged.append(number)
    if damaged and damaged[-1] == last:
        damaged.pop()


def warn_damaged(path: Path, damaged: list[int], n_rows: int, strict: bool = False) -> None:
    """A ``DamagedLines`` warning naming the file and its damaged lines (``strict``: ``ValueError``)."""
    if not damaged:
        return
    shown = ", ".join(map(str, damaged[:10])) + (", …" if len(damaged) > 10 else "")
    s = "s" if len(damaged) > 1 else ""
    message = f"{path}: {len(damaged)} damaged line{s} left out (line{s} {shown}); {n_rows} rows read"
    if strict:
        raise ValueError(message)
    warnings.warn(message, DamagedLines, stacklevel=3)


def read_jsonl(path: Path, strict: bool = False) -> list[dict[str, Any]]:
    """Rows of a JSONL file. A torn last line (the process died mid-write) is skipped quietly; a damaged
    line anywhere else is left out with a ``DamagedLines`` warning naming the file and line numbers
    (``strict=True`` raises ``ValueError`` instead)."""
    damaged: list[int] = []
    rows = [row for row, _ in iter_jsonl(path, damaged)]
    warn_damaged(path, damaged, len(rows), strict)
    return rows


def batches(path: Path, damaged: list[int]) -> Iterator[list[dict[str, Any]]]:
    """The file's rows in lists of at most BATCH_ROWS rows and about BATCH_BYTES."""
    batch: list[dict[str, Any]] = []
    size = 0
    for row, n in iter_jsonl(path, damaged):
        batch.append(row)
        size += n
        if len(batch) >= BATCH_ROWS or size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _union(a: pa.DataType | None, b: pa.DataType) -> pa.DataType | None:
    """The type both values fit (null goes into anything, int into float); None when there is none."""
    if a is None or a == b:
        return b
    try:
        return pa.unify_schemas([pa.schema([("x", a)]), pa.schema([("x", b)])],
                                promote_options="permissive").field("x").type
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None


def _as_text(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value != value:
        return None
    return json.dumps(value, default=str)


def row_schema(path: Path, table: str) -> tuple[pa.Schema, set[str]]:
    """The first pass: every column of the file in order (the declared ones first), each with the union of
    its values' types; and the columns whose values have no common type (written as text)."""
    declared = declared_schema(table)
    found: dict[str, pa.DataType | None] = {f.name: f.type for f in declared}
    order = [*ROW_CLASSES[table].__dataclass_fields__] if table in ROW_CLASSES else []
    text: set[str] = set()
    for batch in batches(path, []):
        for column in dict.fromkeys(k for row in batch for k in row):
            if column not in order:
                order.append(column)
            if column in text:
                continue
            try:
                kind = pa.array([row.get(column) for row in batch]).type  # infer_type reads the first value only
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
                kind = None
            union = _union(found.get(column), kind) if kind is not None else None
            if union is None:
                text.add(column)
            else:
                found[column] = union
    fields = [pa.field(c, pa.string() if c in text else (found.get(c) or pa.null())) for c in order]
    return pa.schema(fields), text


def statistics_columns(part: pa.Table | pa.RecordBatch) -> list[str]:
    """The columns whose min/max statistics the Parquet file keeps: every column but text whose values in
    ``part`` run longer than SHORT_TEXT bytes. Ids, names, numbers and times keep theirs (a reader skips row
    groups by them); nothing skips a row group by its prompts."""
    def short(column: pa.ChunkedArray | pa.Array) -> bool:
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            return True
        longest = pc.max(pc.binary_length(column)).as_py()
        return longest is None or longest <= SHORT_TEXT
    return [name for name, column in zip(part.schema.names, part.columns) if short(column)]


def _compact_rows(source: Path, tmp: Path, table: str) -> list[int]:
    """Row by row, two passes; returns the damaged lines' numbers."""
    schema, text = row_schema(source, table)
    damaged: list[int] = []
    n = 0
    writer = None
    try:
        for batch in batches(source, damaged):
            n += len(batch)
            arrays = [pa.array([_as_text(r.get(f.name)) if f.name in text else r.get(f.name) for r in batch],
                               type=f.type) for f in schema]
            part = pa.record_batch(arrays, schema=schema)
            writer = writer or pq.ParquetWriter(tmp, schema, write_statistics=statistics_columns(part))
            writer.write_batch(part)
    finally:
        if writer is not None:
            writer.close()
    if writer is None:  # no rows: the empty table, every column
        pq.write_table(schema.empty_table(), tmp)
    warn_damaged(source, damaged, n)
    return damaged


def chunks(path: Path, size: int | None = None) -> Iterator[bytes]:
    """The file in pieces of about ``size`` bytes, each ending at the end of a line (a longer line is one
    piece of its own)."""
    rest = b""
    with open(path, "rb") as handle:
        while data := handle.read(size or BLOCK_BYTES):
            data = rest + data
            cut = data.rfind(b"\n") + 1
            rest = data[cut:]
            if cut:
                yield data[:cut]
    if rest.strip():
        yield rest


def _compact_arrow(source: Path, tmp: Path, table: str) -> None:
    """Arrow's parser, one piece of the file at a time, against the declared types (and, for a column no row
    class declares, the type its values have in the first piece). Arrow's own streaming reader reads ahead
    of its parser without a bound, so the pieces are cut here."""
    schema, writer = declared_schema(table), None
    try:
        for piece in chunks(source):
            options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer")
            part = pa_json.read_json(pa.BufferReader(piece), parse_options=options,
                                     read_options=pa_json.ReadOptions(use_threads=False, block_size=len(piece) + 1))
            if writer is None:
                schema = part.schema
                writer = pq.ParquetWriter(tmp, schema, write_statistics=statistics_columns(part))
            if part.schema.names != schema.names:  # a column the first piece did not have
                raise pa.ArrowInvalid(f"new columns {set(part.schema.names) - set(schema.names)}")
            writer.write_table(part.cast(schema))
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        raise ValueError("no rows")  # the row path writes the empty table


def compact(folder: Path, table: str) -> None:
    """JSONL → Parquet in bounded batches. The JSONL is removed only once its Parquet is safely in place; a
    JSONL with damaged lines is kept as ``<table>.jsonl.damaged`` beside it (the warning names the lines)."""
    source = folder / f"{table}.jsonl"
    if not source.exists():
        return
    target = folder / f"{table}.parquet"
    tmp = target.with_suffix(".parquet.tmp")
    damaged: list[int] = []
    try:
        _compact_arrow(source, tmp, table)
    except (pa.ArrowException, ValueError):  # a damaged line, mixed types, a very long line: row by row
        damaged = _compact_rows(source, tmp, table)
    os.replace(tmp, target)
    if damaged:
        os.replace(source, source.with_name(source.name + ".damaged"))
    else:
        source.unlink()
