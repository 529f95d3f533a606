"""Engineer metrics: success and steps per model and task, tool usage and error rates."""

from __future__ import annotations

import pandas as pd

from toolkit.analysis.intervals import bootstrap_ci, groups, proportion, wilson


def engineer_success(sessions: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Success rate (Wilson: one outcome per session) and mean steps (bootstrap) per group, e.g. by
    ``spec`` and ``task``."""
    rows = []
    for key, g in groups(sessions, by or ["spec"]):
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
    for key, g in groups(data, by + ["tool"]):
        errors = int((~g["ok"].astype(bool)).sum())
        low, high = wilson(errors, len(g))
        rows.append({**key, "calls": len(g), "n": len(g), "error_rate": errors / len(g), "ci_low": low,
                     "ci_high": high, "calls_per_session": len(g) / max(1, g["session_id"].nunique())})
    columns = [*by, "tool", "calls", "n", "error_rate", "ci_low", "ci_high", "calls_per_session"]
    table = pd.DataFrame(rows, columns=columns)
    return table.sort_values(by + ["calls"], ascending=[True] * len(by) + [False]).reset_index(drop=True)
