"""Checks a report runs before it pools anything: which run parameters differ between runs (the
conditions), and which conditions played exactly the same games (so they are one sample, not two)."""

from __future__ import annotations

import hashlib
import itertools

import pandas as pd

# Run parameters that never make a condition: where results go, how many games, how fast, which slice of
# a schedule. Everything else in a run's config that differs between runs is a condition.
NOT_CONDITIONS = {"results_dir", "seed", "n_games", "concurrency", "progress", "experiment", "schedule", "cell",
                  "tournament", "tasks", "max_steps"}


def conditions(games: pd.DataFrame, base: tuple[str, ...] = ("preset",)) -> list[str]:
    """Columns of ``games`` (games with run parameters, ``toolkit.record.load.games_with_params``) whose values
    differ between games and that are conditions: ``base`` columns plus run parameters not in
    ``NOT_CONDITIONS``."""
    known = set(base) | {c for c in games.columns if c not in NOT_CONDITIONS}
    skip = {"game_id", "run_id", "winner", "win_reason", "days", "n_calls", "n_events", "prompt_tokens",
            "completion_tokens", "cost_usd", "n_fallbacks", "wall_s", "config"}
    return [c for c in games.columns if c in known and c not in skip
            and games[c].astype(str).nunique(dropna=False) > 1]


def fingerprints(events: pd.DataFrame, players: pd.DataFrame) -> pd.Series:
    """A hash per game of everything that happened in it: seats' roles and specs and every event's day,
    phase, kind, actor, target and text (game ids and timings left out)."""
    p = players.sort_values(["game_id", "seat"])

    def text(col: pd.Series) -> pd.Series:  # missing values as "" (pandas' str dtype keeps NaN otherwise)
        return col.astype(object).where(col.notna(), "").astype(str)

    seat = text(p["seat"]) + ":" + text(p["role"]) + ":" + text(p["spec"])
    who = seat.groupby(p["game_id"]).agg("|".join)
    e = events.sort_values(["game_id", "seq"])
    line = text(e["day"])
    for col in ("phase", "kind", "actor", "target", "text"):
        line = line + "\t" + text(e[col])
    what = line.groupby(e["game_id"]).agg("\n".join)
    both = pd.concat([who.rename("who"), what.rename("what")], axis=1).fillna("")
    text = both["who"] + "\n" + both["what"]
    return pd.Series([hashlib.sha1(t.encode()).hexdigest() for t in text], index=both.index, name="fingerprint")


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
