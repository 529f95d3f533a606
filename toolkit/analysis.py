"""Metrics over the tables from ``toolkit.results.load``, each with its count ``n`` and a 95% interval."""

from __future__ import annotations

import math

import pandas as pd

Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials (honest at small n and near 0 or 1)."""
    if n == 0:
        return (float("nan"), float("nan"))
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def win_rates(games: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Share of games each side won (draws and errors count as neither), with Wilson 95% intervals."""
    by = by or []
    rows = []
    groups = games.groupby(by, dropna=False) if by else [((), games)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        n = len(group)
        for side in ("village", "werewolves", "draw", "error"):
            k = int((group["winner"] == side).sum())
            if side in ("draw", "error") and k == 0:
                continue
            low, high = wilson(k, n)
            rows.append({**dict(zip(by, key)), "side": side, "wins": k, "n": n, "rate": k / n if n else float("nan"),
                         "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows)
