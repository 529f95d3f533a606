"""Sequential comparisons for adaptive tournaments: a group-sequential test on side-swapped game pairs, with
decisions and intervals that stay valid whenever the run stops.

**The unit.** A comparison is two models A and B on one preset. Its unit is a *side-swapped pair*: one game
with A in every village seat and B in every wolf seat, one with the sides swapped. The pair's score is
d = (A's wins − B's wins) / 2 ∈ {−1, −½, 0, ½, 1} (a draw is half a win each); its mean μ is how much more
often A's side wins than B's, averaged over the two sides. Pairs are independent (every game its own seed),
whatever the other models and however rounds were allocated, so the test needs no model of the strengths:
``μ = 0`` exactly when A and B win equally often against each other. It is a head-to-head claim: where the
order of two models depends on the opponent (A beats C more often than B does, yet A and B are even against
each other), the verdict is about A against B, and its error guarantee holds as stated — no third model enters
it (``benchmarks/sequential_tournament.py`` simulates such a pool).

**The design** (``Design``): a group-sequential test with ``J`` looks at equal numbers of pairs (a round gives
every open comparison one look's batch), Z_j = Σd / sqrt(Σd²): the mean over its standard error if μ = 0,
a self-normalised sum whose tails under "no difference" (d then symmetric about 0) are no heavier than the
normal's, so the bounds hold with the spread estimated from few pairs (a sample standard deviation instead
made the error 10–15% too high at 8–40 pairs a look). Efficacy: |Z_j| ≥ c_j, the bounds of
Lan–DeMets' O'Brien–Fleming α-spending at α/K two-sided (K comparisons: Bonferroni), computed ignoring the
futility bounds (non-binding), so the family-wise chance of naming a wrong order is at most α however the run
stops. Futility (equivalence): |Z_j| < i_j, the bounds of a β-spending function β·t³ at a true difference
of ``delta`` logits — A and B are then "within ±delta": a difference as large as the design difference would
have been found with the design's power, the same claim a fixed design makes when it cannot separate two
models (its error is β at |Δ| = delta, not α). The bounds meet at the last look, so every comparison is
decided by then. Its pairs at most, ``n_max``, are R × the fixed design's (``n_fixed``: one analysis at the
end, same α/K and power), R ≈ 1.03–1.08 — the hard cap, within 1.1 × the fixed design.

**Sizing.** ``delta`` (logits) is a difference on each side: with the preset's village rate p, h = logit p,
μ_delta = expit(h + delta) − expit(h − delta) and sd(d) = sqrt(2p(1 − p)) (independent games), at the known or
piloted rate — not 0.5: a preset the wolves win 80% of the time moves μ less for the same logits.

**Intervals**: repeated confidence intervals mean(d) ± c_j · sqrt(Σd²)/n (Jennison & Turnbull 2000, ch. 9, with
the spread of the test, so the interval excludes 0 exactly when an order is named), valid at every look at
once; a decided comparison's verdict and interval are frozen at the look that decided it and it gets no more
games.

**Where the state lives.** ``Coordinator`` holds the designs and comparisons, hands out rounds as batches of
side-swapped pairs (``next_round``), takes each round's pair scores (``add_round``) and is the one place a
look is taken. Its state is a function of the recorded pair scores in recorded order (``state`` /
``from_state``: JSON), so a resumed or distributed run rebuilds it from the games.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from functools import lru_cache

import numpy as np
import pandas as pd

METHOD = ("group-sequential test on side-swapped game pairs (Lan–DeMets O'Brien–Fleming α-spending, non-binding; "
          "β-spending futility for 'within ±δ'), Bonferroni over the comparisons asked, repeated confidence "
          "intervals")
LOOKS = 10  # looks at most; fewer where a look would hold under MIN_BATCH pairs
MIN_BATCH = 8  # pairs per look at least: the standard deviation is estimated from the pairs
RHO = 3.0  # β-spending β·t^RHO: early futility stops only when the evidence is clear
CAP = 1.1  # the most pairs a comparison may take, as a multiple of the fixed design's: fewer looks where needed
GRID = 0.04  # step of the grid the boundary recursion integrates on (score scale)


def _norm():
    from scipy.stats import norm  # here: importing scipy.stats takes ~2 s

    return norm


def expit(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def logit(p: float) -> float:
    return math.log(p / (1 - p))


# ------------------------------------------------------------------ the boundaries (Brownian motion on a grid)
def _kernel(grid: np.ndarray, theta: float, dt: float) -> np.ndarray:
    """The transition of B over ``dt`` on ``grid``: density at grid[i] from grid[j], times the grid step."""
    return np.exp(-0.5 * ((grid[:, None] - grid[None, :] - theta * dt) ** 2) / dt) / math.sqrt(2 * math.pi * dt) * GRID


def _outer_bound(density: np.ndarray, z: np.ndarray, want: float) -> float:
    """The smallest c on the grid with P(|Z| ≥ c) ≤ ``want`` (``density`` on the grid, Z = ``z``)."""
    az = np.abs(z)
    order = np.argsort(-az)
    tail = np.cumsum(density[order]) * GRID  # mass at or beyond each |z|, from the top
    k = int(np.searchsorted(tail, want, side="right"))  # points that may be outside
    return float(az[order][k - 1]) if k else float(az.max()) + GRID


def _inner_bound(density: np.ndarray, z: np.ndarray, want: float, cap: float) -> float:
    """The largest i ≤ ``cap`` on the grid with P(|Z| ≤ i) ≤ ``want``."""
    az = np.abs(z)
    order = np.argsort(az)
    head = np.cumsum(density[order]) * GRID
    k = int(np.searchsorted(head, want, side="right"))
    return min(float(az[order][k - 1]) if k else 0.0, cap)


@lru_cache(maxsize=None)
def efficacy_bounds(alpha: float, looks: int) -> tuple[float, ...]:
    """c_1..c_J: |Z_j| ≥ c_j rejects, spending Lan–DeMets' O'Brien–Fleming α(t) = 4 − 4Φ(z_{α/4}/√t) at t = j/J
    (α/2 a side, no futility bounds: non-binding)."""
    norm = _norm()
    t = np.arange(1, looks + 1) / looks
    spend = 4 - 4 * norm.cdf(norm.isf(alpha / 4) / np.sqrt(t))
    grid = np.arange(-8, 8 + GRID, GRID)
    dt = 1.0 / looks
    kern = _kernel(grid, 0.0, dt)
    density, bounds = None, []
    for j, tj in enumerate(t):
        density = (np.exp(-0.5 * grid ** 2 / dt) / math.sqrt(2 * math.pi * dt) if density is None
                   else kern @ density)
        z = grid / math.sqrt(tj)
        c = _outer_bound(density, z, spend[j] - (spend[j - 1] if j else 0.0))
        bounds.append(c)
        density = np.where(np.abs(z) < c, density, 0.0)
    return tuple(bounds)


def _futility_pass(c: tuple[float, ...], theta: float, beta: float) -> tuple[list[float], float]:
    """Futility bounds i_1..i_J (|Z_j| ≤ i_j stops for "within ±delta"), spending β·t^RHO under drift ``theta``
    (the design difference on the Z scale at t = 1) with the efficacy bounds binding, and how far i_J falls
    short of c_J (> 0: the bounds do not meet: more information is needed)."""
    looks = len(c)
    t = np.arange(1, looks + 1) / looks
    spend = beta * t ** RHO
    grid = np.arange(-6, 6 + theta + GRID, GRID)
    dt = 1.0 / looks
    kern = _kernel(grid, theta, dt)
    density, inner = None, []
    for j, tj in enumerate(t):
        density = (np.exp(-0.5 * (grid - theta * dt) ** 2 / dt) / math.sqrt(2 * math.pi * dt) if density is None
                   else kern @ density)
        z = grid / math.sqrt(tj)
        i = _inner_bound(density, z, spend[j] - (spend[j - 1] if j else 0.0), c[j])
        inner.append(i)
        density = np.where((np.abs(z) > i) & (np.abs(z) < c[j]), density, 0.0)
    return inner, c[-1] - inner[-1]


@lru_cache(maxsize=None)
def futility_bounds(alpha: float, power: float, looks: int) -> tuple[float, tuple[float, ...]]:
    """(R, i_1..i_J): the inflation R of the fixed design's pairs at which the β-spending futility bounds meet
    the efficacy bounds at the last look (so the design has its power), and those bounds."""
    norm = _norm()
    c = efficacy_bounds(alpha, looks)
    fixed = norm.isf(alpha / 2) + norm.ppf(power)
    lo, hi = fixed, fixed * 1.5
    for _ in range(12):
        mid = (lo + hi) / 2
        if _futility_pass(c, mid, 1 - power)[1] > GRID:  # the bounds meet to the grid's resolution
            lo = mid
        else:
            hi = mid
    inner, _ = _futility_pass(c, hi, 1 - power)
    inner[-1] = c[-1]
    return (hi / fixed) ** 2, tuple(inner)


@dataclass(frozen=True)
class Design:
    """The constants of one preset's comparisons, fixed before the first game: family-wise ``alpha`` over ``k``
    comparisons, ``power`` at ``delta`` logits on each side at village rate ``p_village``."""

    alpha: float
    power: float
    delta: float
    k: int
    p_village: float
    looks: int
    batch: int  # pairs per look
    n_fixed: int  # pairs of the fixed design of the same error and power
    inflation: float
    mu_delta: float  # the design difference on the pair-score scale
    efficacy: tuple[float, ...]
    futility: tuple[float, ...]

    @property
    def n_max(self) -> int:
        return self.batch * self.looks

    @classmethod
    def make(cls, alpha: float = 0.05, power: float = 0.8, delta: float = 0.5, k: int = 1,
             p_village: float = 0.5) -> "Design":
        if not (0 < alpha < 1 and 0 < power < 1 and delta > 0 and k >= 1 and 0 < p_village < 1):
            raise ValueError(f"need 0 < alpha < 1, 0 < power < 1, delta > 0, k ≥ 1, 0 < village rate < 1; got "
                             f"{alpha}, {power}, {delta}, {k}, {p_village}")
        norm = _norm()
        h = logit(p_village)
        mu = expit(h + delta) - expit(h - delta)
        sd = math.sqrt(2 * p_village * (1 - p_village))
        z = norm.isf(alpha / k / 2) + norm.ppf(power)
        n_fixed = max(2, math.ceil((z * sd / mu) ** 2))
        looks = LOOKS
        while looks > 2 and n_fixed / looks < MIN_BATCH:
            looks -= 1
        while True:  # as many looks as the cap allows
            r, inner = futility_bounds(round(alpha / k, 12), power, looks)
            batch = math.ceil(r * n_fixed / looks)
            if looks == 2 or batch * looks <= CAP * n_fixed:
                break
            looks -= 1
        return cls(alpha, power, delta, k, p_village, looks, batch, n_fixed, r, mu,
                   efficacy_bounds(round(alpha / k, 12), looks), inner)

    def decide(self, look: int, scores: np.ndarray) -> tuple[str, float, float, float]:
        """("a", "b", "within" or "open"), the estimate and the repeated interval of μ after ``look`` looks."""
        n = len(scores)
        if n == 0:
            return "open", math.nan, -1.0, 1.0
        mean = float(np.mean(scores))
        sd = max(math.sqrt(float(np.mean(np.square(scores)))), 0.5 / math.sqrt(n))  # the spread if μ = 0
        c, i = self.efficacy[look - 1], self.futility[look - 1]
        z = mean / (sd / math.sqrt(n))
        lo, hi = max(mean - c * sd / math.sqrt(n), -1.0), min(mean + c * sd / math.sqrt(n), 1.0)  # μ is in [−1, 1]
        if z >= c:
            return "a", mean, lo, hi
        if z <= -c:
            return "b", mean, lo, hi
        if abs(z) < i:
            return "within", mean, lo, hi
        return "open", mean, lo, hi


# ------------------------------------------------------------------ comparisons and the coordinator
@dataclass
class Comparison:
    preset: str
    a: str
    b: str
    scores: list[float] = field(default_factory=list)  # pair scores d, in recorded order
    looks: int = 0
    verdict: str = "undecided"
    estimate: float = math.nan
    ci_low: float = -1.0
    ci_high: float = 1.0
    decided_round: int | None = None
    decided_games: int | None = None

    @property
    def open(self) -> bool:
        return self.verdict == "undecided"

    @property
    def decided(self) -> bool:
        return not self.open


def pair_score(a_village_winner: str, b_village_winner: str) -> float | None:
    """d of one side-swapped pair from its two games' winners (A in the village seats of the first, B in the
    second): +1 A's side won both, −1 B's side both, a draw half a win each; None when a game has no result."""
    points = {"village": 1.0, "werewolves": 0.0, "draw": 0.5}
    if a_village_winner not in points or b_village_winner not in points:
        return None
    a = points[a_village_winner] + (1 - points[b_village_winner])
    return a - 1.0


class Coordinator:
    """The sequential state of an adaptive tournament: the design of every preset, the comparisons asked, the
    rounds handed out and the looks taken. ``next_round`` hands out a batch of side-swapped pairs per open
    comparison; ``add_round`` takes those pairs' scores and takes the look; nothing else changes a verdict."""

    def __init__(self, designs: dict[str, Design], comps: list[Comparison]):
        self.designs, self.comps = designs, comps
        self.rounds = 0
        self.games = 0

    def next_round(self) -> list[tuple[str, str, str, int]]:
        """(preset, a, b, pairs) for every open comparison: one look's batch. Empty: every comparison decided."""
        return [(c.preset, c.a, c.b, self.designs[c.preset].batch) for c in self.comps if c.open]

    def add_round(self, scores: dict[tuple[str, str, str], list[float]], n_games: int) -> None:
        """``scores``: per (preset, a, b), the round's pair scores in recorded order; ``n_games``: the games the
        round played. A comparison that was decided takes no more scores (it was given no pairs)."""
        self.rounds += 1
        self.games += n_games
        for c in self.comps:
            new = scores.get((c.preset, c.a, c.b))
            if not c.open or new is None:
                continue
            c.scores += list(new)
            c.looks += 1
            d = self.designs[c.preset]
            verdict, c.estimate, c.ci_low, c.ci_high = d.decide(c.looks, np.asarray(c.scores))
            if verdict != "open" or c.looks >= d.looks:
                c.verdict = {"a": f"{c.a} > {c.b}", "b": f"{c.b} > {c.a}"}.get(verdict, f"within ±{d.delta:g}")
                c.decided_round, c.decided_games = self.rounds, self.games

    @property
    def decided(self) -> int:
        """Comparisons with a final verdict: what the progress bar and the report both count."""
        return sum(c.decided for c in self.comps)

    @property
    def done(self) -> bool:
        return not any(c.open for c in self.comps)

    def table(self) -> pd.DataFrame:
        """One row per comparison: pairs, the estimate and repeated interval of μ (A's side's wins minus B's per
        game, averaged over the sides), the verdict and when it came."""
        rows = [{"preset": c.preset, "a": c.a, "b": c.b, "pairs": len(c.scores), "looks": c.looks,
                 "estimate": c.estimate, "ci_low": c.ci_low, "ci_high": c.ci_high, "verdict": c.verdict,
                 "decided_round": c.decided_round, "decided_games": c.decided_games} for c in self.comps]
        return pd.DataFrame(rows)

    def state(self) -> dict:
        """Everything the coordinator knows, as JSON-ready data."""
        return {"designs": {p: asdict(d) for p, d in self.designs.items()}, "rounds": self.rounds,
                "games": self.games, "comparisons": [asdict(c) for c in self.comps]}

    @classmethod
    def from_state(cls, state: dict) -> "Coordinator":
        designs = {p: Design(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})
                   for p, d in state["designs"].items()}
        out = cls(designs, [Comparison(**c) for c in state["comparisons"]])
        out.rounds, out.games = state["rounds"], state["games"]
        return out


def comparisons(models: list[str], presets: list[str], asked: list[tuple[str, str]] | None = None
                ) -> list[Comparison]:
    """Every pair of models in every preset, or the pairs ``asked`` as (a, b), in the orientation asked."""
    out = []
    for preset in presets:
        for i, a in enumerate(models):
            for b in models[i + 1:]:
                if asked is None or (a, b) in asked:
                    out.append(Comparison(preset, a, b))
                elif (b, a) in asked:
                    out.append(Comparison(preset, b, a))
    return out


def fixed_games(designs: dict[str, Design], comps: list[Comparison]) -> int:
    """Games of the fixed design of the same error and power: every comparison's pairs played at once and
    analysed once at the end (two games a pair)."""
    return sum(2 * designs[c.preset].n_fixed for c in comps)


def max_games(designs: dict[str, Design], comps: list[Comparison]) -> int:
    """The hard cap: every comparison run to its last look."""
    return sum(2 * designs[c.preset].n_max for c in comps)


def simulate(design: Design, p1: float, p2: float, reps: int, rng: np.random.Generator
             ) -> tuple[np.ndarray, np.ndarray]:
    """``reps`` comparisons under ``design`` run to their verdict, vectorised (outcomes only, no games): A's
    side wins its village game with probability ``p1``, B's with ``p2``. (pairs used, verdict: 1 A > B, −1
    B > A, 0 within ±delta) — the same looks and rule as ``Design.decide``."""
    probs = [p1 * (1 - p2), (1 - p1) * p2, 1 - p1 * (1 - p2) - (1 - p1) * p2]  # d = +1, −1, 0
    counts = rng.multinomial(design.batch, probs, size=(reps, design.looks))
    n = design.batch * np.arange(1, design.looks + 1)
    s = np.cumsum(counts[..., 0] - counts[..., 1], axis=1)
    ss = np.cumsum(counts[..., 0] + counts[..., 1], axis=1)
    mean = s / n
    sd = np.maximum(np.sqrt(ss / n), 0.5 / np.sqrt(n))
    z = mean / (sd / np.sqrt(n))
    c, i = np.array(design.efficacy), np.array(design.futility)
    stop = (np.abs(z) >= c) | (np.abs(z) < i)
    stop[:, -1] = True
    first = stop.argmax(axis=1)
    zf = z[np.arange(reps), first]
    return n[first], np.where(zf >= c[first], 1, np.where(zf <= -c[first], -1, 0))
