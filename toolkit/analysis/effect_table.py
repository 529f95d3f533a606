"""The Conclusions at a glance: every effect a study estimated, one row each (what changed, where, the effect on
the win rate with its 95% interval, n, paired or not, the verdict), as a Markdown table and a forest plot.

Two kinds of effect: a grid variable's (the village's win rate at a value minus at the first value, within each
combination of the other variables) and a model's against each opponent (``ratings.opponent_differences``).
A grid variable's effect is paired by seed only where both values deal every shared seed the same roles
(comparing the players tables); elsewhere (two presets, say: different seats and roles) the two values' games
are independent samples and the difference gets Newcombe's interval for two independent rates."""

from __future__ import annotations

import numpy as np
import pandas as pd

from toolkit.analysis.checks import labels
from toolkit.analysis.intervals import MIN_GAMES, groups, paired_difference, wilson
from toolkit.analysis.ratings import opponent_differences

COLUMNS = ["effect", "where", "estimate", "ci_low", "ci_high", "n", "paired", "verdict"]


def deals(players: pd.DataFrame, games: pd.DataFrame) -> pd.Series:
    """Each game's deal (its seats and their roles, as one string), by game id."""
    p = players[players["game_id"].isin(games["game_id"])].sort_values(["game_id", "seat"])
    return p.assign(x=p["seat"] + "=" + p["role"]).groupby("game_id")["x"].agg(",".join)


def independent_difference(ka: int, na: int, kb: int, nb: int) -> dict:
    """a − b for two rates of independent games: Newcombe's 95% interval (Wilson's for each rate)."""
    pa, pb = ka / na, kb / nb
    (la, ua), (lb, ub) = wilson(ka, na), wilson(kb, nb)
    d = pa - pb
    return {"diff": d, "ci_low": d - float(np.sqrt((pa - la) ** 2 + (ub - pb) ** 2)),
            "ci_high": d + float(np.sqrt((ua - pa) ** 2 + (pb - lb) ** 2))}


def _verdict(low: float, high: float) -> str:
    return "village wins more" if low > 0 else "village wins less" if high < 0 else "no difference shown"


def grid_effect(part: pd.DataFrame, var: str, a: str, b: str, deal: pd.Series) -> dict | None:
    """One grid variable's effect (``var`` from ``a`` to ``b``) among ``part``: paired by seed where every shared
    seed was dealt the same at both values, else two independent samples."""
    wins = part.assign(win=(part["winner"] == "village").astype(float), deal=part["game_id"].map(deal),
                       value=labels(part[var]))
    at = {v: g for v, g in wins.groupby("value")}
    if a not in at or b not in at:
        return None
    per_seed = {v: g.groupby("seed").agg(win=("win", "sum"), n=("win", "size"), deal=("deal", "first"))
                for v, g in ((a, at[a]), (b, at[b]))}
    both = per_seed[a].merge(per_seed[b], left_index=True, right_index=True, suffixes=("_a", "_b"))
    paired = len(both) >= MIN_GAMES and bool((both["deal_a"] == both["deal_b"]).all())
    if paired:
        d = paired_difference(both["win_b"], both["n_b"], both["win_a"], both["n_a"])
        n, how = f"{len(both)} seeds", "yes (same seeds, same deals)"
    else:
        ka, na, kb, nb = int(at[a]["win"].sum()), len(at[a]), int(at[b]["win"].sum()), len(at[b])
        d = independent_difference(kb, nb, ka, na)
        n = f"{nb} vs {na} games"
        how = ("no: the values deal different roles" if len(both) and not (both["deal_a"] == both["deal_b"]).all()
               else "no: independent games")
    return {"effect": f"{var}: {b} − {a}", "estimate": d["diff"], "ci_low": d["ci_low"], "ci_high": d["ci_high"],
            "n": n, "paired": how, "verdict": _verdict(d["ci_low"], d["ci_high"])}


def effect_rows(games: pd.DataFrame, players: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Every effect: each grid variable's within each combination of the others, then each model's against each
    opponent within each condition (differences in the win rate of the model's side)."""
    rows = []
    deal = deals(players, games)
    for var in by:
        others = [c for c in by if c != var]
        values = sorted(labels(games[var]).unique())
        for key, part in groups(games, others):
            where = ", ".join(f"{k}={v}" for k, v in key.items()) or "all games"
            for b in values[1:]:
                row = grid_effect(part, var, values[0], b, deal)
                if row is not None:
                    rows.append({**row, "where": where})
    for key, part in groups(games, by):
        where = ", ".join(f"{k}={v}" for k, v in key.items())
        diffs = opponent_differences(part, players[players["game_id"].isin(part["game_id"])])
        for r in diffs.itertuples():
            them = "wolves" if r.side == "village" else "villagers"
            verdict = (f"{r.a} wins more" if r.ci_low > 0 else f"{r.b} wins more" if r.ci_high < 0
                       else "no difference shown")
            rows.append({"effect": f"{r.side}: {r.a} − {r.b}", "where": ", ".join(
                x for x in (where, f"against {r.opponent} {them}") if x), "estimate": r.diff, "ci_low": r.ci_low,
                "ci_high": r.ci_high, "n": f"{r.n_a} vs {r.n_b} games", "paired": "no: independent games",
                "verdict": verdict})
    return pd.DataFrame(rows, columns=COLUMNS)


def markdown(rows: pd.DataFrame) -> str:
    """The effects as one Markdown table, in percentage points."""
    if rows.empty:
        return ""
    head = "| effect | where | effect (points) | 95% interval | n | paired | verdict |\n|---|---|---|---|---|---|---|\n"
    body = "".join(f"| {r.effect} | {r.where} | {100 * r.estimate:+.1f} | [{100 * r.ci_low:+.1f}, "
                   f"{100 * r.ci_high:+.1f}] | {r.n} | {r.paired} | {r.verdict} |\n" for r in rows.itertuples())
    return head + body


def forest_plot(rows: pd.DataFrame, title: str = "Every effect on the win rate (95% intervals)"):
    """One line per effect: its estimate and interval in percentage points, 0 marked."""
    import matplotlib.pyplot as plt

    labels = [f"{r.effect} ({r.where})" for r in rows.itertuples()]
    fig, ax = plt.subplots(figsize=(11, 0.8 + 0.28 * max(len(rows), 1)))
    y = np.arange(len(rows))[::-1]
    est, low, high = (100 * rows[c].to_numpy(float) for c in ("estimate", "ci_low", "ci_high"))
    colour = np.where(low > 0, "#27ae60", np.where(high < 0, "#c0392b", "#7f8c8d"))
    ax.errorbar(est, y, xerr=[est - low, high - est], fmt="none", ecolor=colour, elinewidth=1.5)
    ax.scatter(est, y, c=colour, s=18, zorder=3)
    ax.axvline(0, color="#333", linewidth=0.8)
    ax.set_yticks(y, labels, fontsize=7)
    ax.set_xlabel("effect on the win rate (percentage points)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
