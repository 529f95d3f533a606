"""The run log: every row of every table streams to ``<results>/<run_id>/<table>.jsonl`` as it happens
(one line, flushed), and is compacted to ``<table>.parquet`` when the run closes. A run that dies
leaves JSONL files that ``toolkit.record.load.load`` still reads. A run writes only rows of the row classes
(``toolkit.record.rows``: one per table, every column declared). ``CallLog`` writes model calls (the row itself
is built by ``toolkit.llm.Call``) and keeps a game's or session's running totals.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import toolkit
from toolkit.core import data
from toolkit.core.files import file_name
from toolkit.llm import Call
from toolkit.llm.gate import watch
from toolkit.llm.model import now, output_tokens
from toolkit.llm.spec import spec_params
from toolkit.core.secrets import Redactor, redact_obj
from toolkit.record.compact import DamagedLines, compact, read_jsonl  # noqa: F401  (read here by load and tests)
from toolkit.record.rows import COLUMNS, AttemptRow, CallRow, EndpointRow, Row, RunRow
from toolkit.record.spans import live_tracer

try:  # a core dependency; an environment installed before it was one writes the same rows with json
    import orjson
except ImportError:  # pragma: no cover - exercised by tests/record/test_run_log.py with orjson hidden
    orjson = None

_PLAIN = (str, int, bool, type(None))


def row_line(values: dict[str, Any]) -> str:
    """A row as one JSON line. Rows whose values are all plain (text, whole numbers, finite floats, booleans,
    null) go through orjson (~10 times faster than json on a calls row, which holds the whole prompt); anything
    else (NaN, a date, a list, a number past 64 bits) through json as always, ``str`` for what JSON has no type
    for. Both read back to the same values."""
    if orjson is not None and all(type(v) in _PLAIN or (type(v) is float and math.isfinite(v))
                                  for v in values.values()):
        try:
            return orjson.dumps(values).decode()
        except orjson.JSONEncodeError:  # an int past 64 bits, a string with a lone surrogate
            pass
    return json.dumps(values, ensure_ascii=False, default=str)


def git_sha() -> str | None:
    try:
        repo = data.checkout()
        if repo is None:  # an installed wheel: whatever repository its folder sits in is not the toolkit's
            return None
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo,
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


HOT_TABLES = ("calls", "events", "beliefs")


class Run:
    """One run's folder of tables. Use as a context manager, or call ``close()``. ``specs``: the model specs
    the run plays (their provider parameters go in the runs row)."""

    def __init__(self, results_dir: str | Path = "results", experiment: str = "adhoc",
                 config: dict[str, Any] | None = None, seed: int | None = None, run_id: str | None = None,
                 specs: Any = ()):
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        # The folder is named from the experiment (a caller's string): made one safe name, it stays inside
        # results_dir ('../x' cannot place a run elsewhere); a run id given outright must already be one.
        self.run_id = run_id or f"{file_name(experiment, limit=60)}-{stamp}-{uuid.uuid4().hex[:6]}"
        if file_name(self.run_id) != self.run_id:
            raise ValueError(f"run id {self.run_id!r}: letters, digits, '_', '-' and '.' only (it names a folder)")
        self.folder = Path(results_dir) / self.run_id
        self.folder.mkdir(parents=True, exist_ok=True)
        self._files: dict[str, Any] = {}
        # The environment's secret values (read once), key shapes and URL credentials, in every row. The tables
        # written for every decision of every game (calls, events, beliefs) are scanned for OpenAI's sk- shape
        # only: each extra shape is one more scan of every row, and their untrusted text (tool outputs) is
        # redacted with every shape where it enters (toolkit.agent.tools.base). No row is masked twice: none is kept.
        self._redact_all, self._redact_hot = Redactor(remember=0), Redactor(shapes=("sk-",), remember=0)
        config = redact_obj(config or {})
        self._listeners: list[Any] = []
        self.closed = False
        self._tracer = live_tracer()  # opt in: TOOLKIT_OTLP_ENDPOINT (toolkit.record.spans)
        if self._tracer is not None:
            self.subscribe(self._tracer)
        params = {spec: p for spec in dict.fromkeys(specs) if (p := spec_params(spec))}
        self._gates = watch()  # the endpoints' gates while the run is open: its endpoints table
        self.write(RunRow(run_id=self.run_id, experiment=experiment, started_at=now(), git_sha=git_sha(),
                          toolkit_version=toolkit.__version__, config=json.dumps(config, default=str), seed=seed,
                          params=json.dumps(params, sort_keys=True) if params else None))

    def write(self, row: Row) -> None:
        """Append one row to its table (``row.TABLE``), flushed; then tell the subscribers."""
        self.write_all((row,))

    def write_all(self, rows: Iterable[Row]) -> None:
        """Append rows (a step's events) to their tables, flushed once they are all written (one write to the
        file, not one a row); then tell the subscribers, row by row."""
        written: list[tuple[str, dict[str, Any]]] = []
        handles: dict[str, Any] = {}
        try:
            for row in rows:
                if type(row) not in COLUMNS:
                    raise TypeError(f"a run writes rows of toolkit.record.rows "
                                    f"({', '.join(c.__name__ for c in COLUMNS)}), not {type(row).__name__}")
                if self.closed:
                    raise RuntimeError(f"run {self.run_id} is closed")
                table, values = row.TABLE, row.values()
                handle = self._files.get(table)
                if handle is None:
                    handle = self._files[table] = open(self.folder / f"{table}.jsonl", "a", encoding="utf-8")
                mask = self._redact_hot if table in HOT_TABLES else self._redact_all
                handle.write(mask(row_line(values)) + "\n")
                handles[table] = handle
                written.append((table, values))
        finally:
            for handle in handles.values():
                handle.flush()
        for table, values in written:
            for listener in self._listeners:
                listener(table, values)

    def write_log(self, name: str, text: str) -> Path:
        """Append ``text`` (secrets masked) to a log file of the run folder, e.g. a traceback the tables name
        in one line; returns its path."""
        path = self.folder / name
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(self._redact_all(text.rstrip("\n")) + "\n")
        return path

    def subscribe(self, listener) -> None:
        """Call ``listener(table, values)`` after every row is written, ``values`` the row as a dict (widgets show
        calls as they happen)."""
        self._listeners.append(listener)

    def close(self) -> None:
        """Compact every table to Parquet (the JSONL goes once its Parquet is safely written)."""
        if self.closed:
            return
        for figures in self._gates.rows():
            self.write(EndpointRow(run_id=self.run_id, **{**figures, "waited_s": round(figures["waited_s"], 3)}))
        self._gates.close()
        self.closed = True
        for handle in self._files.values():
            handle.close()
        if self._tracer is not None:
            self._tracer.close()
        for table in self._files:
            compact(self.folder, table)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@dataclass
class CallLog:
    """Where a game's or a session's model calls are written, and their running totals (for the games and
    sessions tables). ``next_seq`` is taken when a call is asked, so the order is the order of asking."""

    run: Run | None = None
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    fallbacks: int = 0
    budget: Any = None  # a toolkit.llm.budget.Budget every call is charged to (a study's spending cap)
    _seq: Any = field(default_factory=itertools.count)

    def next_seq(self) -> int:
        return next(self._seq)

    def write(self, call: Call) -> None:
        self.calls += 1
        c = call.completion
        if c is not None:
            self.prompt_tokens += c.prompt_tokens or 0
            self.completion_tokens += c.completion_tokens or 0
            if c.cost_usd is None or self.cost_usd is None:
                self.cost_usd = None  # one call of unknown price makes the total unknown, not smaller
            else:
                self.cost_usd += c.cost_usd
        if self.run is not None:
            self.run.write(CallRow.of(call.row(self.run.run_id)))
            for row in call.attempt_rows():
                self.run.write(AttemptRow.of(row))
        # In the ledger after its row: a process killed between the two leaves the call pending (a call in flight,
        # at its estimate), and a rerun replays its answer from the row; the other order paid it a second time.
        call.settle()
        # a cached or replayed answer was paid for once; a call the model wrapper reserved is in the ledger
        if c is not None and self.budget is not None and not c.cache_hit and not call.free and not call.charged:
            self.budget.charge(c.cost_usd, (c.prompt_tokens or 0)
                               + output_tokens(c.completion_tokens or 0, c.reasoning_tokens))
