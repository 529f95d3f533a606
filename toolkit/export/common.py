"""What the exporters share: masked JSON on disk, the rows of one game or one session, and the ids they sort by."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from toolkit.core.secrets import Redactor

OMITTED = "[content omitted]"


def clean(value: Any) -> Any:
    """A table cell as plain JSON: NaN/NA become None, numpy scalars and arrays become Python ones."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if value is pd.NA or value is pd.NaT:
        return None
    if hasattr(value, "tolist"):  # numpy scalar or array
        return clean(value.tolist()) if not hasattr(value, "shape") or value.shape == () else value.tolist()
    return value


def dumps(obj: Any, mask: Redactor, indent: int | None = None) -> str:
    """JSON with every secret masked (values from the environment, key shapes, URL credentials)."""
    return mask(json.dumps(obj, ensure_ascii=False, indent=indent, default=str))


def write_json(path: Path, obj: Any, mask: Redactor, indent: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(obj, mask, indent) + "\n", encoding="utf-8")
    return path


def records(frame: pd.DataFrame | None) -> list[dict]:
    """The rows of ``frame`` as plain Python dicts (NaN and NA as None), through Arrow: row access in pandas is
    slow, and a results folder's tables are Arrow-backed already."""
    if frame is None or frame.empty:
        return []
    try:
        return pa.Table.from_pandas(frame, preserve_index=False).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # a column of mixed Python objects
        return [{k: clean(v) for k, v in row.items()} for row in frame.to_dict("records")]


def by_key(frame: pd.DataFrame | None, key: str) -> dict[Any, list[dict]]:
    """The rows of ``frame`` grouped by ``key``, in table order."""
    out: dict[Any, list[dict]] = {}
    if frame is None or frame.empty or key not in frame:
        return out
    for row in records(frame):
        out.setdefault(row[key], []).append(row)
    return out


def parse_json(text: Any, default: Any = None) -> Any:
    if isinstance(text, (dict, list)):
        return text
    if not isinstance(text, str) or not text:
        return default
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return default


# run settings that say where or how fast a run went, not what it studied: left out of the task arguments
NOT_CONDITIONS = ("command", "out", "results_dir", "spend_dir", "quiet", "progress", "concurrency", "keep_going",
                  "experiment")
# what a study varies most often, listed first (``inspect view``'s TASK ARGS column shows the first few)
FIRST = ("tournament", "cell", "reflection", "experience", "model", "village_model", "wolf_model", "seats",
         "temperature", "preset")


def conditions(runs: list[dict], mask: Redactor, varying: set[str] | frozenset = frozenset()) -> dict[str, Any]:
    """The study's conditions of a log's run (its ``config``: a sweep cell's parameters, a tournament cell's
    name and settings, ``play``'s options): what tells two runs of one study apart (Inspect's task arguments).
    The ``varying`` ones (the grid's variables: ``varying_keys``) come first, so that a viewer that shows the
    first few shows them."""
    out: dict[str, Any] = {}
    for run in runs:
        config = parse_json(run.get("config"), {}) or {}
        out.update((k, v) for k, v in config.items() if k not in NOT_CONDITIONS and v is not None)
    order = sorted(out, key=lambda k: (k not in varying, FIRST.index(k) if k in FIRST else len(FIRST), k))
    return json.loads(mask(json.dumps(finite({k: out[k] for k in order}), default=str)))


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinite number (nested in dicts and lists) as its text (``nan``, ``inf``):
    JSON has no literal for them, and Python writes ``NaN``, which a browser's ``JSON.parse`` (Kaggle's
    viewer) and other strict readers refuse, so one such condition made every replay of its run unreadable."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def varying_keys(runs: list[dict]) -> set[str]:
    """The conditions whose value differs between the runs (a sweep's or a tournament's grid variables)."""
    configs = [parse_json(r.get("config"), {}) or {} for r in runs]
    keys = {k for c in configs for k in c} - set(NOT_CONDITIONS)
    return {k for k in keys if len({json.dumps(c.get(k), sort_keys=True, default=str) for c in configs}) > 1}


def conditions_by_run(results, mask: Redactor) -> dict[str, dict[str, Any]]:
    """Each run's conditions (``conditions``, the grid's variables first), by run id: what every exporter attaches
    to a run's games and sessions, so that the cells of a sweep or a tournament stay apart in every format."""
    runs = records(results.runs)
    varying = varying_keys(runs)
    return {str(r.get("run_id")): conditions([r], mask, varying) for r in runs}


def tokens(calls: list[dict]) -> dict[str, Any]:
    """The tokens of some calls (a game's, a session's, a run's): prompt and completion summed, and whether any
    count is an estimate (offline players, providers that report no usage) rather than measured."""
    return {"prompt_tokens": sum(int(c.get("prompt_tokens") or 0) for c in calls),
            "completion_tokens": sum(int(c.get("completion_tokens") or 0) for c in calls),
            "tokens_estimated": any(bool(c.get("usage_estimated")) for c in calls)}
