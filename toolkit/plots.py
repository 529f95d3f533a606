"""Plots over the tables (matplotlib): each function returns a Figure; ``save`` writes it as PNG."""

from __future__ import annotations

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


def plot_win_rates(games: pd.DataFrame, by: list[str] | None = None, title: str | None = None):
    """Village and werewolf win rates with 95% Wilson intervals, per condition."""
    by = by or []
    table = A.win_rates(games, by)
    fig, ax = plt.subplots(figsize=(max(5, 1.6 * max(1, len(table) // 2)), 4))
    for offset, side, colour in ((-0.1, "village", "tab:green"), (0.1, "werewolves", "tab:red")):
        part = table[table["side"] == side].reset_index(drop=True)
        _errorbars(ax, [i + offset for i in range(len(part))], part, color=colour, label=side)
    labels = [_label(r, by) for _, r in table[table["side"] == "village"].iterrows()]
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_ylim(0, 1)
    ax.set_ylabel("win rate (95% CI)")
    n = table.groupby([*by] if by else (lambda _: 0))["n"].first() if len(table) else []
    ax.set_title(title or f"Win rate by side ({int(sum(n)) if len(n) else 0} games)")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_vote_accuracy_by_day(events: pd.DataFrame, players: pd.DataFrame, title: str | None = None):
    """Share of village day votes on a werewolf, by day, with 95% Wilson intervals."""
    table = A.vote_accuracy(events, players, ["day"]).sort_values("day")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    if len(table):
        _errorbars(ax, table["day"], table, color="tab:blue")
        for _, r in table.iterrows():
            ax.annotate(f"n={int(r['n'])}", (r["day"], r["ci_high"]), textcoords="offset points", xytext=(0, 4),
                        ha="center", fontsize=7)
    ax.set_xlabel("day")
    ax.set_ylabel("village votes on a wolf")
    ax.set_ylim(0, 1)
    ax.set_title(title or "Village vote accuracy by day")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_costs(games: pd.DataFrame, by: list[str] | None = None, title: str | None = None):
    """Mean model calls and tokens per game (95% bootstrap intervals), per condition."""
    by = by or []
    table = A.per_game_costs(games, by)
    groups = max(1, len(table) // 5)
    fig, axes = plt.subplots(1, 2, figsize=(max(9, 3.2 * groups), 3.8))
    for ax, metric, label in ((axes[0], "n_calls", "calls per game"),
                              (axes[1], "prompt_tokens", "prompt tokens per game")):
        part = table[table["metric"] == metric].reset_index(drop=True)
        _errorbars(ax, range(len(part)), part, value="mean", color="tab:purple")
        ax.set_xticks(range(len(part)), [_label(r, by) for _, r in part.iterrows()], fontsize=7)
        ax.set_xlim(-0.6, len(part) - 0.4)
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title or "Calls and tokens per game")
    fig.tight_layout()
    return fig


def plot_tool_usage(tool_calls: pd.DataFrame, sessions: pd.DataFrame, by: str = "spec", title: str | None = None):
    """Calls per tool (bars) and each tool's error rate (annotated), per model."""
    table = A.tool_usage(tool_calls, sessions, [by])
    groups = list(dict.fromkeys(table[by]))
    tools = sorted(set(table["tool"]))
    fig, ax = plt.subplots(figsize=(8, max(3, 0.3 * len(tools) * max(1, len(groups)))))
    height = 0.8 / max(1, len(groups))
    for g_i, group in enumerate(groups):
        part = table[table[by] == group].set_index("tool").reindex(tools)
        ys = [t_i + g_i * height for t_i in range(len(tools))]
        ax.barh(ys, part["calls"].fillna(0), height=height, label=str(group))
        for y, (_, r) in zip(ys, part.iterrows()):
            if r["calls"] == r["calls"] and r["calls"] > 0:
                ax.text(r["calls"], y, f" {r['error_rate']:.0%} err", va="center", fontsize=7)
    ax.set_yticks([t + 0.4 - height / 2 for t in range(len(tools))], tools, fontsize=8)
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
        ax.scatter(part["steps"], y, label=str(group), alpha=0.7)
    ax.set_yticks([0, 1], ["failed", "succeeded"])
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
