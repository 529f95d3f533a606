"""The run log: every row of every table streams to ``<results>/<run_id>/<table>.jsonl`` as it happens
(one line, flushed), and is compacted to ``<table>.parquet`` when the run closes. A run that dies
leaves JSONL files that ``toolkit.results.load`` still reads.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pandas as pd

import toolkit
from toolkit.tables import TABLES

_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-]{12,})")
_URL_CREDENTIALS = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s\"']+@")


def redact(text: str, key: str | None = None) -> str:
    """Remove API keys (the configured one, and anything shaped like ``sk-...``) and credentials in URLs
    from a log line."""
    key = os.environ.get("OPENAI_API_KEY") if key is None else key
    if key and len(key) >= 8 and key in text:
        text = text.replace(key, "[redacted]")
    if "://" in text and "@" in text:  # http://user:password@host → http://***@host
        text = _URL_CREDENTIALS.sub(r"\1***@", text)
    return _KEY_PATTERN.sub("[redacted]", text) if "sk-" in text else text


def git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(toolkit.__file__).parent,
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


class Run:
    """One run's folder of tables. Use as a context manager, or call ``close()``."""

    def __init__(self, results_dir: str | Path = "results", experiment: str = "adhoc",
                 config: dict[str, Any] | None = None, seed: int | None = None, run_id: str | None = None):
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        self.run_id = run_id or f"{experiment}-{stamp}-{uuid.uuid4().hex[:6]}"
        self.folder = Path(results_dir) / self.run_id
        self.folder.mkdir(parents=True, exist_ok=True)
        self._files: dict[str, Any] = {}
        self._key = os.environ.get("OPENAI_API_KEY") or ""
        self._listeners: list[Any] = []
        self.closed = False
        self.write("runs", {"run_id": self.run_id, "experiment": experiment, "started_at": now(),
                            "git_sha": git_sha(), "toolkit_version": toolkit.__version__,
                            "config": json.dumps(config or {}, default=str), "seed": seed})

    def write(self, table: str, row: dict[str, Any]) -> None:
        if table not in TABLES:
            raise KeyError(f"unknown table {table!r}; tables are {sorted(TABLES)}")
        if self.closed:
            raise RuntimeError(f"run {self.run_id} is closed")
        handle = self._files.get(table)
        if handle is None:
            handle = self._files[table] = open(self.folder / f"{table}.jsonl", "a", encoding="utf-8")
        handle.write(redact(json.dumps(row, ensure_ascii=False, default=str), self._key) + "\n")
        handle.flush()
        for listener in self._listeners:
            listener(table, row)

    def subscribe(self, listener) -> None:
        """Call ``listener(table, row)`` after every row is written (widgets show calls as they happen)."""
        self._listeners.append(listener)

    def close(self) -> None:
        """Compact every table to Parquet (the JSONL goes once its Parquet is safely written)."""
        if self.closed:
            return
        self.closed = True
        for handle in self._files.values():
            handle.close()
        for table in self._files:
            compact(self.folder, table)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class DamagedLines(UserWarning):
    """Rows of a JSONL file that could not be parsed and were left out."""


def read_jsonl(path: Path, strict: bool = False) -> list[dict[str, Any]]:
    """Rows of a JSONL file. A torn last line (the process died mid-write) is skipped quietly; a damaged
    line anywhere else is left out with a ``DamagedLines`` warning naming the file and line numbers
    (``strict=True`` raises ``ValueError`` instead)."""
    rows: list[dict[str, Any]] = []
    damaged: list[int] = []
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
                rows.append(row)
            else:
                damaged.append(number)
    if damaged and damaged[-1] == last:
        damaged.pop()  # the row being written when the process died
    if damaged:
        shown = ", ".join(map(str, damaged[:10])) + (", …" if len(damaged) > 10 else "")
        message = (f"{path}: {len(damaged)} damaged line{'s' if len(damaged) > 1 else ''} left out "
                   f"(line{'s' if len(damaged) > 1 else ''} {shown}); {len(rows)} rows read")
        if strict:
            raise ValueError(message)
        import warnings

        warnings.warn(message, DamagedLines, stacklevel=2)
    return rows


def frame(table: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    for column in TABLES[table]:
        if column not in df.columns:
            df[column] = pd.Series(dtype="object")
    return df


def compact(folder: Path, table: str) -> None:
    """JSONL → Parquet, parsed by Arrow in blocks (no Python object per row: a big calls table stays small
    in memory). The JSONL is removed only once its Parquet is safely in place; a JSONL with damaged lines
    is kept as ``<table>.jsonl.damaged`` beside it (the warning names the lines)."""
    import warnings

    import pyarrow.json as pa_json
    import pyarrow.parquet as pq

    source = folder / f"{table}.jsonl"
    if not source.exists():
        return
    target = folder / f"{table}.parquet"
    tmp = target.with_suffix(".parquet.tmp")
    damaged = False
    try:
        arrow = pa_json.read_json(source, read_options=pa_json.ReadOptions(block_size=1 << 24))
        pq.write_table(arrow, tmp)
    except Exception:  # a row Arrow cannot type consistently, or a damaged line: pandas, row by row
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DamagedLines)
            rows = read_jsonl(source)
        for w in caught:
            damaged |= issubclass(w.category, DamagedLines)
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        frame(table, rows).to_parquet(tmp, index=False)
    os.replace(tmp, target)
    if damaged:
        os.replace(source, source.with_name(source.name + ".damaged"))
    else:
        source.unlink()
