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


def runs_table(results, mask: Redactor) -> list[str]:
    """One row per run: its conditions, its headline rate with its interval and n, its tokens."""
    cells = conditions_by_run(results, mask)
    games, sessions = by_key(results.games, "run_id"), by_key(results.sessions, "run_id")
    calls = by_key(results.calls, "run_id")
    lines = ["| run | conditions | headline | prompt tokens | completion tokens |", "|---|---|---|---|---|"]
    for run_id, conditions in cells.items():
        g, s = games.get(run_id, []), sessions.get(run_id, [])
        headline = "; ".join(h for h in (
            _rate("village win rate", sum(x.get("winner") == "village" for x in g), len(g)),
            _rate("success rate", sum(bool(x.get("success")) for x in s), len(s))) if h)
        t = tokens(calls.get(run_id, []))
        note = " (estimated)" if t["tokens_estimated"] else ""
        lines.append(f"| {run_id} | {code(json.dumps(_cut(conditions), ensure_ascii=False))} | "
                     f"{headline or '(no games or sessions)'} | "
                     f"{t['prompt_tokens']}{note} | {t['completion_tokens']}{note} |")
    return lines


def card(tables: dict[str, pd.DataFrame], source: str, runs: list[str] = ()) -> str:
    header = {"configs": [{"config_name": t, "data_files": [{"split": "train", "path": f"data/{t}.parquet"}]}
                          for t in tables], "tags": ["llm-agents", "werewolf", "agent-trajectories"]}
    lines = ["---", yaml.safe_dump(header, sort_keys=False).strip(), "---", "",
             "# llm-agent-toolkit results", "",
             f"Exported from `{source}` by `python -m toolkit export hf`. One config per table; ids join them "
             "(`game_id`, `call_id`, `session_id`, `run_id`). Load one with "
             "`datasets.load_dataset(\"<this folder>\", \"games\")`.", "",
             "| config | rows | columns |", "|---|---|---|"]
    lines += [f"| {t} | {len(f)} | {', '.join(f.columns)} |" for t, f in tables.items()]
    if runs:
        lines += ["", "## Runs", "", "Each run (a sweep or tournament cell) with the conditions that tell it apart, "
                  "its headline rate (95% interval, n) and the tokens of its calls:", "", *runs]
    return "\n".join(lines) + "\n"


def write(results, out: Path, content: bool = True, source: str = "") -> list[Path]:
    mask = Redactor()
    tables = {t: _masked(getattr(results, t), t, content, mask) for t in TABLES
              if hasattr(results, t) and len(getattr(results, t))}
    (out / "data").mkdir(parents=True, exist_ok=True)
    written = []
    for table, frame in tables.items():
        path = inside(out / "data", table, ".parquet")
        frame.to_parquet(path, index=False)
        written.append(path)
    readme = inside(out, "README", ".md")
    readme.write_text(mask(card(tables, source, runs_table(results, mask))), encoding="utf-8")
    return written + [readme]
