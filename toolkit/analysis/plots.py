"""Plots over the tables (matplotlib): each function returns a Figure; ``save`` writes it as PNG.

Every plot shows n per group, count and cost axes start at 0, and token counts that were estimated (offline
players, or providers that report no usage) say so in the axis label.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg") if matplotlib.get_backend().lower() not in ("module://matplotlib_inline.backend_inline",
                                                                    "inline") else None
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from toolkit import analysis as A  # noqa: E402


def _errorbars(ax, x, table: pd.DataFrame, value: str = "rate", **kw) -> None:
    low = (table[value] - table["ci_low"]).clip(lower=0)
    high = (table["ci_high"] - table[value]).clip(lower=0)
    ax.errorbar(x, table[value], yerr=[low, high], fmt="o", capsize=4, **kw)


def _label(row: pd.Series, by: list[str]) -> str:
    return "\n".join(f"{k}={row[k]}" for k in by) if by else "all games"


def _n_labels(ax, xs, table: pd.DataFrame, y: str = "ci_high", n: str = "n", lift: int = 0, **kw) -> None:
    for x, (_, r) in zip(xs, table.iterrows()):
        if r[y] == r[y]:
            ax.annotate(f"n={int(r[n])}", (x, r[y]), textcoords="offset points", xytext=(0, 4 + lift), ha="center",
                        fontsize=6.5, **kw)


def plot_win_rates(games: pd.DataFrame, by: list[str] | None = None, title: str | None = None):
    """Village and werewolf win rates with 95% intervals (exact below 30 games, else Wilson, as the axis says),
    per condition, n games per condition."""
    by = by or []
    table = A.win_rates(games, by)
    fig, ax = plt.subplots(figsize=(max(5, 1.6 * max(1, len(table) // 2)), 4))
    for offset, side, colour in ((-0.1, "village", "tab:green"), (0.1, "werewolves", "tab:red")):
        part = table[table["side"] == side].reset_index(drop=True)
        xs = [i + offset for i in range(len(part))]
        _errorbars(ax, xs, part, color=colour, label=side)
    village = table[table["side"] == "village"].reset_index(drop=True)
    labels = [f"{_label(r, by)}\nn={int(r['n'])} games" for _, r in village.iterrows()]
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_ylim(0, 1)
    methods = sorted(set(table["method"])) if "method" in table else ["wilson"]
    ax.set_ylabel("win rate (95% CI: " + ", ".join("exact" if m == "exact" else "Wilson" for m in methods)
                  + (", exact below 30 games" if len(methods) > 1 else "") + ")")
    ax.set_title(textwrap.fill(title or ("Win rate by side, " + (f"per {', '.join(by)}" if by else
                                                                 f"{int(village['n'].sum())} games")), 60),
                 fontsize=9)
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_vote_accuracy_by_day(events: pd.DataFrame | None = None, players: pd.DataFrame | None = None,
                              by: str | None = None, title: str | None = None, games: pd.DataFrame | None = None,
                              ballots: pd.DataFrame | None = None, counts: pd.DataFrame | None = None):
    """Share of village first-round ballots on a werewolf, by day (cluster-bootstrap intervals over games),
    with the bar of each day (a random other candidate; ``games`` gives the rules) as a dashed line; one
    series per value of ``by`` (e.g. ``spec``). ``ballots``: the ballots ``A.votes`` made, instead of
    ``events``, ``players`` and ``games``; ``counts``: their ``A.day_vote_counts`` (a cell's summary keeps
    them: a few numbers a game), without ``by``."""
    if counts is not None and by:
        raise ValueError("plot_vote_accuracy_by_day: counts are per round and day only; by needs the ballots")
    keys = ["day"] + ([by] if by else [])
    table = (A.day_vote_accuracy(counts) if counts is not None
             else A.ballot_accuracy(ballots, ["round"] + keys) if ballots is not None
             else A.vote_accuracy(events, players, ["round"] + keys, games=games))
    table = table[table["round"] == "first"].sort_values(keys) if len(table) else table
    fig, ax = plt.subplots(figsize=(6, 3.8))
    series = list(table.groupby(by)) if by and len(table) else [(None, table)]
    for i, (name, part) in enumerate(series):
        if len(part):  # a study without a first-round village ballot has an empty table (no columns even)
            xs = part["day"] + (i - (len(series) - 1) / 2) * 0.08
            _errorbars(ax, xs, part, label=f"{by}={name}" if by else "village ballots", color=f"C{i}")
            ax.plot(xs, part["chance"], ls="--", color=f"C{i}", alpha=0.6,
                    label=f"chance ({name})" if by else "chance")
            if len(series) == 1:
                _n_labels(ax, xs, part, color=f"C{i}")
    if len(series) > 1:  # one n per series under each day: labels above the points would overlap
        days = sorted(table["day"].unique())
        n = table.set_index(["day", by])["n"]
        names = [name for name, _ in series]
        ax.set_xticks(days, [f"{d}\n" + "\n".join(str(int(n.get((d, m), 0))) for m in names) for d in days],
                      fontsize=7)
        ax.set_xlabel(f"day; n = ballots, top to bottom: {', '.join(map(str, names))} (later days: survivors "
                      "only)", fontsize=8)
    else:
        ax.set_xlabel("day (later days: survivors only)")
    ax.set_ylabel("ballots on a wolf (95% CI by game)")
    ax.set_ylim(0, 1.1)
    ax.set_title(title or "Village vote accuracy by day (first round) vs chance", fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_costs(games: pd.DataFrame, by: list[str] | None = None, title: str | None = None,
               estimated: bool = False):
    """Mean model calls and prompt tokens per game (95% bootstrap intervals), per condition; axes start at
    0; ``estimated`` marks token counts that were estimated, not reported by a provider."""
    by = by or []
    table = A.per_game_costs(games, by)
    groups = max(1, len(table) // 5)
    fig, axes = plt.subplots(1, 2, figsize=(max(9, 3.2 * groups), 3.8))
    tokens = "prompt tokens per game" + (" (ESTIMATED)" if estimated else "")
    for ax, metric, label in ((axes[0], "n_calls", "model calls per game"), (axes[1], "prompt_tokens", tokens)):
        part = table[table["metric"] == metric].reset_index(drop=True)
        _errorbars(ax, range(len(part)), part, value="mean", color="tab:purple")
        _n_labels(ax, range(len(part)), part)
        ax.set_xticks(range(len(part)), [_label(r, by) for _, r in part.iterrows()], fontsize=7)
        ax.set_xlim(-0.6, len(part) - 0.4)
        ax.set_ylim(bottom=0, top=max(1.0, float(part["ci_high"].max()) * 1.15) if len(part) else 1.0)
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title or "Calls and tokens per game (n = games)")
    fig.tight_layout()
    return fig


def plot_ratings(table: pd.DataFrame, title: str | None = None):
    """Ratings (``analysis.ratings``) with their intervals, one panel row per side, n games in each label."""
    table = table.reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(6.5, 0.45 * max(3, len(table)) + 1))
    labels = [f"{r['spec']} ({r['side']}, n={int(r['n'])})" for _, r in table.iterrows()]
    ys = list(range(len(table)))[::-1]
    ax.errorbar(table["rating"], ys, xerr=[(table["rating"] - table["ci_low"]).clip(lower=0),
                                           (table["ci_high"] - table["rating"]).clip(lower=0)],
                fmt="o", capsize=4, color="tab:blue")
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_yticks(ys, labels, fontsize=8)
    ax.set_xlabel("strength, logit scale (95% CI from the fit's curvature)")
    ax.set_title(textwrap.fill(title or "Ratings with a side term (Bradley–Terry, logistic)", 60), fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_tool_usage(tool_calls: pd.DataFrame, sessions: pd.DataFrame, by: str = "spec", title: str | None = None):
    """Calls per tool (bars from 0) and each tool's error rate (annotated), per model (n sessions)."""
    table = A.tool_usage(tool_calls, sessions, [by])
    groups = list(dict.fromkeys(table[by]))
    n_sessions = sessions.groupby(by)["session_id"].nunique()
    tools = sorted(set(table["tool"]))
    fig, ax = plt.subplots(figsize=(8, max(3, 0.3 * len(tools) * max(1, len(groups)))))
    height = 0.8 / max(1, len(groups))
    for g_i, group in enumerate(groups):
        part = table[table[by] == group].set_index("tool").reindex(tools)
        ys = [t_i + g_i * height for t_i in range(len(tools))]
        label = f"{group} (n={int(n_sessions.get(group, 0))} sessions)"
        ax.barh(ys, part["calls"].fillna(0), height=height, label=label)
        for y, (_, r) in zip(ys, part.iterrows()):
            if r["calls"] == r["calls"] and r["calls"] > 0:
                ax.text(r["calls"], y, f" {r['error_rate']:.0%} err", va="center", fontsize=7)
    ax.set_yticks([t + 0.4 - height / 2 for t in range(len(tools))], tools, fontsize=8)
    ax.set_xlim(left=0)
    ax.set_xlabel("tool calls")
    ax.set_title(title or f"Tool usage by {by}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_success_vs_steps(sessions: pd.DataFrame, by: str = "spec", title: str | None = None):
    """Each session's step count against its success, per model (jittered to show overlaps)."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for i, (group, part) in enumerate(sessions.groupby(by)):
        y = part["success"].astype(float) + (i - 0.5) * 0.06
        ax.scatter(part["steps"], y, label=f"{group} (n={len(part)})", alpha=0.7)
    ax.set_yticks([0, 1], ["failed", "succeeded"])
    ax.set_xlim(left=0)
    ax.set_xlabel("steps")
    ax.set_title(title or "Engineer success vs steps")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def save(fig, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
