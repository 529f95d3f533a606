"""Sequential comparisons for adaptive tournaments: decisions and intervals that stay valid however the games
were allocated and whenever the run stops.

**The observations.** A comparison is two models A and B on one side (village or wolves) of one preset. Its
games are *paired within a round*: the k-th decided game of A against opponent W in round r with the k-th of
B against the same W in the same round (the opponent is the wolf model for a village comparison, the village
model for a wolf comparison). Under the side-aware Bradley–Terry model the ratings fit
(logit P(village wins) = h + v_V − w_W), a pair whose two games end differently (a *discordant* pair) favours
A with probability θ = expit(Δ), Δ = A's strength − B's on that side — whatever the opponent, the side term
and every other strength (the conditional-likelihood argument behind McNemar's test). Every game of a round
is scheduled before any of its results is seen, so the directions of the discordant pairs, in recorded order
(round, opponent, k), are independent Bernoulli(θ) draws however the rounds were allocated. Without the
Bradley–Terry model the test of "no difference" stays exact: if A and B win equally often against every
opponent, every direction is a fair coin.

**The design** (``Plan``). D_n = (pairs favouring A) − (pairs favouring B) after n discordant pairs is
monitored against a constant boundary ±b up to a horizon of N pairs: a continuous-monitoring
O'Brien–Fleming design (its error-spending function is Lan–DeMets' O'Brien–Fleming one). b is the smallest
integer with P(|D_n| ≥ b for some n ≤ N | θ = 1/2) ≤ α/K, computed exactly by a recursion over the random
walk (``crossing``), K the number of comparisons asked (Bonferroni). The bound holds for a look after every
pair, so looking only at round ends, or stopping early for any reason (every comparison decided, a game or
spending cap, a kill), can only lower the error: over every comparison and every look, the chance of any
false separation is at most α. N is the smallest horizon at which a true difference of ``delta`` logits is
separated with probability ≥ ``power`` (the same recursion at θ = expit(delta)).

**Intervals**: repeated confidence intervals (Jennison & Turnbull 2000, ch. 9): θ0 is kept while
|D_n − n(2θ0 − 1)| < b·2·sqrt(θ0(1 − θ0)) — the same boundary, scaled to the spread of the walk at θ0 (exact
at θ0 = 1/2, a normal approximation elsewhere; ``benchmarks/adaptive_tournament.py`` checks the coverage),
solved in closed form and mapped to logits. They hold simultaneously at every look, so the interval at the
end of a run stopped by its own data covers. A comparison is decided ``A > B`` when the walk reaches +b
(0 leaves the interval), ``within ±delta`` when the interval lies inside (−delta, delta) (no difference as
large as the one the design was powered for), and stays undecided at the horizon otherwise.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pandas as pd

SIDES = ("village", "werewolves")
METHOD = ("continuous-monitoring O'Brien–Fleming boundary on within-round paired games (exact for 'no "
          "difference'), Bonferroni over the comparisons asked, repeated confidence intervals")


# ------------------------------------------------------------------ the boundary, exactly
def crossing(horizon: int, bound: int, theta: float) -> tuple[float, float]:
    """P(the walk D_n reaches +bound, resp. −bound, for some n ≤ horizon), steps +1 with probability theta."""
    if bound <= 0:
        return 1.0, 0.0
    inside = np.zeros(2 * bound - 1)
    inside[bound - 1] = 1.0  # D = 0
    up = down = 0.0
    for _ in range(int(horizon)):
        up += theta * inside[-1]
        down += (1 - theta) * inside[0]
        new = np.zeros_like(inside)
        new[1:] += theta * inside[:-1]
        new[:-1] += (1 - theta) * inside[1:]
        inside = new
        if inside.sum() < 1e-15:
            break
    return float(up), float(down)


@lru_cache(maxsize=None)
def boundary(horizon: int, alpha: float) -> int:
    """The smallest integer b with P(|D_n| ≥ b for some n ≤ horizon | θ = 1/2) ≤ alpha (two-sided)."""
    lo, hi = 1, int(horizon) + 1  # hi is never reached: error 0
    while lo < hi:
        mid = (lo + hi) // 2
        if sum(crossing(horizon, mid, 0.5)) <= alpha:
            hi = mid
        else:
            lo = mid + 1
    return lo


@lru_cache(maxsize=None)
def horizon_for(alpha: float, power: float, delta: float) -> int:
    """The smallest horizon N (discordant pairs) whose boundary at two-sided level alpha separates a true
    difference of ``delta`` logits (in the right direction) with probability ≥ power."""
    theta = 1.0 / (1.0 + math.exp(-delta))
    mu, sd = 2 * theta - 1, 2 * math.sqrt(theta * (1 - theta))
    from scipy.stats import norm  # here: importing scipy.stats takes ~2 s
    c = norm.isf(alpha / 4)  # the Brownian approximation of the boundary, for a starting guess
    guess = max(4, int(((c + norm.ppf(power)) * sd / mu) ** 2))

    def enough(n: int) -> bool:
        return crossing(n, boundary(n, alpha), theta)[0] >= power

    lo, hi = max(1, guess // 2), guess
    while not enough(hi):
        lo, hi = hi, hi * 2
    while lo < hi:  # power rises with the horizon apart from the lattice's small wiggles
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


@dataclass(frozen=True)
class Plan:
    """The design constants, fixed before the first game: family-wise ``alpha`` over ``k`` comparisons,
    ``power`` at a true difference of ``delta`` logits; ``horizon`` (discordant pairs per comparison) and
    ``bound`` follow from them."""

    alpha: float
    power: float
    delta: float
    k: int
    horizon: int
    bound: int

    @classmethod
    def make(cls, alpha: float = 0.05, power: float = 0.8, delta: float = 0.5, k: int = 1) -> "Plan":
        if not (0 < alpha < 1 and 0 < power < 1 and delta > 0 and k >= 1):
            raise ValueError(f"need 0 < alpha < 1, 0 < power < 1, delta > 0, k ≥ 1; got {alpha}, {power}, "
                             f"{delta}, {k}")
        n = horizon_for(alpha / k, power, delta)
        return cls(alpha, power, delta, k, n, boundary(n, alpha / k))

    def interval(self, n: int, d: int) -> tuple[float, float]:
        """The repeated confidence interval of Δ (logits) after n discordant pairs with walk D = d."""
        b = self.bound
        if n == 0:
            return -math.inf, math.inf
        root = b * math.sqrt(max(n * n + b * b - d * d, 0.0))
        lo, hi = (d * n - root) / (n * n + b * b), (d * n + root) / (n * n + b * b)
        return _logit_x(lo), _logit_x(hi)

    def fixed_pairs(self) -> int:
        """Discordant pairs a single analysis at the end would need for the same error and power (the normal
        approximation at θ = expit(delta))."""
        theta = 1.0 / (1.0 + math.exp(-self.delta))
        from scipy.stats import norm  # here: importing scipy.stats takes ~2 s
        z = norm.isf(self.alpha / self.k / 2) + norm.ppf(self.power)
        return math.ceil((z * 2 * math.sqrt(theta * (1 - theta)) / (2 * theta - 1)) ** 2)


def _logit_x(x: float) -> float:
    """Δ = logit(θ) for x = 2θ − 1."""
    if x <= -1:
        return -math.inf
    if x >= 1:
        return math.inf
    return math.log((1 + x) / (1 - x))


# ------------------------------------------------------------------ comparisons and their walks
@dataclass
class Comparison:
    preset: str
    side: str
    a: str
    b: str
    steps: list[int] = field(default_factory=list)  # +1 favours a, −1 favours b; at most the horizon
    verdict: str = "undecided"
    decided_round: int | None = None
    decided_games: int | None = None  # games of the whole tournament played when it was decided
    decided_pairs: int | None = None

    @property
    def n(self) -> int:
        return len(self.steps)

    @property
    def d(self) -> int:
        return int(sum(self.steps))

    @property
    def open(self) -> bool:
        return self.verdict == "undecided"


def comparisons(models: list[str], presets: list[str], asked: list[tuple[str, str, str]] | None = None
                ) -> list[Comparison]:
    """Every pair of models on both sides of every preset, or the pairs ``asked`` as (side, a, b), in the
    orientation asked."""
    out = []
    for preset in presets:
        for side in SIDES:
            for a, b in itertools.combinations(models, 2):
                if asked is None or (side, a, b) in asked:
                    out.append(Comparison(preset, side, a, b))
                elif (side, b, a) in asked:
                    out.append(Comparison(preset, side, b, a))
    return out


def round_pairs(comp: Comparison, wins: dict[tuple[str, str], list[int]], models: list[str]) -> list[int]:
    """The directions of one round's discordant pairs of ``comp``, in order (opponent, k). ``wins`` maps
    (village model, wolf model) to the round's decided games of that matchup in recorded order, 1 where the
    village won."""
    steps = []
    for w in models:
        if comp.side == "village":  # A and B hold the village against the same wolves
            xa, xb = wins.get((comp.a, w), []), wins.get((comp.b, w), [])
        else:  # A and B hold the wolves against the same village: a wolf win is 1 − village win
            xa = [1 - x for x in wins.get((w, comp.a), [])]
            xb = [1 - x for x in wins.get((w, comp.b), [])]
        steps += [1 if p else -1 for p, q in zip(xa, xb) if p != q]
    return steps


class Monitor:
    """The sequential state of a tournament: feed it each round's decided games (``add_round``), in the
    order they were scheduled; it decides comparisons as the evidence arrives."""

    def __init__(self, plan: Plan, models: list[str], comps: list[Comparison]):
        self.plan, self.models, self.comps = plan, list(models), comps
        self.games = 0
        self.rounds = 0

    def add_round(self, wins: dict[str, dict[tuple[str, str], list[int]]], n_games: int) -> None:
        """``wins``: per preset, (village model, wolf model) → that round's decided games, 1 = village won;
        ``n_games``: the games the round played (decided or not), for the cost of each decision."""
        self.rounds += 1
        self.games += n_games
        for c in self.comps:
            new = round_pairs(c, wins.get(c.preset, {}), self.models)
            room = self.plan.horizon - c.n
            for step in new[:max(room, 0)]:
                c.steps.append(step)
                if c.open and abs(c.d) >= self.plan.bound:  # the walk reached the boundary: decided
                    self._decide(c, f"{c.a} > {c.b}" if c.d > 0 else f"{c.b} > {c.a}")
            if c.open:
                lo, hi = self.plan.interval(c.n, c.d)
                if -self.plan.delta < lo and hi < self.plan.delta:
                    self._decide(c, f"within ±{self.plan.delta:g}")
                elif c.n >= self.plan.horizon:
                    c.verdict = "undecided at the horizon"

    def _decide(self, c: Comparison, verdict: str) -> None:
        c.verdict, c.decided_round, c.decided_games, c.decided_pairs = verdict, self.rounds, self.games, c.n

    @property
    def done(self) -> bool:
        return not any(c.open for c in self.comps)

    def table(self) -> pd.DataFrame:
        """One row per comparison: pairs, walk, estimate and repeated 95%-family interval of Δ = a − b
        (logits), the verdict and when it came (round, games of the tournament, pairs)."""
        rows = []
        for c in self.comps:
            lo, hi = self.plan.interval(c.n, c.d)
            s = (c.n + c.d) / 2
            rows.append({"preset": c.preset, "side": c.side, "a": c.a, "b": c.b, "pairs": c.n, "walk": c.d,
                         "estimate": math.log((s + 0.5) / (c.n - s + 0.5)), "ci_low": lo, "ci_high": hi,
                         "verdict": c.verdict, "decided_round": c.decided_round, "decided_games": c.decided_games,
                         "decided_pairs": c.decided_pairs})
        return pd.DataFrame(rows)

    def ratings(self) -> pd.DataFrame:
        """Each model's strength per preset and side relative to the average model (the mean of its
        differences to every model, itself included at 0), with the interval implied by the comparisons'
        simultaneous intervals (so it holds with them). Needs every pair of the side asked."""
        t = self.table()
        rows = []
        for (preset, side), g in t.groupby(["preset", "side"], sort=False):
            m = len(self.models)
            if len(g) != m * (m - 1) // 2:
                continue
            for model in self.models:
                est = lo = hi = 0.0
                for r in g.itertuples():
                    if model == r.a:
                        est, lo, hi = est + r.estimate, lo + r.ci_low, hi + r.ci_high
                    elif model == r.b:
                        est, lo, hi = est - r.estimate, lo - r.ci_high, hi - r.ci_low
                rows.append({"preset": preset, "side": side, "spec": model, "rating": est / m, "ci_low": lo / m,
                             "ci_high": hi / m})
        return pd.DataFrame(rows, columns=["preset", "side", "spec", "rating", "ci_low", "ci_high"])


# ------------------------------------------------------------------ where the next games go
def allocate(monitor: Monitor, p_village: dict[str, np.ndarray], budget: int, self_play: bool = True
             ) -> dict[str, np.ndarray]:
    """The next round: games per (preset, village model, wolf model), ``budget`` in all at most. Greedy:
    each step adds the pair of games (a comparison's two models against one opponent) that most lowers
    Σ over undecided comparisons of 1/√(1 + expected discordant pairs) per game it costs — the comparisons
    with the fewest informative pairs first, each against the opponent with whom a pair is most often
    discordant; a game one comparison asks for also counts for every other comparison it pairs in.
    ``p_village[preset]`` is the estimated P(village wins) per matchup (M × M). Nothing is given to decided
    comparisons or to those at the horizon; an empty round means there is nothing left to learn. Without
    ``self_play`` no model meets itself."""
    models, plan = monitor.models, monitor.plan
    m = len(models)
    index = {s: i for i, s in enumerate(models)}
    presets = list(p_village)
    open_c = [c for c in monitor.comps if c.open and c.n < plan.horizon]
    req = {p: np.zeros((m, m), int) for p in presets}
    if not open_c or budget <= 0:
        return req
    # per open comparison: preset, the two model indices, side, pairs so far, discordance per opponent
    ca = np.array([index[c.a] for c in open_c])
    cb = np.array([index[c.b] for c in open_c])
    village = np.array([c.side == "village" for c in open_c])
    n0 = np.array([c.n for c in open_c], float)
    room = plan.horizon - n0
    pi = np.zeros((len(open_c), m))
    for i, c in enumerate(open_c):
        p = p_village[c.preset]
        pa, pb = (p[ca[i], :], p[cb[i], :]) if village[i] else (p[:, ca[i]], p[:, cb[i]])
        pi[i] = pa * (1 - pb) + pb * (1 - pa)
    pre = np.array([presets.index(c.preset) for c in open_c])
    R = np.zeros((len(presets), m, m), int)

    def value(Rs: np.ndarray) -> np.ndarray:
        """Σ −1/√(1 + expected pairs) over open comparisons, for a stack of plans Rs (Q, presets, m, m)."""
        vil = np.minimum(Rs[:, pre, ca, :], Rs[:, pre, cb, :])  # (Q, C, opponents)
        T = Rs.transpose(0, 1, 3, 2)
        wol = np.minimum(T[:, pre, ca, :], T[:, pre, cb, :])
        pairs = (np.where(village[None, :, None], vil, wol) * pi[None]).sum(-1)
        return -(1.0 / np.sqrt(1.0 + n0 + np.minimum(pairs, room))).sum(-1)

    # candidates: (comparison, opponent) → the two matchups it needs
    cand = [(i, w) for i in range(len(open_c)) for w in range(m)]
    cells = np.array([[(pre[i], ca[i], w), (pre[i], cb[i], w)] if village[i] else
                      [(pre[i], w, ca[i]), (pre[i], w, cb[i])] for i, w in cand])  # (Q, 2, 3)
    q = np.arange(len(cand))
    current = value(R[None])[0]
    while R.sum() < budget:
        target = np.minimum(R[cells[:, 0, 0], cells[:, 0, 1], cells[:, 0, 2]],
                            R[cells[:, 1, 0], cells[:, 1, 1], cells[:, 1, 2]]) + 1
        stack = np.repeat(R[None], len(cand), axis=0)
        for j in (0, 1):
            idx = (q, cells[:, j, 0], cells[:, j, 1], cells[:, j, 2])
            stack[idx] = np.maximum(stack[idx], target)
        cost = (stack.sum(axis=(1, 2, 3)) - R.sum()).astype(float)
        gain = (value(stack) - current) / np.maximum(cost, 1.0)
        gain[R.sum() + cost > budget] = -np.inf
        if not self_play:
            gain[(cells[:, :, 1] == cells[:, :, 2]).any(axis=1)] = -np.inf
        best = int(np.argmax(gain))
        if not gain[best] > 1e-12:
            break
        R, current = stack[best], value(stack[best][None])[0]
    return {p: R[i] for i, p in enumerate(presets)}


def village_win_estimates(counts: np.ndarray, wins: np.ndarray, prior: float = 2.0) -> np.ndarray:
    """P(village wins) per matchup: its own record shrunk toward the pooled village rate (``prior`` games)."""
    pooled = (wins.sum() + 1.0) / (counts.sum() + 2.0)
    return (wins + prior * pooled) / (counts + prior)


# ------------------------------------------------------------------ the fixed design of equal error
def fixed_games(village: dict[str, float], wolves: dict[str, float], side: float, plan: Plan,
                self_play: bool = True) -> int:
    """Games of the fixed ``pairs`` design (every ordered pair of models, equally often, analysed once at the
    end by the Bradley–Terry fit) that gives every comparison of ``plan`` the same error (α/K two-sided) and
    the same power at a difference of ``plan.delta``, at the given strengths (logits; the Fisher information
    of one game per matchup, with the win probabilities these strengths imply). Games per preset."""
    models = list(village)
    m = len(models)
    rows, w = [], []
    for i, a in enumerate(models):
        for j, b in enumerate(models):
            if a == b and not self_play:
                continue
            x = np.zeros(2 * m)
            x[i] += 1.0
            x[m + j] -= 1.0
            p = 1 / (1 + math.exp(-(side + village[a] - wolves[b])))
            rows.append(np.concatenate([[1.0], x]))
            w.append(p * (1 - p))
    X, W = np.array(rows), np.array(w)
    info = (X * W[:, None]).T @ X
    # reference coding: the last model of each side is the zero (every contrast is still estimable)
    keep = [0] + [1 + i for i in range(m - 1)] + [1 + m + i for i in range(m - 1)]
    cov = np.linalg.pinv(info[np.ix_(keep, keep)])
    from scipy.stats import norm  # here: importing scipy.stats takes ~2 s
    z = norm.isf(plan.alpha / plan.k / 2) + norm.ppf(plan.power)
    worst = 0.0
    for side_i in (0, 1):
        for i, j in itertools.combinations(range(m), 2):
            c = np.zeros(2 * m + 1)
            c[1 + side_i * m + i], c[1 + side_i * m + j] = 1.0, -1.0
            ck = c[keep]
            worst = max(worst, float(ck @ cov @ ck))
    per_matchup = math.ceil(z * z * worst / plan.delta ** 2)
    return per_matchup * len(rows)


# ------------------------------------------------------------------ the loop's bookkeeping
class Record:
    """Games and village wins so far per (preset, village model, wolf model): what the allocation's win
    probability estimates come from."""

    def __init__(self, models: list[str], presets: list[str]):
        self.models, self.presets = list(models), list(presets)
        m = len(models)
        self.counts = {p: np.zeros((m, m)) for p in presets}
        self.wins = {p: np.zeros((m, m)) for p in presets}

    def add(self, wins: dict[str, dict[tuple[str, str], list[int]]]) -> None:
        index = {s: i for i, s in enumerate(self.models)}
        for preset, per in wins.items():
            for (v, w), xs in per.items():
                self.counts[preset][index[v], index[w]] += len(xs)
                self.wins[preset][index[v], index[w]] += sum(xs)

    def estimates(self) -> dict[str, np.ndarray]:
        return {p: village_win_estimates(self.counts[p], self.wins[p]) for p in self.presets}


def next_round(monitor: Monitor, record: Record, round_games: int, played: int, max_games: int | None = None,
               self_play: bool = True) -> dict[str, np.ndarray] | None:
    """Games per (preset, village model, wolf model) for the next round, or None when the tournament is over
    (every comparison decided or at its horizon, or the game cap reached). The first round plays every
    matchup a comparison asked can use equally often (the allocation needs win-rate estimates); later rounds
    come from ``allocate``."""
    budget = round_games if max_games is None else min(round_games, max_games - played)
    if monitor.done or budget <= 0:
        return None
    m, presets = len(monitor.models), record.presets
    if monitor.rounds == 0:
        index = {s: i for i, s in enumerate(monitor.models)}
        used = {p: np.zeros((m, m), bool) for p in presets}
        for c in monitor.comps:  # a village comparison uses its two models' village games, a wolf one their wolf games
            for model in (c.a, c.b):
                if c.side == "village":
                    used[c.preset][index[model], :] = True
                else:
                    used[c.preset][:, index[model]] = True
        for p in presets:
            if not self_play:
                np.fill_diagonal(used[p], False)
        cells = sum(int(u.sum()) for u in used.values())
        each = max(1, budget // max(cells, 1))
        if max_games is not None and each * cells > budget:
            return None  # the cap leaves no room for one game per matchup
        return {p: used[p].astype(int) * each for p in presets}
    plan = allocate(monitor, record.estimates(), budget, self_play)
    return plan if sum(int(r.sum()) for r in plan.values()) else None


ROUNDS = 7  # a default round is this fraction of the fixed design: the adaptive maximum (1.10–1.13 × fixed) stays
# within the fixed design's games plus one round (benchmarks/adaptive_tournament.py)


def default_round(models: list[str], plan: Plan, presets: int = 1, self_play: bool = True) -> int:
    """Games per round when the file gives none: a seventh of the fixed design planned at equal models and an
    even side (the truth is unknown before the first game), at least one game per matchup."""
    zero = {m: 0.0 for m in models}
    per_preset = fixed_games(zero, zero, 0.0, plan, self_play)
    return max(len(models) ** 2 * presets, math.ceil(per_preset * presets / ROUNDS))
