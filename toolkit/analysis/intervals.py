"""Intervals: exact (Clopper–Pearson) or Wilson for per-game proportions, a seeded cluster bootstrap-t
(resampling whole games) for every rate whose units (votes, checks, actions, beliefs) are nested in games,
paired differences between conditions that share seeds, Holm's correction for many verdicts at once.

A game's votes are not independent (the same players, the same information), so an interval that treats
them as independent is too narrow; ``cluster_rate`` resamples games and recomputes the pooled rate. The
percentile bootstrap of a pooled rate undercovers at 10–30 games (0.87–0.93 in ``tests/analysis/
test_intervals.py``'s simulation); the bootstrap-t used here studentises each replicate with its own
cluster-robust standard error (the linearised ratio estimator) and covers 0.93–0.97 from 10 games up.
Below ``MIN_GAMES`` games the report prints "too few games" instead of an interval.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, Iterator

import numpy as np
import pandas as pd

Z95 = 1.959963984540054
MIN_GAMES = 10  # the smallest number of games at which the cluster interval was shown to cover (tests)
EXACT_BELOW = 30  # per-game proportions with fewer units get the exact (Clopper–Pearson) interval


def tidy(x: float) -> float:
    """A computed bound without its floating-point dust: 5.55e-17 is 0, 0.9999999999999999 is 1 (12 decimals
    kept: far finer than any interval here)."""
    return float(round(x, 12)) + 0.0 if math.isfinite(x) else float(x)


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials (honest at small n and near 0 or 1)."""
    if n == 0:
        return (float("nan"), float("nan"))
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, tidy(centre - half)), min(1.0, tidy(centre + half)))


def exact(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Clopper–Pearson interval for k successes in n trials (scipy's binomial test; never below level)."""
    if n == 0:
        return (float("nan"), float("nan"))
    from scipy.stats import binomtest

    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="exact")
    return (float(ci.low), float(ci.high))


def proportion(k: int, n: int, **extra) -> dict:
    """A per-game proportion (one unit per game or per player-game): exact interval below ``EXACT_BELOW``
    units, Wilson's from there (``method`` says which)."""
    small = n < EXACT_BELOW
    low, high = exact(k, n) if small else wilson(k, n)
    return {**extra, "k": int(k), "n": int(n), "rate": k / n if n else float("nan"), "ci_low": low, "ci_high": high,
            "method": "exact" if small else "wilson"}


def bootstrap_ci(values: Iterable[float], stat: Callable = np.mean, n_boot: int = 2000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of ``stat`` over independent values (seeded). The values are sorted
    first: independent values have no order, and the interval depends on them alone, not on the order rows came
    in (a rerun of a study lists its games in another order)."""
    data = np.sort(np.asarray([v for v in values if v is not None and v == v], dtype=float))
    if len(data) == 0:
        return (float("nan"), float("nan"))
    if len(data) == 1:
        return (float(data[0]), float(data[0]))
    rng = np.random.default_rng(seed)
    if stat is np.mean:  # vectorised: a block of replicates at a time (the whole matrix of indices and values
        # is 3.2 GB at 100,000 games), drawn in order from the one generator: the same numbers as in one go
        step = max(1, BLOCK // len(data))
        stats = np.concatenate([data[rng.integers(0, len(data), (min(step, n_boot - start), len(data)))].mean(axis=1)
                                for start in range(0, n_boot, step)])
    else:
        stats = np.array([stat(data[rng.integers(0, len(data), len(data))]) for _ in range(n_boot)])
    return (float(np.percentile(stats, 2.5)), float(np.percentile(stats, 97.5)))


def cluster_draws(n_clusters: int, n_boot: int, seed: int) -> np.ndarray:
    """How often each cluster is drawn in each bootstrap replicate: an (n_boot, n_clusters) count matrix."""
    return np.concatenate(list(Draws(n_clusters, n_boot, seed).blocks()))


BLOCK = 1 << 20  # the cells of one block of replicate weights (8 MB as floats)


class Draws:
    """``cluster_draws``' matrix a block of replicates (rows) at a time, the same numbers: the whole matrix of
    100,000 games is 1.6 GB, and building it took three more of its size."""

    def __init__(self, n_clusters: int, n_boot: int, seed: int):
        self.n_clusters, self.n_boot, self.seed = n_clusters, n_boot, seed

    def blocks(self) -> Iterator[np.ndarray]:
        g = self.n_clusters
        rng = np.random.default_rng(self.seed)  # drawn block by block, the integers of one draw of the whole
        step = max(1, BLOCK // max(g, 1))
        for start in range(0, self.n_boot, step):
            rows = min(step, self.n_boot - start)
            picks = rng.integers(0, g, (rows, g)) + g * np.arange(rows)[:, None]
            yield np.bincount(picks.ravel(), minlength=rows * g).reshape(rows, g).astype(float)


def _ratio_se(W: np.ndarray, k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of cluster weights ``W``: the pooled ratio Σwk/Σwn and its cluster-robust standard error
    (the linearised ratio estimator, with the G/(G−1) small-sample factor)."""
    g = len(k)
    denom = W @ n
    r = (W @ k) / np.where(denom > 0, denom, np.nan)
    ss = (W @ (k * k)) - 2 * r * (W @ (k * n)) + r * r * (W @ (n * n))
    return r, np.sqrt(np.clip(ss, 0, None) * g / max(g - 1, 1)) / denom


def boot_t(k: np.ndarray, n: np.ndarray, W: np.ndarray | Draws) -> tuple[float, float, float, float]:
    """Ratio Σk/Σn, its standard error and the 95% bootstrap-t interval from the replicate weights ``W``.
    A replicate whose drawn games all agree has a standard error near 0 and an unbounded t; its standard
    error is floored at se/√G (with it the interval covers 0.93–0.97 at 10 games, without it up to 0.974)."""
    r0, se0 = (float(a[0]) for a in _ratio_se(np.ones((1, len(k))), k, n))
    if not se0 > 1e-12:
        return r0, 0.0, r0, r0
    parts = [_ratio_se(w, k, n) for w in (W.blocks() if isinstance(W, Draws) else [W])]
    r, se = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    ok = np.isfinite(r)
    t = (r[ok] - r0) / np.maximum(se[ok], se0 / math.sqrt(len(k)))
    t_low, t_high = np.percentile(t, [2.5, 97.5])
    return r0, se0, r0 - t_high * se0, r0 - t_low * se0


def cluster_rate(k: Iterable[float], n: Iterable[float], chance: Iterable[float] | None = None,
                 n_boot: int = 2000, seed: int = 0, proportion: bool = True) -> dict:
    """Pooled rate sum(k)/sum(n) over clusters (games) with a 95% cluster bootstrap-t interval.

    ``k[i]``, ``n[i]``: hits and units in game i. With ``chance[i]`` (the sum over game i's units of each
    unit's chance of a hit), also the chance level sum(chance)/sum(n) and the lift over chance with its
    interval, from the same resampled games (paired). When every game has the same rate (all hits or none,
    or a single game) the bootstrap cannot vary: the interval is then the exact (Clopper–Pearson) one with
    the games as trials, never zero width. ``method`` names the interval; ``n_games`` below ``MIN_GAMES``
    is too few for any interval to be trusted (the report prints "too few games")."""
    k, n = np.asarray(list(k), float), np.asarray(list(n), float)
    keep = n > 0
    c = None if chance is None else np.asarray(list(chance), float)[keep]
    k, n = k[keep], n[keep]
    out: dict = {"k": int(round(k.sum())) if proportion else float(k.sum()), "n": int(n.sum()),
                 "n_games": int(len(n))}
    total = n.sum()
    out["rate"] = k.sum() / total if total else float("nan")
    if c is not None:
        out["chance"] = c.sum() / total if total else float("nan")
        out["lift"] = out["rate"] - out["chance"]
    if total == 0:
        out.update(ci_low=float("nan"), ci_high=float("nan"), method="none")
        if c is not None:
            out.update(lift_ci_low=float("nan"), lift_ci_high=float("nan"))
        return out
    W = Draws(len(k), n_boot, seed)
    _, se, low, high = boot_t(k, n, W)
    method = "bootstrap-t"
    if se < 1e-12:
        method = "exact (games)" if proportion else "none (no variation)"
        low, high = (exact(round(out["rate"] * out["n_games"]), out["n_games"]) if proportion
                     else (out["rate"], out["rate"]))
    if proportion:
        low, high = max(low, 0.0), min(high, 1.0)
    out.update(ci_low=tidy(low), ci_high=tidy(high), method=method)
    if c is not None:
        _, lse, lo, hi = boot_t(k - c, n, W)
        if lse < 1e-12:
            lo, hi = out["lift"] - (out["rate"] - low), out["lift"] + (high - out["rate"])
        out["lift"] = tidy(out["lift"])
        out.update(lift_ci_low=tidy(lo), lift_ci_high=tidy(hi))
    return out


def paired_difference(ka: Iterable[float], na: Iterable[float], kb: Iterable[float], nb: Iterable[float],
                      n_boot: int = 2000, seed: int = 0) -> dict:
    """Difference of two pooled rates Σka/Σna − Σkb/Σnb whose units are paired by cluster (index i is one
    seed, played in both conditions with the same role deal): the seeds are resampled together, so what the
    common deal explains cancels. 95% bootstrap-t interval with the linearised standard error."""
    ka, na, kb, nb = (np.asarray(list(x), float) for x in (ka, na, kb, nb))
    g = len(ka)

    def est(w):
        Na, Nb = w @ na, w @ nb
        ra, rb = (w @ ka) / Na, (w @ kb) / Nb
        u = (ka - ra[:, None] * na) / Na[:, None] - (kb - rb[:, None] * nb) / Nb[:, None]
        return ra - rb, np.sqrt((w * u * u).sum(axis=1) * g / max(g - 1, 1))

    (d0,), (se0,) = est(np.ones((1, g)))
    parts = [est(w) for w in Draws(g, n_boot, seed).blocks()]
    d, se = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    ok = np.isfinite(d)
    t_low = t_high = 0.0  # every pair the same difference: no spread to resample (and no 0/0 to warn about)
    if se0 > 1e-12:
        t = (d[ok] - d0) / np.maximum(se[ok], se0 / math.sqrt(g))
        t_low, t_high = np.percentile(t, [2.5, 97.5])
    return {"n_pairs": g, "diff": tidy(d0), "ci_low": tidy(d0 - t_high * se0), "ci_high": tidy(d0 - t_low * se0),
            "method": "paired bootstrap-t (common seeds)"}


def holm(pvalues: Iterable[float], alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Holm's step-down correction (statsmodels): which hypotheses are rejected at family-wise ``alpha``,
    and the adjusted p-values."""
    p = np.asarray(list(pvalues), float)
    if len(p) == 0:
        return np.zeros(0, bool), np.zeros(0)
    from statsmodels.stats.multitest import multipletests

    reject, adjusted, _, _ = multipletests(p, alpha=alpha, method="holm")
    return reject, adjusted


def cluster_mean(values: pd.Series, clusters: pd.Series, n_boot: int = 2000, seed: int = 0,
                 bounds: tuple[float, float] | None = None) -> dict:
    """Mean of per-unit ``values`` (e.g. a Brier score per belief) with a cluster-bootstrap interval.

    ``bounds`` (the values' known range, e.g. (0, 1) for a share, (1, last day) for a night): the mean is
    computed on the values scaled to [0, 1], so that where the resampled games cannot vary (every game the
    same value: a potion always used on night 1 in 10 games) the interval is the exact one with the games as
    trials, scaled back, never a zero-width point. Without bounds such a mean gets a zero-width interval (the
    data say nothing about its spread): at 10 games of a skewed night count that undercovered (0.81)."""
    frame = pd.DataFrame({"v": pd.to_numeric(values, errors="coerce"), "g": clusters.values}).dropna()
    if bounds is not None:
        lo, hi = bounds
        span = (hi - lo) if hi > lo else 1.0
        frame["v"] = ((frame["v"] - lo) / span).clip(0, 1)
    per = frame.groupby("g")["v"].agg(["sum", "count"])
    if per.empty:
        return {"n": 0, "n_games": 0, "mean": float("nan"), "ci_low": float("nan"), "ci_high": float("nan")}
    r = cluster_rate(per["sum"], per["count"], n_boot=n_boot, seed=seed, proportion=bounds is not None)
    out = {"n": r["n"], "n_games": r["n_games"], "mean": r["rate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"]}
    if bounds is not None:
        out.update({k: lo + span * out[k] for k in ("mean", "ci_low", "ci_high")})
    return out


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
