"""Metrics over the tables from ``toolkit.results.load``. Each returns a DataFrame with the count ``n``
and a 95% interval: Wilson for proportions, a seeded bootstrap for everything else."""

from __future__ import annotations

import math
from typing import Callable, Iterable

import numpy as np
import pandas as pd

Z95 = 1.959963984540054
SPECIAL = ("Seer", "Witch", "Guard")


# ------------------------------------------------------------------ intervals
def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials (honest at small n and near 0 or 1)."""
    if n == 0:
        return (float("nan"), float("nan"))
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def bootstrap_ci(values: Iterable[float], stat: Callable = np.mean, n_boot: int = 2000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of ``stat`` (seeded, so a report is reproducible)."""
    data = np.asarray([v for v in values if v is not None and v == v], dtype=float)
    if len(data) == 0:
        return (float("nan"), float("nan"))
    if len(data) == 1:
        return (float(data[0]), float(data[0]))
    rng = np.random.default_rng(seed)
    stats = np.array([stat(data[rng.integers(0, len(data), len(data))]) for _ in range(n_boot)])
    return (float(np.percentile(stats, 2.5)), float(np.percentile(stats, 97.5)))


def proportion(k: int, n: int, **extra) -> dict:
    low, high = wilson(k, n)
    return {**extra, "k": int(k), "n": int(n), "rate": k / n if n else float("nan"), "ci_low": low, "ci_high": high}


def _groups(df: pd.DataFrame, by: list[str] | None):
    if by:
        for key, group in df.groupby(by, dropna=False):
            yield dict(zip(by, key if isinstance(key, tuple) else (key,))), group
    else:
        yield {}, df


def sample_size(half_width: float, p: float = 0.5, z: float = Z95) -> int:
    """Games needed for a 95% interval of ± ``half_width`` on a rate near ``p`` (0.5 is the worst case)."""
    return math.ceil(z * z * p * (1 - p) / (half_width * half_width))


# ------------------------------------------------------------------ werewolf
def win_rates(games: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Share of games each side won, per group (draws and errors listed when they happen)."""
    rows = []
    for key, group in _groups(games, by):
        for side in ("village", "werewolves", "draw", "error"):
            k = int((group["winner"] == side).sum())
            if side in ("draw", "error") and k == 0:
                continue
            rows.append(proportion(k, len(group), **key, side=side))
    return pd.DataFrame(rows)


def _with_roles(events: pd.DataFrame, players: pd.DataFrame) -> pd.DataFrame:
    roles = players[["game_id", "seat", "role", "side"]]
    out = events.merge(roles.rename(columns={"seat": "actor", "role": "actor_role", "side": "actor_side"}),
                       on=["game_id", "actor"], how="left")
    return out.merge(roles.rename(columns={"seat": "target", "role": "target_role", "side": "target_side"}),
                     on=["game_id", "target"], how="left")


def vote_accuracy(events: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Share of the village's day votes cast on a werewolf (``by`` may include ``day``)."""
    votes = _with_roles(events[events["kind"] == "vote"], players)
    votes = votes[votes["actor_side"] == "village"]
    return pd.DataFrame([proportion(int((g["target_role"] == "Werewolf").sum()), len(g), **key)
                         for key, g in _groups(votes, by)])


def voting_success(events: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Share of voting days on which a werewolf was exiled."""
    days = events[events["kind"] == "vote"][["game_id", "day"]].drop_duplicates()
    exiled = _with_roles(events[events["kind"] == "elimination"], players)[["game_id", "day", "target_role"]]
    days = days.merge(exiled, on=["game_id", "day"], how="left")
    return pd.DataFrame([proportion(int((g["target_role"] == "Werewolf").sum()), len(g), **key)
                         for key, g in _groups(days, by)])


def key_role_survival(players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Per special role, the share of games it survived."""
    rows = []
    special = players[players["role"].isin(SPECIAL)]
    for key, g in _groups(special, (by or []) + ["role"]):
        rows.append(proportion(int(g["survived"].astype(bool).sum()), len(g), **key))
    return pd.DataFrame(rows)


def night_actions(events: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Seer checks that found a wolf, witch saves of a village player and poisons of a wolf, and guard
    protections of the wolves' actual target (a 'guard save')."""
    e = _with_roles(events, players)
    rows = []
    for key, g in _groups(e, by):
        checks = g[g["kind"] == "check"]
        rows.append(proportion(int((checks["target_role"] == "Werewolf").sum()), len(checks), **key,
                               metric="seer_wolf_check_rate"))
        saves = g[g["kind"] == "save"]
        rows.append(proportion(int((saves["target_side"] == "village").sum()), len(saves), **key,
                               metric="witch_save_correct"))
        poisons = g[g["kind"] == "poison"]
        rows.append(proportion(int((poisons["target_role"] == "Werewolf").sum()), len(poisons), **key,
                               metric="witch_poison_correct"))
        protects = g[g["kind"] == "protect"][["game_id", "day", "target"]]
        kills = g[g["kind"] == "kill"][["game_id", "day", "target"]].rename(columns={"target": "victim"})
        nights = protects.merge(kills, on=["game_id", "day"], how="inner")
        rows.append(proportion(int((nights["target"] == nights["victim"]).sum()), len(nights), **key,
                               metric="guard_save_rate"))
    return pd.DataFrame(rows)


def per_game_costs(games: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Mean calls, tokens, cost and fallbacks per game, with bootstrap intervals."""
    rows = []
    for key, g in _groups(games, by):
        for metric in ("n_calls", "prompt_tokens", "completion_tokens", "cost_usd", "n_fallbacks"):
            values = pd.to_numeric(g[metric], errors="coerce")
            low, high = bootstrap_ci(values)
            rows.append({**key, "metric": metric, "n": int(values.notna().sum()), "mean": float(values.mean()),
                         "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows)


def bradley_terry(pairs: pd.DataFrame, iters: int = 200) -> pd.Series:
    """Bradley–Terry strengths (log scale, mean 0) from rows of ``winner``, ``loser`` (MM algorithm)."""
    models = sorted(set(pairs["winner"]) | set(pairs["loser"]))
    wins = pairs["winner"].value_counts().reindex(models, fill_value=0).astype(float) + 0.5  # a weak prior
    games = pd.crosstab(pairs["winner"], pairs["loser"]).reindex(index=models, columns=models, fill_value=0)
    n = games + games.T
    p = pd.Series(1.0, index=models)
    for _ in range(iters):
        denom = pd.Series({i: sum(n.loc[i, j] / (p[i] + p[j]) for j in models if j != i) + 1.0 / (p[i] + 1.0)
                           for i in models})
        p = wins / denom
        p = p / np.exp(np.log(p).mean())
    return np.log(p)


def ratings(games: pd.DataFrame, players: pd.DataFrame, n_boot: int = 200, seed: int = 0) -> pd.DataFrame:
    """Model ratings from mixed-model games: each game counts a win for every model on the winning side
    over every model on the losing side. Bradley–Terry with bootstrap intervals over games."""
    decided = games[games["winner"].isin(["village", "werewolves"])][["game_id", "winner"]]
    seats = players.merge(decided, on="game_id")
    pairs = []
    for game_id, g in seats.groupby("game_id"):
        won = set(g[g["side"] == g["winner"]]["spec"])
        lost = set(g[g["side"] != g["winner"]]["spec"])
        pairs += [{"game_id": game_id, "winner": w, "loser": lo} for w in won for lo in lost if w != lo]
    pairs = pd.DataFrame(pairs, columns=["game_id", "winner", "loser"])
    if pairs.empty:
        return pd.DataFrame(columns=["spec", "rating", "n", "ci_low", "ci_high"])
    point = bradley_terry(pairs)
    rng = np.random.default_rng(seed)
    rows_of = {g: idx.to_numpy() for g, idx in pairs.groupby("game_id").groups.items()}
    ids = list(rows_of)
    boots = []
    for _ in range(n_boot):
        pick = rng.integers(0, len(ids), len(ids))
        sample = pairs.loc[np.concatenate([rows_of[ids[i]] for i in pick])]
        boots.append(bradley_terry(sample, iters=60).reindex(point.index))
    boots = pd.DataFrame(boots)
    counts = pd.concat([pairs["winner"], pairs["loser"]]).value_counts()
    return pd.DataFrame({"spec": point.index, "rating": point.values,
                         "n": [int(counts[m]) for m in point.index],
                         "ci_low": boots.quantile(0.025).values, "ci_high": boots.quantile(0.975).values}
                        ).sort_values("rating", ascending=False).reset_index(drop=True)


# ------------------------------------------------------------------ engineer
def engineer_success(sessions: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Success rate (Wilson) and mean steps (bootstrap) per group, e.g. by ``spec`` and ``task``."""
    rows = []
    for key, g in _groups(sessions, by or ["spec"]):
        done = g["success"].dropna().astype(bool)
        row = proportion(int(done.sum()), len(done), **key)
        low, high = bootstrap_ci(g["steps"])
        rows.append({**row, "steps_mean": float(g["steps"].mean()), "steps_ci_low": low, "steps_ci_high": high})
    return pd.DataFrame(rows)


def tool_usage(tool_calls: pd.DataFrame, sessions: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Calls per tool and their error rate (Wilson), per group of session columns (default: spec)."""
    by = by or ["spec"]
    data = tool_calls.merge(sessions[["session_id", *by]], on="session_id", how="left")
    rows = []
    for key, g in _groups(data, by + ["tool"]):
        errors = int((~g["ok"].astype(bool)).sum())
        low, high = wilson(errors, len(g))
        rows.append({**key, "calls": len(g), "n": len(g), "error_rate": errors / len(g), "ci_low": low,
                     "ci_high": high, "calls_per_session": len(g) / max(1, g["session_id"].nunique())})
    return pd.DataFrame(rows).sort_values(by + ["calls"], ascending=[True] * len(by) + [False]).reset_index(drop=True)
