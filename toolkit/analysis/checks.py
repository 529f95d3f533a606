"""Checks a report runs before it pools anything: which run parameters differ between runs (the
conditions), and which conditions played exactly the same games (so they are one sample, not two)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

# Run settings: how a run was run, never what it studied (spending caps and what a game does at one, where the
# ledger is, workers, concurrency, resuming). A study stopped at ``--max-usd 0.03`` and resumed with ``0.1`` is
# one study, not two conditions.
RUN_SETTINGS = {"max_usd", "max_tokens", "at_cap", "spend_dir", "workers", "concurrency", "executor", "scheduler",
                "resume", "progress", "quiet"}
# Run parameters that never make a condition: where results go, how many games, the run settings, which slice of
# a schedule. Everything else in a run's config that differs between runs is a condition.
NOT_CONDITIONS = {"results_dir", "seed", "n_games", "experiment", "schedule", "cell", "tournament", "tasks",
                  "max_steps"} | RUN_SETTINGS


def conditions(games: pd.DataFrame, base: tuple[str, ...] = ("preset",)) -> list[str]:
    """Columns of ``games`` (games with run parameters, ``toolkit.record.load.games_with_params``) whose values
    differ between games and that are conditions: ``base`` columns plus run parameters not in
    ``NOT_CONDITIONS``."""
    known = set(base) | {c for c in games.columns if c not in NOT_CONDITIONS}
    skip = {"game_id", "run_id", "winner", "win_reason", "days", "n_calls", "n_events", "prompt_tokens",
            "completion_tokens", "cost_usd", "n_fallbacks", "wall_s", "config", "degraded", "degraded_why",
            "endpoint_fallbacks"}  # outcomes of a game, not conditions
    return [c for c in games.columns if c in known and c not in skip
            and games[c].astype(str).nunique(dropna=False) > 1]


def labels(values: pd.Series) -> pd.Series:
    """A condition's values as text, a missing one as ``(not set)`` (a run without the parameter): sortable and
    the same under pandas 2 and 3 (pandas 3's ``astype(str)`` keeps NaN, which then cannot be sorted with text)."""
    return values.astype(object).where(values.notna(), "(not set)").astype(str)


def fingerprints(events: pd.DataFrame, players: pd.DataFrame) -> pd.Series:
    """A hash per game of everything that happened in it: seats' roles and specs and every event's day,
    phase, kind, actor, target and text (game ids and timings left out).

    Vectorised: each row is hashed with its place in its game (``pandas.util.hash_pandas_object``), and a game's
    rows are summed modulo 2**64, once for the seats and once for the events. (Joining every game's text and
    hashing it in Python took 2.4 s over the 1746 example games; the report needs it twice.)"""
    seats = _game_hash(players, "seat", ("seat", "role", "spec")).rename("who")
    lines = _game_hash(events, "seq", ("day", "phase", "kind", "actor", "target", "text")).rename("what")
    both = pd.concat([seats, lines], axis=1).fillna(0).astype("uint64")
    return pd.Series([f"{w:016x}{x:016x}" for w, x in zip(both["who"], both["what"])], index=both.index,
                     name="fingerprint")


def _game_hash(frame: pd.DataFrame, order: str, columns: tuple[str, ...]) -> pd.Series:
    """Per game: the sum (mod 2**64) of the hashes of its rows' ``columns`` and of each row's place in the game
    (sorted by ``order``), missing values as ""."""
    if frame.empty:
        return pd.Series(dtype="uint64")
    f = frame.sort_values(["game_id", order])
    cells = {c: f[c].astype(object).where(f[c].notna(), "").astype(str).to_numpy() for c in columns}
    cells["place"] = f.groupby("game_id", sort=False).cumcount().to_numpy()
    rows = pd.util.hash_pandas_object(pd.DataFrame(cells), index=False).to_numpy()
    ids = f["game_id"].to_numpy()
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    return pd.Series(np.add.reduceat(rows, starts), index=ids[starts])  # uint64: the sum wraps, as a hash may


def identical_groups(games: pd.DataFrame, events: pd.DataFrame, players: pd.DataFrame,
                     by: list[str]) -> pd.DataFrame:
    """Pairs of conditions (groups of ``by``) whose games match one for one (same seeds, same fingerprints):
    one row per pair with ``games`` (how many) and ``identical`` (how many of those seeds played the same)."""
    if not by or games.empty:
        return pd.DataFrame(columns=["a", "b", "games", "identical"])
    fp = fingerprints(events, players)
    g = games.assign(fingerprint=games["game_id"].map(fp))
    g = g.assign(condition=[", ".join(f"{k}={v}" for k, v in zip(by, row)) for row in g[by].itertuples(index=False)])
    per = {c: dict(zip(part["seed"], part["fingerprint"])) for c, part in g.groupby("condition")}
    rows = []
    for a, b in itertools.combinations(sorted(per), 2):
        common = set(per[a]) & set(per[b])
        same = sum(per[a][s] == per[b][s] for s in common)
        if common and same:
            rows.append({"a": a, "b": b, "games": len(common), "identical": same})
    return pd.DataFrame(rows, columns=["a", "b", "games", "identical"])
