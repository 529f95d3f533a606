"""Intervals: Wilson for per-game proportions, a seeded cluster bootstrap (resampling whole games) for every
rate whose units (votes, checks, actions, beliefs) are nested in games, a percentile bootstrap for means.

A game's votes are not independent (the same players, the same information), so an interval that treats
them as independent is too narrow; ``cluster_rate`` resamples games and recomputes the pooled rate.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable

import numpy as np
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


def proportion(k: int, n: int, **extra) -> dict:
    """A per-game proportion (one unit per game or per player-game) with its Wilson interval."""
    low, high = wilson(k, n)
    return {**extra, "k": int(k), "n": int(n), "rate": k / n if n else float("nan"), "ci_low": low, "ci_high": high}


def bootstrap_ci(values: Iterable[float], stat: Callable = np.mean, n_boot: int = 2000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of ``stat`` over independent values (seeded)."""
    data = np.asarray([v for v in values if v is not None and v == v], dtype=float)
    if len(data) == 0:
        return (float("nan"), float("nan"))
    if len(data) == 1:
        return (float(data[0]), float(data[0]))
    rng = np.random.default_rng(seed)
    if stat is np.mean:  # vectorised: one matrix of resampled indices
        stats = data[rng.integers(0, len(data), (n_boot, len(data)))].mean(axis=1)
    else:
        stats = np.array([stat(data[rng.integers(0, len(data), len(data))]) for _ in range(n_boot)])
    return (float(np.percentile(stats, 2.5)), float(np.percentile(stats, 97.5)))


def cluster_draws(n_clusters: int, n_boot: int, seed: int) -> np.ndarray:
    """How often each cluster is drawn in each bootstrap replicate: an (n_boot, n_clusters) count matrix."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n_clusters, (n_boot, n_clusters)) + n_clusters * np.arange(n_boot)[:, None]
    return np.bincount(picks.ravel(), minlength=n_boot * n_clusters).reshape(n_boot, n_clusters).astype(float)


def cluster_rate(k: Iterable[float], n: Iterable[float], chance: Iterable[float] | None = None,
                 n_boot: int = 2000, seed: int = 0, proportion: bool = True) -> dict:
    """Pooled rate sum(k)/sum(n) over clusters (games) with a 95% cluster-bootstrap interval.

    ``k[i]``, ``n[i]``: hits and units in game i. With ``chance[i]`` (the sum over game i's units of each
    unit's chance of a hit), also the chance level sum(chance)/sum(n) and the lift over chance with its
    interval, from the same resampled games (paired). When every resample gives the same rate (all hits or
    none, or a single game), the interval is Wilson's with the number of games as n, never zero width."""
    k, n = np.asarray(list(k), float), np.asarray(list(n), float)
    out: dict = {"k": int(k.sum()), "n": int(n.sum()), "n_games": int((n > 0).sum())}
    total = n.sum()
    out["rate"] = k.sum() / total if total else float("nan")
    c = None if chance is None else np.asarray(list(chance), float)
    if c is not None:
        out["chance"] = c.sum() / total if total else float("nan")
        out["lift"] = out["rate"] - out["chance"]
    if total == 0:
        out.update(ci_low=float("nan"), ci_high=float("nan"))
        if c is not None:
            out.update(lift_ci_low=float("nan"), lift_ci_high=float("nan"))
        return out
    w = cluster_draws(len(k), n_boot, seed)
    denom = w @ n
    ok = denom > 0
    rates = (w @ k)[ok] / denom[ok]
    low, high = np.percentile(rates, [2.5, 97.5])
    if high - low < 1e-12 and proportion:
        low, high = wilson(round(out["rate"] * out["n_games"]), out["n_games"])
    out.update(ci_low=float(low), ci_high=float(high))
    if c is not None:
        lifts = rates - (w @ c)[ok] / denom[ok]
        lo, hi = np.percentile(lifts, [2.5, 97.5])
        if hi - lo < 1e-12:
            half = (high - low) / 2
            lo, hi = out["lift"] - half, out["lift"] + half
        out.update(lift_ci_low=float(lo), lift_ci_high=float(hi))
    return out


def cluster_mean(values: pd.Series, clusters: pd.Series, n_boot: int = 2000, seed: int = 0) -> dict:
    """Mean of per-unit ``values`` (e.g. a Brier score per belief) with a cluster-bootstrap interval."""
    frame = pd.DataFrame({"v": pd.to_numeric(values, errors="coerce"), "g": clusters.values}).dropna()
    per = frame.groupby("g")["v"].agg(["sum", "count"])
    if per.empty:
        return {"n": 0, "n_games": 0, "mean": float("nan"), "ci_low": float("nan"), "ci_high": float("nan")}
    r = cluster_rate(per["sum"], per["count"], n_boot=n_boot, seed=seed, proportion=False)
    return {"n": r["n"], "n_games": r["n_games"], "mean": r["rate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"]}


def groups(df: pd.DataFrame, by: list[str] | None):
    """(key dict, sub-frame) per group of ``by`` (missing values kept as their own group)."""
    if by:
        for key, group in df.groupby(by, dropna=False, sort=True):
            yield dict(zip(by, key if isinstance(key, tuple) else (key,))), group
    else:
        yield {}, df


def sample_size(half_width: float, p: float = 0.5, z: float = Z95, design_effect: float = 1.0) -> int:
    """Independent units needed for a 95% interval of ± ``half_width`` on a rate near ``p`` (0.5 is the
    worst case). For per-vote rates pass the design effect (cluster-bootstrap variance / independent
    variance, about 2-4 for votes within a game) to get the number of votes; games ≈ that / votes per game."""
    if not 0 < half_width < 1:
        raise ValueError(f"half_width must be between 0 and 1, got {half_width}")
    return math.ceil(design_effect * z * z * p * (1 - p) / (half_width * half_width))
