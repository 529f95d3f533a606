"""A results folder as a Hugging Face dataset folder: ``data/<table>.parquet`` for every non-empty table and a
``README.md`` dataset card whose YAML header names one config per table (``configs: [{config_name, data_files}]``),
so ``datasets.load_dataset(folder, "games")`` opens a table; the card lists each table's rows and columns, and
each run (a sweep or tournament cell) with its conditions, its headline rate with a 95% interval and n (the
village's win rate over its games, the success rate over its sessions) and its calls' tokens.
Every text cell is masked again (secrets) and, without content, the message columns are emptied.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from toolkit.core.files import inside
from toolkit.analysis.intervals import proportion
from toolkit.core.secrets import Redactor
from toolkit.export.common import OMITTED, by_key, conditions_by_run, tokens
from toolkit.record.tables import TABLES

CONTENT_COLUMNS = {"events": ["text"], "calls": ["messages", "response_text", "parsed"],
                   "tool_calls": ["args"], "players": ["reflection", "experience", "strategy"]}
KEEP_WITHOUT_CONTENT = {"players": ["reflection", "experience"]}  # flags, not text


def _masked(frame: pd.DataFrame, table: str, content: bool, mask: Redactor) -> pd.DataFrame:
    frame = frame.copy()
    for column in frame.columns:
        if not (pd.api.types.is_object_dtype(frame[column]) or pd.api.types.is_string_dtype(frame[column])):
            continue
        if not content and column in CONTENT_COLUMNS.get(table, []) and \
                column not in KEEP_WITHOUT_CONTENT.get(table, []):
            frame[column] = frame[column].where(frame[column].isna(), OMITTED)
            continue
        values = frame[column].dropna().unique()  # mask each distinct text once (names, roles repeat)
        masked = {v: mask(v) for v in values if isinstance(v, str)}
        if any(k != v for k, v in masked.items()):
            frame[column] = frame[column].map(lambda v: masked.get(v, v) if isinstance(v, str) else v)
    return frame


def _rate(name: str, hits: int, n: int) -> str:
    if not n:
        return ""
    r = proportion(hits, n)
    return f"{name} {r['rate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] (n = {n}, 95% {r['method']})"


# What the card shows of a run's conditions (the runs table holds them whole): each text up to VALUE_LIMIT
# characters, all of them up to CELL_LIMIT
VALUE_LIMIT, CELL_LIMIT = 200, 2000


def _cut(value, limit: int = VALUE_LIMIT):
    if isinstance(value, str):
        return value if len(value) <= limit else value[: limit - 1] + "…"
    if isinstance(value, dict):
        return {k: _cut(v) for k, v in value.items()}
    return [_cut(v) for v in value] if isinstance(value, list) else value


def code(text: str) -> str:
    """``text`` as a Markdown code span in a table cell: shown as written, at most ``CELL_LIMIT`` characters. Its
    fence is one backtick longer than any run of backticks in it, so none ends the span early (after which a
    condition's ``<img onerror=...>`` or ``<script>`` was the card's own markup); a pipe is escaped (GFM splits a
    row at it even inside code)."""
    text = _cut(text, CELL_LIMIT)
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text[:1] == "`" or text[-1:] == "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}".replace("|", "\\|")


def runs_table(results, mask: Redactor, used: dict[str, dict] | None = None) -> list[str]:
    """One row per run: its conditions, its headline rate with its interval and n, its tokens (``used``: each
    run's calls' ``tokens``, when the calls are not in ``results``)."""
    cells = conditions_by_run(results, mask)
    games, sessions = by_key(results.games, "run_id"), by_key(results.sessions, "run_id")
    if used is None:
        used = {run_id: tokens(calls) for run_id, calls in by_key(results.calls, "run_id").items()}
    lines = ["| run | conditions | headline | prompt tokens | completion tokens |", "|---|---|---|---|---|"]
    for run_id, conditions in cells.items():
        g, s = games.get(run_id, []), sessions.get(run_id, [])
        headline = "; ".join(h for h in (
            _rate("village win rate", sum(x.get("winner") == "village" for x in g), len(g)),
            _rate("success rate", sum(bool(x.get("success")) for x in s), len(s))) if h)
        t = used.get(run_id) or tokens([])
        note = " (estimated)" if t["tokens_estimated"] else ""
        lines.append(f"| {run_id} | {code(json.dumps(_cut(conditions), ensure_ascii=False))} | "
                     f"{headline or '(no games or sessions)'} | "
                     f"{t['prompt_tokens']}{note} | {t['completion_tokens']}{note} |")
    return lines


def card(tables: dict[str, tuple[int, list[str]]], source: str, runs: list[str] = ()) -> str:
    """The dataset card: ``tables`` holds each written table's rows and columns."""
    header = {"configs": [{"config_name": t, "data_files": [{"split": "train", "path": f"data/{t}.parquet"}]}
                          for t in tables], "tags": ["llm-agents", "werewolf", "agent-trajectories"]}
    lines = ["---", yaml.safe_dump(header, sort_keys=False).strip(), "---", "",
             "# llm-agent-toolkit results", "",
             f"Exported from `{source}` by `python -m toolkit export hf`. One config per table; ids join them "
             "(`game_id`, `call_id`, `session_id`, `run_id`). Load one with "
             "`datasets.load_dataset(\"<this folder>\", \"games\")`.", "",
             "| config | rows | columns |", "|---|---|---|"]
    lines += [f"| {t} | {n} | {', '.join(columns)} |" for t, (n, columns) in tables.items()]
    if runs:
        lines += ["", "## Runs", "", "Each run (a sweep or tournament cell) with the conditions that tell it apart, "
                  "its headline rate (95% interval, n) and the tokens of its calls:", "", *runs]
    return "\n".join(lines) + "\n"


def write(results, out: Path, content: bool = True, source: str = "") -> list[Path]:
    """``data/<table>.parquet`` per non-empty table and the card; ``results`` a ``Results``, or a ``Study`` whose
    tables are read and written a bounded number of rows at a time (the same rows in the same order)."""
    from toolkit.export.study import Study

    mask = Redactor()
    (out / "data").mkdir(parents=True, exist_ok=True)
    written, shapes, used = [], {}, {}
    for table in TABLES:
        if not hasattr(results, table) and not isinstance(results, Study):
            continue
        pieces = results.rows(table) if isinstance(results, Study) else iter([getattr(results, table)])
        path = inside(out / "data", table, ".parquet")
        n, columns, writer = 0, [], None
        try:
            for piece in pieces:
                if not len(piece):
                    continue
                frame = _masked(piece, table, content, mask)
                if table == "calls":  # the columns tokens() reads, not the prompts as Python dicts
                    counted = [c for c in ("run_id", "prompt_tokens", "completion_tokens", "usage_estimated")
                               if c in piece]
                    for run_id, calls in by_key(piece[counted], "run_id").items():
                        t, more = used.setdefault(run_id, tokens([])), tokens(calls)
                        used[run_id] = {k: (t[k] or more[k]) if k == "tokens_estimated" else t[k] + more[k]
                                        for k in t}
                if not isinstance(results, Study):  # one frame: as pandas writes it
                    frame.to_parquet(path, index=False)
                else:
                    part = pa.Table.from_pandas(frame, preserve_index=False)
                    if writer is None:
                        schema = _schema(part.schema, results.streamed(table))
                        writer = pq.ParquetWriter(path, schema)
                    writer.write_table(part.cast(writer.schema) if part.schema != writer.schema else part)
                n, columns = n + len(frame), list(frame.columns)
                del piece, frame  # before the next piece is read
        finally:
            if writer is not None:
                writer.close()
        if n:
            shapes[table] = (n, columns)
            written.append(path)
    readme = inside(out, "README", ".md")
    whole = results.whole if isinstance(results, Study) else results  # every game, as the tables hold them
    readme.write_text(mask(card(shapes, source, runs_table(whole, mask, used))), encoding="utf-8")
    return written + [readme]


def _schema(first: pa.Schema, files) -> pa.Schema:
    """The file's schema from its first piece's: a column empty in that piece takes the type the table's other
    rows give it (``TableFiles.arrow_type``)."""
    if files is None:
        return first
    for i, f in enumerate(first):
        if pa.types.is_null(f.type) and (kind := files.arrow_type(f.name)) is not None:
            first = first.set(i, f.with_type(kind))
    return first
