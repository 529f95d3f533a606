"""Load a results folder (every run found below it) into pandas DataFrames; and ``replay:DIR``, the model
spec that answers from a results folder's recorded calls (its Provider is here, where the log is read; pyproject.toml
declares it as an entry point)."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from toolkit.llm import Provider
from toolkit.llm.offline import ReplayBackend
from toolkit.record.compact import read_jsonl
from toolkit.record.tables import RENAMED, TABLES


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
        sizes = ", ".join(f"{t}={len(getattr(self, t))}" for t in TABLES if hasattr(self, t))
        return f"Results({sizes})"


class LoadWarning(UserWarning):
    """Something in a results folder was left out while loading (a damaged file, partial games)."""


def run_folders(path: str | Path) -> list[Path]:
    path = Path(path)
    found = {p.parent for pattern in ("runs.parquet", "runs.jsonl") for p in path.rglob(pattern)}
    return sorted(found)


def read_table(folder: Path, table: str, strict: bool = False) -> pd.DataFrame | None:
    """One table of one run folder (Parquet, else JSONL). A damaged file is named in a ``LoadWarning``
    and skipped (``strict=True`` raises ``ValueError``)."""
    parquet, jsonl = folder / f"{table}.parquet", folder / f"{table}.jsonl"
    if parquet.exists():
        try:
            df = pd.read_parquet(parquet)
        except Exception as exc:  # pyarrow raises several kinds for a truncated or foreign file
            message = f"{parquet}: cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}); skipped"
            if strict:
                raise ValueError(message) from exc
            warnings.warn(message, LoadWarning, stacklevel=3)
            return None
    elif jsonl.exists():
        df = pd.DataFrame(read_jsonl(jsonl, strict=strict))
    else:
        return None
    # Results written before a column was renamed read as if written today.
    renames = {old: new for old, new in RENAMED.get(table, {}).items() if old in df.columns and new not in df.columns}
    df = df.rename(columns=renames) if renames else df
    missing = [c for c in TABLES[table] if c not in df.columns]
    df = df.assign(**{c: None for c in missing}) if missing else df
    return df[[*TABLES[table], *(c for c in df.columns if c not in TABLES[table])]]  # the documented order


# What identifies a row of each table: two rows with the same key are one row read twice (a copied run folder).
KEYS = {"runs": ("run_id",), "games": ("game_id",), "players": ("game_id", "seat"), "events": ("game_id", "seq"),
        "calls": ("call_id",), "sessions": ("session_id",), "attempts": ("call_id", "attempt")}


def distinct_runs(folders: list[Path], strict: bool = False) -> list[Path]:
    """The run folders, each run once: a folder whose run id an earlier folder has (a copy of a run inside
    the results folder) is left out with a ``LoadWarning``, so its games are not counted twice."""
    seen: dict[str, Path] = {}
    kept = []
    for folder in folders:
        runs = read_table(folder, "runs", strict)
        ids = set(runs["run_id"].dropna()) if runs is not None else set()
        again = sorted(i for i in ids if i in seen)
        if again:
            warnings.warn(f"{folder}: a copy of run {again[0]} (also in {seen[again[0]]}); left out",
                          LoadWarning, stacklevel=3)
            continue
        seen.update(dict.fromkeys(ids, folder))
        kept.append(folder)
    return kept


def partial_game_ids(tables: dict[str, pd.DataFrame]) -> set[str]:
    """Games that started (a game writes its first event as it starts) but have no ``games`` row: a process
    died while playing them. Calls logged under a game_id with no events (an Action used on its own) are
    not games and are kept."""
    finished = set(tables["games"]["game_id"].dropna())
    started: set[str] = set()
    for table in ("events", "players"):
        if table in tables and "game_id" in tables[table]:
            started |= set(tables[table]["game_id"].dropna())
    return started - finished


def truncated_game_ids(tables: dict[str, pd.DataFrame]) -> dict[str, str]:
    """Finished games whose event log is cut short, each with how: fewer events rows than its games row says
    it wrote (``n_events``), or a gap in its events' ``seq`` (0, 1, 2, ... with none missing; results written
    before ``n_events`` was kept are checked by this alone)."""
    games, events = tables["games"], tables["events"]
    if games.empty or "game_id" not in events:
        return {}
    stats = (pd.DataFrame({"game_id": events["game_id"], "seq": pd.to_numeric(events["seq"], errors="coerce")})
             .groupby("game_id")["seq"].agg(["size", "max"]))
    g = games[["game_id"]].dropna().join(stats, on="game_id")
    n = g["size"].fillna(0)
    want = pd.to_numeric(games.loc[g.index, "n_events"], errors="coerce") if "n_events" in games else n * float("nan")
    short = want.notna() & (n < want)
    gap = ~short & (n > 0) & (n < g["max"] + 1)
    out = {gid: f"{int(k)} of its {int(w)} events" for gid, k, w in zip(g["game_id"][short], n[short], want[short])}
    out.update({gid: f"{int(k)} events with seq up to {int(top)}"
                for gid, k, top in zip(g["game_id"][gap], n[gap], g["max"][gap])})
    return out


def load(path: str | Path, complete_games: bool = True, strict: bool = False) -> Results:
    """All runs under ``path`` (finished runs from Parquet, killed ones from their JSONL).

    By default only complete games are kept: a game is complete when its ``games`` row exists; the rows
    (players, events, calls) a killed process left for a game it never finished (a resumed cell plays that seed
    again) are left out,
    and a ``LoadWarning`` says how many games that was. A game whose event log is truncated (``truncated_game_ids``)
    is incomplete too: named in a ``LoadWarning`` and left out (kept with ``complete_games=False``). Damaged
    files and lines are skipped with a warning naming them; ``strict=True`` raises instead."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no results folder at {path}")
    if not path.is_dir():
        raise NotADirectoryError(f"{path} is a file; give the results folder that holds it")
    tables: dict[str, pd.DataFrame] = {}
    folders = distinct_runs(run_folders(path), strict)
    for table, columns in TABLES.items():
        parts = [df for f in folders if (df := read_table(f, table, strict)) is not None and len(df)]
        tables[table] = (pd.concat(parts, ignore_index=True) if parts
                         else pd.DataFrame({c: pd.Series(dtype="object") for c in columns}))
        key = [c for c in KEYS.get(table, ()) if c in tables[table].columns]
        if key and len(key) == len(KEYS[table]) and len(tables[table]):
            doubled = tables[table].duplicated(subset=key, keep="first")
            if doubled.any():
                warnings.warn(f"{path}: {int(doubled.sum())} duplicated {table} row(s) (same {', '.join(key)}) "
                              "kept once", LoadWarning, stacklevel=2)
                tables[table] = tables[table][~doubled].reset_index(drop=True)
    truncated = truncated_game_ids(tables)
    if truncated:  # named whether or not they are kept: a metric over half a game's events is wrong
        shown = "; ".join(f"{g}: {how}" for g, how in list(truncated.items())[:5])
        more = f"; and {len(truncated) - 5} more" if len(truncated) > 5 else ""
        warnings.warn(f"{path}: {len(truncated)} game{'s' if len(truncated) > 1 else ''} with a truncated event "
                      f"log ({shown}{more}): incomplete" + (", left out" if complete_games else ""),
                      LoadWarning, stacklevel=2)
    if complete_games and truncated:
        for table in TABLES:
            frame_ = tables[table]
            if "game_id" in frame_.columns and len(frame_):
                tables[table] = frame_[~frame_["game_id"].isin(truncated)].reset_index(drop=True)
    if complete_games:
        partial = partial_game_ids(tables)
        if partial:
            for table in ("players", "events", "calls"):
                frame_ = tables[table]
                tables[table] = frame_[~frame_["game_id"].isin(partial)].reset_index(drop=True)
            warnings.warn(f"{path}: left out {len(partial)} partial game{'s' if len(partial) > 1 else ''} "
                          "(they have rows but no games row: killed or stopped mid-game); "
                          "load(..., complete_games=False) "
                          "includes them", LoadWarning, stacklevel=2)
    return Results(**{t: tables[t] for t in Results.__dataclass_fields__ if t in tables})


def recorded_calls(path: str | Path, game_id: str | None = None) -> list[dict]:
    """The ``calls`` rows of a results folder (or of one game), in the order they were made."""
    calls = load(path).calls
    if game_id is not None:
        calls = calls[calls["game_id"] == game_id]
    if calls.empty:
        raise ValueError(f"replay:{path}: no recorded calls" + (f" for game {game_id}" if game_id else ""))
    return calls.sort_values(["game_id", "seq"]).to_dict("records")


def replay_backend(arg: str, config: object) -> ReplayBackend:
    return ReplayBackend(recorded_calls(arg), name=f"replay:{Path(arg).name}")


PROVIDER = Provider("replay", replay_backend, "replay:DIR", arg="required")  # an entry point in pyproject.toml


def games_with_params(results: Results) -> pd.DataFrame:
    """The games table with each run's parameters (the runs table's config) as columns: the one join of runs
    to games, for the report, sweeps and checks. A parameter the games table already has (``seed``,
    ``preset``) keeps the games table's value; ``results_dir`` (where a cell wrote, not a condition) is left out;
    a dict or list parameter becomes JSON text."""
    if results.runs.empty:
        return results.games.copy()
    params = pd.DataFrame([{"run_id": r.run_id, **{k: (json.dumps(v) if isinstance(v, (dict, list)) else v)
                                                   for k, v in json.loads(r.config or "{}").items()}}
                           for r in results.runs.itertuples()])
    params = params.drop(columns=[c for c in params.columns
                                  if c == "results_dir" or (c in results.games.columns and c != "run_id")])
    return results.games.merge(params, on="run_id", how="left")
