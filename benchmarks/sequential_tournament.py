"""Adaptive tournaments against the fixed design of the same error and power (toolkit.analysis.sequential, issue
45), by simulation of game outcomes (vectorised numpy; no games are played), then one small real run through
the runner.

Each comparison is a head-to-head of two models on one preset in side-swapped pairs: A holds the village
against B's wolves (A's side wins with probability expit(h + Δ)) and B the village against A's wolves
(expit(h − Δ)), h = logit(p), p the village rate of the preset. Design: α = 0.05 family-wise over K = 3
comparisons (three models), power 0.8 at δ = 0.5 logits, sized at the village rate p (a pilot's or the
preset's known rate). Every row: ``--reps`` seeded replications of one comparison at gap Δ; the fixed design
(its pairs all at once, one z-test at the end at α/K) is simulated on the same settings. "saving" = 1 − mean
pairs used / the fixed design's pairs; "cap" = the most pairs a replication can use / fixed.

Then whole tournaments (every comparison at once): the family-wise error with three equal models, and with
strengths that depend on the opponent (A and B even against each other, A far stronger than C and B weaker:
no Bradley–Terry order), and when the village rate the design assumed is wrong.

    .venv/bin/python benchmarks/sequential_tournament.py [--reps 4000] [--real]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def expit(x):
    return 1 / (1 + np.exp(-x))


def fixed(design, p1: float, p2: float, reps: int, rng: np.random.Generator):
    """The fixed design: ``n_fixed`` pairs, one two-sided z-test at α/K: verdict codes as ``simulate``."""
    from scipy.stats import norm

    probs = [p1 * (1 - p2), (1 - p1) * p2, 1 - p1 * (1 - p2) - (1 - p1) * p2]
    n = design.n_fixed
    counts = rng.multinomial(n, probs, size=reps)
    mean = (counts[:, 0] - counts[:, 1]) / n
    var = (counts[:, 0] + counts[:, 1] - n * mean ** 2) / (n - 1)
    z = mean / np.maximum(np.sqrt(np.maximum(var, 0) / n), 1e-9)
    c = norm.isf(design.alpha / design.k / 2)
    return np.where(z >= c, 1, np.where(z <= -c, -1, 0))


def wilson(k: int, n: int) -> str:
    from toolkit.analysis import wilson as w

    lo, hi = w(k, n)
    return f"{k / n:.3f} [{lo:.3f}, {hi:.3f}]"


def comparison_table(reps: int, rng: np.random.Generator) -> list[float]:
    from toolkit.analysis.sequential import Design, simulate

    print("| village rate | gap Δ (logits) | pairs: fixed / cap | adaptive pairs, mean | saving | cap ÷ fixed | "
          "adaptive: right order / wrong order | fixed: right / wrong |")
    print("|---|---|---|---|---|---|---|---|")
    savings = []
    for p in (0.05, 0.15, 0.29, 0.5):
        d = Design.make(0.05, 0.8, 0.5, 3, p)
        h = math.log(p / (1 - p))
        for gap in (0.0, 0.25, 0.5, 1.0, 1.5, 2.0):
            p1, p2 = float(expit(h + gap)), float(expit(h - gap))
            used, verdict = simulate(d, p1, p2, reps, rng)
            fv = fixed(d, p1, p2, reps, rng)
            saving = 1 - used.mean() / d.n_fixed
            savings.append((gap, saving))
            right = "—" if gap == 0 else wilson(int((verdict == 1).sum()), reps)
            fright = "—" if gap == 0 else wilson(int((fv == 1).sum()), reps)
            wrong = (verdict != 0) if gap == 0 else (verdict == -1)
            fwrong = (fv != 0) if gap == 0 else (fv == -1)
            print(f"| {p:.2f} | {gap:.2f} | {d.n_fixed} / {d.n_max} | {used.mean():.1f} | {saving:+.0%} | "
                  f"{d.n_max / d.n_fixed:.3f} | {right} / {wilson(int(wrong.sum()), reps)} | "
                  f"{fright} / {wilson(int(fwrong.sum()), reps)} |")
    return savings


def tournaments(reps: int, rng: np.random.Generator) -> None:
    """Family-wise error over the three comparisons of a three-model tournament (each its own pairs)."""
    from toolkit.analysis.sequential import Design, simulate

    print("\n| tournament (three models, K = 3) | village rate: assumed / true | any wrong order (≤ 0.05) | "
          "games ÷ fixed |")
    print("|---|---|---|---|")
    cases = {
        "equal models": lambda p: {("A", "B"): (p, p), ("A", "C"): (p, p), ("B", "C"): (p, p)},
        "opponent-dependent (A, B even; A ≫ C ≫ B)": lambda p: {
            ("A", "B"): (p, p), ("A", "C"): (min(0.95, 3 * p), max(0.01, p / 3)),
            ("B", "C"): (max(0.01, p / 3), min(0.95, 3 * p))},
        "one model stronger by δ": lambda p: {
            ("A", "B"): (float(expit(math.log(p / (1 - p)) + 0.5)), float(expit(math.log(p / (1 - p)) - 0.5))),
            ("A", "C"): (float(expit(math.log(p / (1 - p)) + 0.5)), float(expit(math.log(p / (1 - p)) - 0.5))),
            ("B", "C"): (p, p)},
    }
    for name, make in cases.items():
        for assumed, true in ((0.29, 0.29), (0.15, 0.15), (0.29, 0.15)):
            d = Design.make(0.05, 0.8, 0.5, 3, assumed)
            any_wrong = np.zeros(reps, bool)
            used = np.zeros(reps)
            for (a, b), (p1, p2) in make(true).items():
                n, v = simulate(d, p1, p2, reps, rng)
                used += 2 * n
                truth = np.sign(p1 * (1 - p2) - (1 - p1) * p2)
                any_wrong |= (v != 0) & (v != truth) if truth else (v != 0)
            print(f"| {name} | {assumed:.2f} / {true:.2f} | {wilson(int(any_wrong.sum()), reps)} | "
                  f"{used.mean() / (3 * 2 * d.n_fixed):.2f} |")


def real_run() -> None:
    """heuristic, random and mixed in classic7 through the runner (offline)."""
    import yaml

    from toolkit.study.adaptive import run_adaptive

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.yaml"
        path.write_text(yaml.safe_dump({"name": "real", "models": ["heuristic", "random", "mixed"],
                                        "presets": ["classic7"], "design": "adaptive", "min_difference": 1.0,
                                        "seed": 45}))
        started = time.perf_counter()
        status = run_adaptive(path, results_root=Path(tmp) / "results", progress=False)
        print(f"\nreal run (heuristic, random, mixed; classic7; δ = 1 logit): stopped ({status.stopped}) after "
              f"{status.games} games, fixed design {status.fixed}, cap {status.cap}; "
              f"{time.perf_counter() - started:.0f} s")
        print(status.coordinator.table().drop(columns=["decided_round"]).to_string(index=False))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--real", action="store_true", help="also play one small adaptive tournament offline")
    args = ap.parse_args()
    rng = np.random.default_rng(45)
    started = time.perf_counter()
    savings = comparison_table(args.reps, rng)
    s = np.array([x for _, x in savings])
    equal = np.array([x for g, x in savings if g == 0])
    print(f"\nsaving: median {np.median(s):.0%} over the {len(s)} rows; with equal models {equal.min():.0%} to "
          f"{equal.max():.0%}; lowest {s.min():.0%}")
    tournaments(args.reps, rng)
    print(f"\n{time.perf_counter() - started:.0f} s for the simulations ({args.reps} replications a row)")
    if args.real:
        real_run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
