"""A results folder as ``toolkit export`` reads it: a batch of games at a time, in memory flat in the study's size.

``Study(path)`` holds the small tables whole, as ``load`` gives them (runs, games without their configs, engineer
sessions, their tool calls, endpoints: complete games only) and reads the games' own rows (games, players, events,
calls, beliefs; the prompts in ``calls.messages`` are most of a study's bytes, about 140 KB a game) one batch of
games at a time: only the
Parquet row groups that hold one of the batch's games (each row group's game ids are read once, the ids alone),
with the batch's ids as the scan's filter. Every exporter goes through the same loop:

- ``batches(groups)``: one ``Results`` per batch (its games' rows of every game table, the runs whole; no
  sessions), ``BATCH`` games in the games table's order, or the groups of game ids given (an Inspect
  log's games);
- ``rest()``: the engineer sessions, their tool calls and the calls that belong to no game;
- ``rows(table)``: a table in its own order, a bounded number of rows at a time (the Hugging Face export's files).

A frame holds what ``load`` would hold for its rows: the table's columns in order, a row read twice (a copied run
folder) once, and each column's pandas type as the whole table gives it (an integer column with a null anywhere in
the files is float in every batch, a column null throughout is None), so a batch's JSON is the whole load's."""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from toolkit.record.load import (KEYS, LoadWarning, Results, Tables, key_hashes, repeated_hashes, distinct_runs,
                                 load, read_table, run_folders, shaped)
from toolkit.record.tables import TABLES

BATCH = 1000  # games a batch (1,000 games of heuristic players: about 140 MB of prompts as text)
ROWS = 20_000  # rows a piece of ``rows(table)``
GAME_TABLES = ("games", "players", "events", "calls", "beliefs")  # read a batch of games at a time
WHOLE = ("runs", "games", "sessions", "tool_calls", "endpoints")  # small: read once, whole
SCAN = dict(batch_readahead=1, fragment_readahead=1, use_threads=False,  # one batch in flight (Tables.batches)
            fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=False))


def empty(table: str) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in TABLES[table]})


class TableFiles:
    """One table's files: its Parquet files as one dataset, with each row group's game ids and each column's nulls
    (the files' statistics, else the column read once); and the run folders read whole (a killed run's JSONL, or
    every run when a file keeps the dataset from opening, as ``load`` reads them)."""

    def __init__(self, tables: Tables, table: str):
        self.table, self.strict = table, tables.strict
        parquet, jsonl = tables.files(table)
        self.dataset = tables.dataset(table, parquet) if parquet else None
        self.loose = sorted([f.parent for f in jsonl] + ([f.parent for f in parquet] if self.dataset is None else []))
        self.fragments = list(self.dataset.get_fragments()) if self.dataset is not None else []
        names = self.dataset.schema.names if self.dataset is not None else []
        self.by_game = "game_id" in names
        self.rows, self.nulls = 0, dict.fromkeys(names, 0)
        groups: list[tuple[int, int]] = []  # (fragment, row group) of each entry of ids
        ids: list[pa.Array] = []
        for i, fragment in enumerate(self.fragments):
            file = pq.ParquetFile(fragment.path)
            meta = file.metadata
            for k in range(meta.num_row_groups):
                rg = meta.row_group(k)
                self.rows += rg.num_rows
                stats = {rg.column(j).path_in_schema: rg.column(j).statistics for j in range(rg.num_columns)}
                for name in names:
                    if name not in stats:
                        self.nulls[name] += rg.num_rows
                    elif stats[name] is not None and stats[name].has_null_count:
                        self.nulls[name] += stats[name].null_count
                    else:
                        self.nulls[name] += file.read_row_group(k, columns=[name]).column(0).null_count
                if self.by_game:
                    found = (pc.unique(file.read_row_group(k, columns=["game_id"]).column(0).combine_chunks())
                             .cast(pa.string()) if "game_id" in stats else pa.nulls(1, pa.string()))
                    ids.append(found)
                    groups += [(i, k)] * len(found)
        self.ids = pa.concat_arrays(ids) if ids else pa.array([], pa.string())
        self.groups = np.array(groups, dtype=np.int64).reshape(-1, 2)

    def arrow_type(self, name: str) -> pa.DataType | None:
        """The Arrow type a column of this table's frames has written back from pandas (None: unknown)."""
        if self.dataset is None or name not in self.dataset.schema.names:
            return None
        kind = self.dataset.schema.field(name).type
        n = self.nulls.get(name, 0)
        if n and n == self.rows:
            return pa.null()
        return pa.float64() if n and pa.types.is_integer(kind) else kind

    def game_ids(self) -> set[str]:
        """Every game id the table's files hold (the loose runs' too)."""
        found = set(self.ids.drop_null().to_pylist())
        for folder in self.loose:
            df = read_table(folder, self.table, self.strict)
            if df is not None and "game_id" in df:
                found.update(df["game_id"].dropna())
        return found

    def frame(self, table: pa.Table) -> pd.DataFrame:
        """``table`` (rows of the dataset) as pandas types them when the whole table is read (``load``): a column
        null throughout the files as None; an integer or bool column with a null anywhere as float or object."""
        bools = []
        for idx, f in enumerate(table.schema):
            n = self.nulls.get(f.name, 0)
            if n and n == self.rows:
                table = table.set_column(idx, f.name, pa.nulls(table.num_rows))
            elif not n or table.column(idx).null_count:
                continue
            elif pa.types.is_integer(f.type):
                table = table.set_column(idx, f.name, table.column(idx).cast(pa.float64()))
            elif pa.types.is_boolean(f.type):
                bools.append(f.name)
        df = table.to_pandas()
        for name in bools:
            df[name] = df[name].astype(object)
        return df

    def read(self, games: pa.Array | None, none: bool = False) -> pd.DataFrame:
        """The rows of ``games`` (ids) and, with ``none``, those of no game; in the table's order."""
        parts = []
        if self.dataset is not None:
            if not self.by_game:
                pieces = [self.dataset.to_table(**SCAN)] if none else []
            else:
                where = ds.field("game_id").isin(games)
                hit = pc.is_in(self.ids, value_set=games).to_numpy(zero_copy_only=False)
                if none:
                    where = where | ds.field("game_id").is_null()
                    hit |= self.ids.is_null().to_numpy(zero_copy_only=False)
                chosen: dict[int, list[int]] = {}
                for i, k in sorted({(int(i), int(k)) for i, k in self.groups[hit]}):
                    chosen.setdefault(i, []).append(k)
                pieces = [ds.Scanner.from_fragment(self.fragments[i].subset(row_group_ids=ks),
                                                   schema=self.dataset.schema, filter=where, **SCAN).to_table()
                          for i, ks in chosen.items()]
            if pieces and sum(p.num_rows for p in pieces):
                parts.append(self.frame(pa.concat_tables(pieces)))
        wanted = set(games.to_pylist())
        for folder in self.loose:
            df = read_table(folder, self.table, self.strict)
            if df is not None and len(df):
                mine = df["game_id"].isin(wanted) | (df["game_id"].isna() if none else False) \
                    if "game_id" in df else pd.Series(none, index=df.index)
                parts.append(df[mine])
        return self.whole(parts)

    def whole(self, parts: list[pd.DataFrame]) -> pd.DataFrame:
        parts = [p for p in parts if len(p)]
        if not parts:
            return empty(self.table)
        df = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].reset_index(drop=True)
        df = shaped(df, self.table)
        key = list(KEYS.get(self.table, ()))
        if key and all(c in df for c in key):
            doubled = df.duplicated(subset=key, keep="first")
            if doubled.any():
                df = df[~doubled].reset_index(drop=True)
        return df

    def pieces(self, leave_out: set[str], rows: int) -> Iterator[pd.DataFrame]:
        """Every row but those of the games in ``leave_out``, in the table's order (``load``'s), about ``rows``
        at a time; a row whose key an earlier row has is left out (``load`` keeps the first)."""
        key = list(KEYS.get(self.table, ()))
        where = (~ds.field("game_id").isin(pa.array(sorted(leave_out), pa.string()))
                 if leave_out and self.by_game else None)
        repeated = None
        if key and self.dataset is not None and all(c in self.dataset.schema.names for c in key):
            repeated = repeated_hashes((pa.Table.from_batches([b]) for b in self.dataset.to_batches(
                columns=key, batch_size=1 << 17, **SCAN) if b.num_rows), key)
        seen: set = set()

        def first(df: pd.DataFrame) -> pd.DataFrame:
            if repeated is None or not len(repeated):
                return df
            suspect = np.isin(key_hashes(df, key), repeated)
            if not suspect.any():
                return df
            keys = list(zip(*(df.loc[suspect, c] for c in key)))
            keep = np.ones(len(df), bool)
            keep[suspect] = [k not in seen and not seen.add(k) for k in keys]
            return df[keep].reset_index(drop=True)

        if self.dataset is not None:
            pending, size = [], 0
            batches = self.dataset.to_batches(filter=where, batch_size=min(rows, 1 << 17), **SCAN)
            for batch in itertools.chain(batches, [None]):  # not [*batches, None]: that read the table whole
                if batch is not None and batch.num_rows:
                    pending.append(batch)
                    size += batch.num_rows
                if pending and (size >= rows or batch is None):
                    yield shaped(first(self.frame(pa.Table.from_batches(pending))), self.table)
                    pending, size = [], 0
        for folder in self.loose:  # after the dataset's rows, as load puts them
            df = read_table(folder, self.table, self.strict)
            if df is not None and len(df):
                if leave_out and "game_id" in df:
                    df = df[~df["game_id"].isin(leave_out)]
                df = df[~df.duplicated(subset=key, keep="first")] if key and all(c in df for c in key) else df
                if len(df):
                    yield shaped(first(df.reset_index(drop=True)), self.table)


class Study:
    """A results folder read for an export: the small tables whole (``whole``: ``load``'s, complete games only;
    ``games``: the games asked for), the games' rows a batch at a time (``batches``), the engineer sessions'
    (``rest``) and any table in its own order (``rows``)."""

    def __init__(self, path: str | Path, game_ids: list[str] | None = None, batch: int | None = None,
                 strict: bool = False):
        self.path, self.batch = Path(path), batch or BATCH
        # the games without their configs (~1.7 KB of JSON a game, and more): a batch reads its games' rows whole
        self.whole = load(path, strict=strict, columns={t: [c for c in TABLES[t] if c != "config"] if t == "games"
                                                        else None for t in WHOLE})
        games = self.whole.games
        self.games = games if game_ids is None else games[games["game_id"].isin(game_ids)].reset_index(drop=True)
        with warnings.catch_warnings():  # load has said it (a copied run folder)
            warnings.simplefilter("ignore", LoadWarning)
            self.tables = Tables(distinct_runs(run_folders(path), strict), strict)
        self._files: dict[str, TableFiles] = {}
        self._left_out: set[str] | None = None

    runs = property(lambda self: self.whole.runs)
    sessions = property(lambda self: self.whole.sessions)
    tool_calls = property(lambda self: self.whole.tool_calls)

    def files(self, table: str) -> TableFiles:
        if table not in self._files:
            self._files[table] = TableFiles(self.tables, table)
        return self._files[table]

    def results(self, **tables: pd.DataFrame) -> Results:
        return Results(**{t: tables[t] if t in tables else self.whole.runs if t == "runs" else
                          self.whole.endpoints if t == "endpoints" else empty(t)
                          for t in Results.__dataclass_fields__})

    def batches(self, groups: list[list[str]] | None = None) -> Iterator[Results]:
        """One ``Results`` per batch of games: ``BATCH`` games in the games table's order, or the ``groups`` of
        game ids given; each holds its games, their rows of every game table, and the runs."""
        ids = self.games["game_id"].tolist()
        if groups is None:
            groups = [ids[i:i + self.batch] for i in range(0, len(ids), self.batch)]
        for group in groups:
            wanted = pa.array(sorted(set(group)), pa.string())
            yield self.results(**{t: self.files(t).read(wanted) for t in GAME_TABLES})

    def rest(self) -> Results:
        """What belongs to no game: the engineer sessions, their tool calls and the calls without a game."""
        return self.results(games=self.whole.games.iloc[:0], sessions=self.whole.sessions,
                            tool_calls=self.whole.tool_calls,
                            calls=self.files("calls").read(pa.array([], pa.string()), none=True))

    def left_out(self) -> set[str]:
        """The games whose rows ``load`` leaves out: rows of events or players but no complete games row."""
        if self._left_out is None:
            seen = self.files("events").game_ids() | self.files("players").game_ids()
            self._left_out = seen - set(self.whole.games["game_id"].dropna())
        return self._left_out

    def streamed(self, table: str) -> TableFiles | None:
        """The files ``rows(table)`` reads a piece at a time (None: a small table, held whole)."""
        return None if table in WHOLE and table != "games" else self.files(table)

    def rows(self, table: str, rows: int | None = None) -> Iterator[pd.DataFrame]:
        """``table`` as ``load`` holds it (every game, not only ``games``), in its order, about ``rows`` rows at a
        time (default ``ROWS``; the small tables whole)."""
        if table in WHOLE and table != "games":
            yield getattr(self.whole, table)
            return
        yield from self.files(table).pieces(self.left_out(), rows or ROWS)


def parts(results, sessions: bool = True) -> Iterator[Results]:
    """What an exporter writes from, a part at a time: a ``Study``'s batches of games, then (``sessions``) what
    belongs to no game (``Study.rest``); a ``Results`` (a test's, a notebook's) is one part."""
    if isinstance(results, Study):
        yield from results.batches()
        if sessions:
            yield results.rest()
    else:
        yield results
