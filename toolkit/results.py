"""Load a results folder (every run found below it) into pandas DataFrames; and ``replay:DIR``, the model
spec that answers from a results folder's recorded calls (registered here, where the log is read)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from toolkit.llm import register
from toolkit.llm.offline import ReplayBackend
from toolkit.record import read_jsonl
from toolkit.tables import RENAMED, TABLES


@dataclass
class Results:
    runs: pd.DataFrame
    games: pd.DataFrame
    players: pd.DataFrame
    events: pd.DataFrame
    calls: pd.DataFrame
    sessions: pd.DataFrame
    tool_calls: pd.DataFrame
    attempts: pd.DataFrame
    beliefs: pd.DataFrame

    def __repr__(self) -> str:
        sizes = ", ".join(f"{t}={len(getattr(self, t))}" for t in TABLES)
        return f"Results({sizes})"


def run_folders(path: str | Path) -> list[Path]:
    path = Path(path)
    found = {p.parent for pattern in ("runs.parquet", "runs.jsonl") for p in path.rglob(pattern)}
    return sorted(found)


def read_table(folder: Path, table: str) -> pd.DataFrame | None:
    parquet, jsonl = folder / f"{table}.parquet", folder / f"{table}.jsonl"
    if parquet.exists():
        df = pd.read_parquet(parquet)
    elif jsonl.exists():
        df = pd.DataFrame(read_jsonl(jsonl))
    else:
        return None
    # Results written before a column was renamed read as if written today.
    renames = {old: new for old, new in RENAMED.get(table, {}).items() if old in df.columns and new not in df.columns}
    df = df.rename(columns=renames) if renames else df
    missing = [c for c in TABLES[table] if c not in df.columns]
    df = df.assign(**{c: None for c in missing}) if missing else df
    return df[[*TABLES[table], *(c for c in df.columns if c not in TABLES[table])]]  # the documented order


def load(path: str | Path, complete_games: bool = False) -> Results:
    """All runs under ``path`` (finished runs from Parquet, killed ones from their JSONL).

    ``complete_games=True`` keeps only games that have a ``games`` row, dropping the partial rows a killed
    process left for a game it never finished (a resumed cell plays that seed again)."""
    if not Path(path).exists():
        raise FileNotFoundError(f"no results folder at {path}")
    tables: dict[str, pd.DataFrame] = {}
    folders = run_folders(path)
    for table, columns in TABLES.items():
        parts = [df for f in folders if (df := read_table(f, table)) is not None and len(df)]
        tables[table] = (pd.concat(parts, ignore_index=True) if parts
                         else pd.DataFrame({c: pd.Series(dtype="object") for c in columns}))
    if complete_games:
        finished = set(tables["games"]["game_id"])
        for table in ("players", "events", "calls"):
            frame_ = tables[table]
            keep = frame_["game_id"].isin(finished) | frame_["game_id"].isna()
            if table == "calls":
                keep |= frame_["session_id"].notna()
            tables[table] = frame_[keep].reset_index(drop=True)
    return Results(**tables)


def recorded_calls(path: str | Path, game_id: str | None = None) -> list[dict]:
    """The ``calls`` rows of a results folder (or of one game), in the order they were made."""
    calls = load(path).calls
    if game_id is not None:
        calls = calls[calls["game_id"] == game_id]
    if calls.empty:
        raise ValueError(f"replay:{path}: no recorded calls" + (f" for game {game_id}" if game_id else ""))
    return calls.sort_values(["game_id", "seq"]).to_dict("records")


@register("replay", usage="replay:DIR", arg="required")
def _replay(arg: str, config: object) -> ReplayBackend:
    return ReplayBackend(recorded_calls(arg), name=f"replay:{Path(arg).name}")
