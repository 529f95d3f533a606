"""Load a results folder (every run found below it) into pandas DataFrames; and ``replay:DIR``, the model
spec that answers from a results folder's recorded calls (its Provider is here, where the log is read; pyproject.toml
declares it as an entry point)."""

from __future__ import annotations

import json
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from toolkit.core.files import FileError
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
    endpoints: pd.DataFrame = field(default_factory=lambda: pd.DataFrame({c: [] for c in TABLES["endpoints"]}))

    def __repr__(self) -> str:
        sizes = ", ".join(f"{t}={len(getattr(self, t))}" for t in TABLES if hasattr(self, t))
        return f"Results({sizes})"


class LoadWarning(UserWarning):
    """Something in a results folder was left out while loading (a damaged file, partial games)."""


def run_folders(path: str | Path) -> list[Path]:
    path = Path(path)
    found = {p.parent for pattern in ("runs.parquet", "runs.jsonl") for p in path.rglob(pattern)}
    return sorted(found)


def results_folder(path: str | os.PathLike, what: str = "results folder") -> Path:
    """An existing folder that holds at least one run (a ``FileError`` of one line naming it, if not)."""
    p = Path(path)
    if not p.exists():
        raise FileError(f"{path}: no such {what}")
    if not p.is_dir():
        raise FileError(f"{path}: is a file; give the {what} that holds runs")
    if not run_folders(p):
        raise FileError(f"{path}: no runs found in this {what} (nothing has been written there yet)")
    return p


def _cannot_read(path: Path, exc: Exception, strict: bool) -> None:
    message = f"{path}: cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}); skipped"
    if strict:
        raise ValueError(message) from exc
    warnings.warn(message, LoadWarning, stacklevel=4)


def read_table(folder: Path, table: str, strict: bool = False) -> pd.DataFrame | None:
    """One table of one run folder (Parquet, else JSONL). A damaged file is named in a ``LoadWarning``
    and skipped (``strict=True`` raises ``ValueError``)."""
    parquet, jsonl = folder / f"{table}.parquet", folder / f"{table}.jsonl"
    if parquet.exists():
        try:
            df = pd.read_parquet(parquet)
        except Exception as exc:  # pyarrow raises several kinds for a truncated or foreign file
            _cannot_read(parquet, exc, strict)
            return None
    elif jsonl.exists():
        df = pd.DataFrame(read_jsonl(jsonl, strict=strict))
    else:
        return None
    # Results written before a column was renamed read as if written today.
    renames = {old: new for old, new in RENAMED.get(table, {}).items() if old in df.columns and new not in df.columns}
    return df.rename(columns=renames) if renames else df


def shaped(df: pd.DataFrame, table: str, columns: list[str] | None = None) -> pd.DataFrame:
    """``columns`` (None: the table's documented columns, in order, then any extras); a column the files do
    not have is there, empty."""
    names = list(columns) if columns is not None else [*TABLES[table], *(c for c in df.columns
                                                                          if c not in TABLES[table])]
    missing = [c for c in names if c not in df.columns]
    df = df.assign(**{c: None for c in missing}) if missing else df
    return df if list(df.columns) == names else df[names]


def _nulls_as_none(table: pa.Table) -> pa.Table:
    """A column with no value reads as None (object), whatever type its files declare, as it always has."""
    for i, column in enumerate(table.columns):
        if column.null_count == len(column) and column.type != pa.null():
            table = table.set_column(i, table.field(i).name, pa.nulls(len(column)))
    return table


class Tables:
    """The tables' files under a results folder, each table read with one Arrow dataset scan over all its
    Parquet files (the cost of one file per table, not one per run) plus the JSONL of runs that were killed.
    A file the scan cannot take (truncated, a column renamed since) sends that table down the per-file path,
    which names the damaged file in a ``LoadWarning`` and reads the rest."""

    def __init__(self, folders: list[Path], strict: bool = False):
        self.folders, self.strict = folders, strict

    def files(self, table: str) -> tuple[list[Path], list[Path]]:
        parquet = [f / f"{table}.parquet" for f in self.folders if (f / f"{table}.parquet").exists()]
        jsonl = [f / f"{table}.jsonl" for f in self.folders
                 if not (f / f"{table}.parquet").exists() and (f / f"{table}.jsonl").exists()]
        return parquet, jsonl

    def dataset(self, table: str, files: list[Path]) -> ds.Dataset | None:
        """One dataset over the table's Parquet files, its schema the union of theirs (null goes into any type,
        int into float); None when a file needs the per-file path."""
        try:
            factory = ds.FileSystemDatasetFactory(pafs.LocalFileSystem(), [str(f) for f in files],
                                                  ds.ParquetFileFormat())
            schema = factory.inspect(promote_options="permissive")
        except (pa.ArrowException, OSError):
            return None
        if any(old in schema.names for old in RENAMED.get(table, {})):
            return None
        return factory.finish(schema)

    def read(self, table: str, columns: list[str] | None = None, leave_out: set[str] = frozenset()) -> pd.DataFrame:
        """The table (``columns`` of it, or all), without the rows of the games in ``leave_out``."""
        parquet, jsonl = self.files(table)
        parts, scanned = [], None
        if parquet and (dataset := self.dataset(table, parquet)) is not None:
            names = [c for c in columns if c in dataset.schema.names] if columns is not None else None
            where = (~ds.field("game_id").isin(pa.array(sorted(leave_out), pa.string()))
                     if leave_out and "game_id" in dataset.schema.names else None)
            try:
                scanned = _nulls_as_none(dataset.to_table(columns=names, filter=where)).to_pandas()
                parts.append(scanned)
            except (pa.ArrowException, OSError):
                scanned = None
        per_file = [f.parent for f in jsonl] + ([f.parent for f in parquet] if scanned is None else [])
        for folder in sorted(per_file):
            df = read_table(folder, table, self.strict)
            if df is not None and len(df):
                if leave_out and "game_id" in df.columns:
                    df = df[~df["game_id"].isin(leave_out)]
                parts.append(df)
        parts = [p for p in parts if len(p)]
        if not parts:
            return pd.DataFrame({c: pd.Series(dtype="object") for c in (columns or TABLES[table])})
        df = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].reset_index(drop=True)
        return shaped(df, table, columns)

    def batches(self, table: str, columns: list[str], rows: int = 1 << 17) -> Iterator[pa.Table]:
        """The table's ``columns`` as Arrow tables of at most about ``rows`` rows each (bounded memory whatever
        the table's size; a killed run's JSONL comes whole); a column the files lack is null."""
        parquet, jsonl = self.files(table)
        dataset = self.dataset(table, parquet) if parquet else None
        pending, size = [], 0
        if dataset is not None:
            names = [c for c in columns if c in dataset.schema.names]
            # one batch at a time: by default the scan reads 16 batches of 4 files ahead, on threads, and buffers
            # a file's column chunks (over 1 GB of prompts held at 10,000 games)
            for batch in dataset.to_batches(columns=names, batch_size=min(rows, 1 << 17), batch_readahead=1,
                                            fragment_readahead=1, use_threads=False,
                                            fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=False)):
                pending.append(batch)
                size += batch.num_rows
                if size >= rows:
                    yield _complete(pa.Table.from_batches(pending), columns)
                    pending, size = [], 0
            if pending:
                yield _complete(pa.Table.from_batches(pending), columns)
        for folder in sorted([f.parent for f in jsonl] + ([f.parent for f in parquet] if dataset is None else [])):
            df = read_table(folder, table, self.strict)
            if df is not None and len(df):
                yield _complete(pa.Table.from_pandas(shaped(df, table, columns).astype(object), preserve_index=False),
                                columns)


def _complete(table: pa.Table, columns: list[str]) -> pa.Table:
    for name in columns:
        if name not in table.column_names:
            table = table.append_column(name, pa.nulls(table.num_rows))
    return table.select(columns)


def distinct_runs(folders: list[Path], strict: bool = False) -> list[Path]:
    """The run folders, each run once: a folder whose run id an earlier folder has (a copy of a run inside
    the results folder) is left out with a ``LoadWarning``, so its games are not counted twice."""
    ids: dict[Path, set[str]] = {f: set() for f in folders}
    parquet = [f for f in folders if (f / "runs.parquet").exists()]
    dataset = Tables(parquet, strict).dataset("runs", [f / "runs.parquet" for f in parquet]) if parquet else None
    scanned = set(parquet) if dataset is not None else set()
    rest = [f for f in folders if f not in scanned]
    if dataset is not None:
        for tagged in dataset.scanner(columns=["run_id"]).scan_batches():
            ids[Path(tagged.fragment.path).parent].update(tagged.record_batch["run_id"].drop_null().to_pylist())
    for folder in rest:
        runs = read_table(folder, "runs", strict)
        ids[folder] = set(runs["run_id"].dropna()) if runs is not None and "run_id" in runs else set()
    seen: dict[str, Path] = {}
    kept = []
    for folder in folders:
        again = sorted(i for i in ids[folder] if i in seen)
        if again:
            warnings.warn(f"{folder}: a copy of run {again[0]} (also in {seen[again[0]]}); left out",
                          LoadWarning, stacklevel=3)
            continue
        seen.update(dict.fromkeys(ids[folder], folder))
        kept.append(folder)
    return kept


# What identifies a row of each table: two rows with the same key are one row read twice (a copied run folder).
KEYS = {"runs": ("run_id",), "games": ("game_id",), "players": ("game_id", "seat"), "events": ("game_id", "seq"),
        "calls": ("call_id",), "sessions": ("session_id",), "attempts": ("call_id", "attempt"),
        "endpoints": ("run_id", "endpoint")}


def game_stats(tables: Tables) -> tuple[pd.DataFrame, set[str]]:
    """Per game with events: their number (``size``) and highest ``seq`` (``max``); and every game id the
    players table names. Read a batch at a time: the events table itself is never held."""
    parts = []
    for part in tables.batches("events", ["game_id", "seq"]):
        seq = pc.cast(part["seq"], pa.float64(), safe=False) if not pa.types.is_floating(part["seq"].type) \
            else part["seq"]
        grouped = (pa.table({"game_id": part["game_id"].cast(pa.string()), "seq": seq}).group_by("game_id")
                   .aggregate([("seq", "count", pc.CountOptions(mode="all")), ("seq", "max")]))
        parts.append(grouped.to_pandas())
    stats = (pd.concat(parts).dropna(subset=["game_id"]).groupby("game_id")
             .agg(size=("seq_count", "sum"), max=("seq_max", "max")) if parts
             else pd.DataFrame({"size": [], "max": []}))
    seated: set[str] = set()
    for part in tables.batches("players", ["game_id"]):
        seated.update(pc.unique(part["game_id"].cast(pa.string())).drop_null().to_pylist())
    return stats, seated


def resumed_games(tables: Tables, partial: set[str], games: pd.DataFrame) -> set[str]:
    """The partial games (rows, no games row) that a later run of the same study folder played again to the end:
    a game with the same seed (its id is ``g<seed>-<hex>``) finished in a run folder beside the partial game's
    (the cell a resumed study plays again). The partial game's run is read from its calls rows; a game without
    any (rule-based seats) is placed only where every run shares one folder (one cell loaded)."""
    if not partial or games.empty or not {"run_id", "seed"} <= set(games.columns):
        return set()
    where = {f.name: f.parent for f in tables.folders}  # a run's folder is named by its id
    done = {(where.get(r), int(s)) for r, s in zip(games["run_id"], games["seed"]) if pd.notna(s) and r in where}
    calls = tables.read("calls", ["game_id", "run_id"])
    runs = calls[calls["game_id"].isin(partial)].drop_duplicates("game_id") if {"game_id", "run_id"} <= set(
        calls.columns) else pd.DataFrame({"game_id": [], "run_id": []})
    folder = dict(zip(runs["game_id"], (where.get(r) for r in runs["run_id"])))
    parents = set(where.values())
    out = set()
    for game_id in partial:
        seed = re.match(r"g(-?\d+)-", str(game_id))
        parent = folder.get(game_id, next(iter(parents)) if len(parents) == 1 else None)
        if seed and parent is not None and (parent, int(seed.group(1))) in done:
            out.add(game_id)
    return out


def truncated_game_ids(games: pd.DataFrame, stats: pd.DataFrame) -> dict[str, str]:
    """Finished games whose event log is cut short, each with how: fewer events rows than its games row says
    it wrote (``n_events``), or a gap in its events' ``seq`` (0, 1, 2, ... with none missing; results written
    before ``n_events`` was kept are checked by this alone). ``stats``: ``game_stats``'s per-game events."""
    if games.empty or stats.empty:
        return {}
    g = games[["game_id"]].dropna().join(stats, on="game_id")
    n = g["size"].fillna(0)
    want = pd.to_numeric(games.loc[g.index, "n_events"], errors="coerce") if "n_events" in games else n * float("nan")
    short = want.notna() & (n < want)
    gap = ~short & (n > 0) & (n < g["max"] + 1)
    out = {gid: f"{int(k)} of its {int(w)} events" for gid, k, w in zip(g["game_id"][short], n[short], want[short])}
    out.update({gid: f"{int(k)} events with seq up to {int(top)}"
                for gid, k, top in zip(g["game_id"][gap], n[gap], g["max"][gap])})
    return out


# Over 60 lines for its docstring (14 lines): the code is 51.
def load(path: str | Path, complete_games: bool = True, strict: bool = False,
         columns: dict[str, list[str] | None] | None = None) -> Results:
    """All runs under ``path`` (finished runs from Parquet, killed ones from their JSONL).

    By default only complete games are kept: a game is complete when its ``games`` row exists; the rows
    (players, events, calls, beliefs) a killed process left for a game it never finished (a resumed cell plays
    that seed again) are left out, and a ``LoadWarning`` says how many games that was (not counting the games a
    later run of the same folder finished with the same seed: a resumed study, ``resumed_games``). A game whose event
    log is truncated (``truncated_game_ids``) is incomplete too: named in a ``LoadWarning`` and left out (kept
    with ``complete_games=False``). Damaged files and lines are skipped with a warning naming them;
    ``strict=True`` raises instead.

    ``columns`` reads only what a caller needs: {table: its columns, or None for all of them}; the tables it
    does not name come back empty. The prompts (``calls.messages``) are most of a study's bytes: a summary that
    counts games reads ``{"games": None}`` and never touches them. The completeness checks read only the
    events' ``game_id`` and ``seq`` (a batch at a time)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no results folder at {path}")
    if not path.is_dir():
        raise NotADirectoryError(f"{path} is a file; give the results folder that holds it")
    wanted = {t: None for t in TABLES} if columns is None else dict(columns)
    unknown = [t for t in wanted if t not in TABLES]
    if unknown:
        raise ValueError(f"load: no table {unknown[0]!r}; the tables are {', '.join(TABLES)}")
    files = Tables(distinct_runs(run_folders(path), strict), strict)
    # the completeness checks' columns, read whatever the caller asked for (its columns are all it gets back):
    # without run_id and seed a resumed game looked partial, and a summary warned of games a rerun had finished
    games = files.read("games", None if wanted.get("games", ...) is None else
                       list(dict.fromkeys([*wanted["games"], "game_id", "n_events", "run_id", "seed"])))
    stats, seated = game_stats(files)
    truncated = truncated_game_ids(games, stats)
    if truncated:  # named whether or not they are kept: a metric over half a game's events is wrong
        shown = "; ".join(f"{g}: {how}" for g, how in list(truncated.items())[:5])
        more = f"; and {len(truncated) - 5} more" if len(truncated) > 5 else ""
        warnings.warn(f"{path}: {len(truncated)} game{'s' if len(truncated) > 1 else ''} with a truncated event "
                      f"log ({shown}{more}): incomplete" + (", left out" if complete_games else ""),
                      LoadWarning, stacklevel=2)
    leave_out: set[str] = set()
    if complete_games:
        partial = (set(stats.index.dropna()) | seated) - set(games["game_id"].dropna())
        leave_out = set(truncated) | partial
        partial -= resumed_games(files, partial, games)  # played again to the end: nothing is missing
        if partial:
            warnings.warn(f"{path}: left out {len(partial)} partial game{'s' if len(partial) > 1 else ''} "
                          "(they have rows but no games row: killed or stopped mid-game); "
                          "load(..., complete_games=False) "
                          "includes them", LoadWarning, stacklevel=2)
    out: dict[str, pd.DataFrame] = {}
    for table in TABLES:
        if table not in wanted:
            out[table] = pd.DataFrame({c: pd.Series(dtype="object") for c in TABLES[table]})
            continue
        if table == "games":
            frame_ = games[~games["game_id"].isin(leave_out)].reset_index(drop=True) if leave_out else games
            frame_ = shaped(frame_, table, wanted["games"])
        else:
            frame_ = files.read(table, wanted[table], leave_out)
        key = list(KEYS.get(table, ()))
        if key and all(c in frame_.columns for c in key) and len(frame_):
            doubled = frame_.duplicated(subset=key, keep="first")
            if doubled.any():
                warnings.warn(f"{path}: {int(doubled.sum())} duplicated {table} row(s) (same {', '.join(key)}) "
                              "kept once", LoadWarning, stacklevel=2)
                frame_ = frame_[~doubled].reset_index(drop=True)
        out[table] = frame_
    return Results(**{t: out[t] for t in Results.__dataclass_fields__})


def scan(path: str | Path, table: str, columns: list[str], games: set[str] | None = None,
         rows: int = 20_000) -> Iterator[pd.DataFrame]:
    """``table``'s ``columns`` of every run under ``path``, about ``rows`` rows at a time: what a pass over the
    prompts (``calls.messages``, most of a study's bytes) needs, in memory bounded by one batch whatever the
    study's size. Only the rows of ``games`` (game ids; None: every row), each row once by its key (``KEYS``,
    the first copy kept, as ``load`` keeps it); runs counted once as ``load`` counts them. The key and, for
    ``games``, ``game_id`` are read whether asked for or not; the frames hold ``columns`` only."""
    if table not in TABLES:
        raise ValueError(f"scan: no table {table!r}; the tables are {', '.join(TABLES)}")
    if games is not None and "game_id" not in TABLES[table]:
        raise ValueError(f"scan: the {table} table has no game_id column to select games by")
    names = list(KEYS.get(table, ()))
    key = [c for c in dict.fromkeys([*names, *(["game_id"] if games is not None else [])]) if c not in columns]
    files = Tables(distinct_runs(run_folders(path)))
    wanted = pa.array(sorted(games), pa.string()) if games is not None else None
    # A key read twice is rare (a copied run's rows): a first pass over the keys alone finds the hashes that occur
    # more than once, and only the rows with one of those are checked against the keys seen (a set of every key
    # was 0.5 GB of Python strings at 100,000 games; the hashes are 8 bytes a row, and only while this pass runs).
    repeated = repeated_hashes(files.batches(table, names, rows), names) if names else None
    seen: set = set()
    for part in files.batches(table, [*columns, *key], rows):
        if wanted is not None:
            part = part.filter(pc.is_in(part["game_id"].cast(pa.string()), value_set=wanted))
        if not part.num_rows:
            continue
        frame = part.to_pandas()
        if repeated is not None and len(repeated):
            suspect = np.isin(key_hashes(frame, names), repeated)
            if suspect.any():  # the first copy of each key, across batches
                keys = frame.loc[suspect, names[0]].tolist() if len(names) == 1 else list(
                    zip(*(frame.loc[suspect, c] for c in names)))
                first = np.ones(len(frame), bool)
                first[suspect] = [i not in seen and not seen.add(i) for i in keys]
                frame = frame[first] if not first.all() else frame
        yield frame[columns].reset_index(drop=True)


def key_hashes(frame: pd.DataFrame, names: list[str]) -> np.ndarray:
    """A 64-bit hash of each row's key (a key's values as objects: the same key hashes alike from any file)."""
    return pd.util.hash_pandas_object(frame[names].astype(object), index=False).to_numpy()


def repeated_hashes(batches: Iterator[pa.Table], names: list[str]) -> np.ndarray:
    """The key hashes that occur on more than one row (sorted): every other row's key is unique."""
    hashes = np.sort(np.concatenate([key_hashes(b.to_pandas(), names) for b in batches] or [np.zeros(0, np.uint64)]))
    return np.unique(hashes[1:][hashes[1:] == hashes[:-1]])


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


def _check_replay(arg: str, seats: list[str] | None, probe: bool) -> None:
    if not arg:
        raise ValueError("replay:DIR needs a results folder")
    results_folder(arg, "replay folder")


PROVIDER = Provider("replay", replay_backend, "replay:DIR", arg="required", check=_check_replay,
                    about="the answers recorded in an earlier run's `calls` table")  # an entry point in pyproject.toml


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
