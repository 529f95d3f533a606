"""Adaptive tournaments against the fixed design of the same error and power (toolkit.analysis.sequential, issue
45): the design landed first for issue 45 ("old", by seeded simulation of game outcomes: vectorised numpy, no
games played) beside the current one ("new", computed exactly by ``sequential.operating``, and simulated with
the same seeds as a check), then one small real run through the runner.

Each comparison is a head-to-head of two models on one preset in side-swapped pairs: A holds the village
against B's wolves (A's side wins with probability expit(h + Δ)) and B the village against A's wolves
(expit(h − Δ)), h = logit(p), p the village rate of the preset. Design: α = 0.05 family-wise over K = 3
comparisons (three models), power 0.8 at δ = 0.5 logits, sized at the village rate p (a pilot's or the
preset's known rate). The fixed design is McNemar's test on the same pairs (one look at the end at α/K,
z = (pairs A's side won both games of − pairs B's side won both) / √(their sum)), sized by the normal
approximation to that statistic at δ (``Design.n_fixed``): its simulated power is in the table. Both designs'
savings are against it. Every simulated row: ``--reps`` seeded replications of one comparison at gap Δ.
"saving" = 1 − mean pairs used / the fixed design's pairs; "cap" = the most pairs a comparison can use /
fixed; "covers μ" = the chance that the interval at the look that decided holds the true difference. Then the
new design's exact error when the true village rate is not the one it was sized at, and with its futility
bounds ignored (as if non-binding).

Old: Lan–DeMets O'Brien–Fleming α-spending, futility by β·t³ (non-binding), up to 10 equal looks, sized
with the no-difference spread (``git show 03f59fe:toolkit/analysis/sequential.py``). New: the spending of an
optimal design (``sequential.OPTIMAL``, which ``--derive`` derives again), futility binding, both bounds
continuity-corrected by 0.2 of a step of Σd, up to 10 looks, the last one taking what is left of the cap, sized
with the statistic's spread at the design difference (the same spread sizes the fixed design). The design of
sessions 16–17 (α·t³, β·t², a correction of ½) is a row of ``--frontier``.

Then whole tournaments (every comparison at once): the family-wise error with three equal models, and with
strengths that depend on the opponent (A and B even against each other, A far stronger than C and B weaker:
no Bradley–Terry order), and when the village rate the design assumed is wrong. ``--frontier`` prints the
spending functions, corrections and numbers of looks the new design was chosen from (exactly computed).

    .venv/bin/python benchmarks/sequential_tournament.py [--reps 4000] [--frontier] [--real] [--designs] [--off-grid
                                                         [--quadrature 0.01,0.02]]
    .venv/bin/python benchmarks/sequential_tournament.py --derive [--prior | --gap 0.75 [--looks 15]]
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
OLD = "03f59fe"  # the commit whose sequential design is "old" here
GAPS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0)  # logits on each side: 0, δ/2, δ, 2δ, 3δ, 4δ
RATES = (0.05, 0.15, 0.29, 0.5)  # village rates: kaggle-like presets to an even game
TRUE_RATES = (0.02, 0.05, 0.1, 0.15, 0.2, 0.29, 0.4, 0.5, 0.7, 0.9)  # the truth when the design assumed another


def expit(x):
    return 1 / (1 + np.exp(-x))


def old_module():
    """toolkit/analysis/sequential.py as of ``OLD``, imported under another name."""
    text = subprocess.run(["git", "-C", str(REPO), "show", f"{OLD}:toolkit/analysis/sequential.py"],
                          capture_output=True, text=True, check=True).stdout
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "sequential_old.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location("sequential_old", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["sequential_old"] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return module


def mcnemar(design, p1: float, p2: float, reps: int, rng: np.random.Generator):
    """The fixed design: ``n_fixed`` pairs, McNemar's z-test at α/K two-sided: verdict codes as ``simulate``."""
    from scipy.stats import norm

    probs = [p1 * (1 - p2), (1 - p1) * p2, 1 - p1 * (1 - p2) - (1 - p1) * p2]
    counts = rng.multinomial(design.n_fixed, probs, size=reps)
    z = (counts[:, 0] - counts[:, 1]) / np.sqrt(np.maximum(counts[:, 0] + counts[:, 1], 1))
    c = norm.isf(design.alpha / design.k / 2)
    return np.where(z >= c, 1, np.where(z <= -c, -1, 0))


def wilson(k: int, n: int) -> str:
    from toolkit.analysis import wilson as w

    lo, hi = w(k, n)
    return f"{k / n:.3f} [{lo:.3f}, {hi:.3f}]"


def rates(verdict: np.ndarray, gap: float) -> str:
    """right order / wrong order, with intervals (no right order when the models are equal)."""
    n = len(verdict)
    wrong = (verdict != 0) if gap == 0 else (verdict == -1)
    right = "—" if gap == 0 else wilson(int((verdict == 1).sum()), n)
    return f"{right} / {wilson(int(wrong.sum()), n)}"


def exact_rates(o, gap: float) -> str:
    """right order / wrong order of the new design, computed exactly (``sequential.operating``)."""
    return ("—" if gap == 0 else f"{o.a:.3f}") + f" / {o.a + o.b if gap == 0 else o.b:.4f}"


def comparison_table(reps: int, rng: np.random.Generator, old) -> dict[str, list[tuple[float, float]]]:
    from toolkit.analysis.sequential import Design, operating, simulate

    print("| village rate | gap Δ (logits) | fixed pairs | old: pairs, saving, cap ÷ fixed | new: pairs, saving, "
          "cap ÷ fixed | old: right / wrong order | new: right / wrong order | fixed: right / wrong order | "
          "new: interval covers μ | new: no order at the cap |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    savings: dict[str, list[tuple[float, float]]] = {"old": [], "new": [], "cap_old": [], "cap_new": [], "sim": []}
    for p in RATES:
        d, o = Design.make(0.05, 0.8, 0.5, 3, p), old.Design.make(0.05, 0.8, 0.5, 3, p)
        h = math.log(p / (1 - p))
        for gap in GAPS:
            p1, p2 = float(expit(h + gap)), float(expit(h - gap))
            ex = operating(d, p1, p2)
            used, verdict, _ = simulate(d, p1, p2, reps, rng)
            oused, overdict = old.simulate(o, p1, p2, reps, rng)
            fv = mcnemar(d, p1, p2, reps, rng)
            s_new, s_old = 1 - ex.pairs / d.n_fixed, 1 - oused.mean() / d.n_fixed
            savings["new"].append((gap, s_new))
            savings["old"].append((gap, s_old))
            savings["cap_new"].append((gap, d.n_max / d.n_fixed))
            savings["cap_old"].append((gap, o.n_max / d.n_fixed))
            right = (verdict == 1).mean() if gap else (verdict != 0).mean()
            exact_right = ex.a if gap else ex.a + ex.b
            savings["sim"].append((abs(used.mean() - ex.pairs) / d.n_fixed, abs(right - exact_right)))
            print(f"| {p:.2f} | {gap:.2f} | {d.n_fixed} | {oused.mean():.0f}, {s_old:+.0%}, "
                  f"{o.n_max / d.n_fixed:.2f} | "
                  f"{ex.pairs:.0f}, {s_new:+.0%}, {d.n_max / d.n_fixed:.2f} | {rates(overdict, gap)} | "
                  f"{exact_rates(ex, gap)} | {rates(fv, gap)} | {ex.covered:.4f} | {ex.forced:.4f} |")
    return savings


def nuisance() -> None:
    """The new design's error at equal models when the true village rate is not the one it was sized at, and if
    its "within" verdicts were ignored (futility non-binding), exactly."""
    from dataclasses import replace

    from toolkit.analysis.sequential import Design, operating

    print("\n| sized at village rate | largest error over true rates 0.02–0.9 (α/K = 0.0167) | at the rate | "
          "the same with futility ignored (non-binding) |")
    print("|---|---|---|---|")
    for p in RATES:
        d = Design.make(0.05, 0.8, 0.5, 3, p)
        loose = replace(d, futility=(0.0,) * (d.looks - 1) + (d.efficacy[-1],))

        def error(design, q):
            o = operating(design, q, q)
            return o.a + o.b

        worst = max((error(d, q), q) for q in TRUE_RATES)
        nb = max(error(loose, q) for q in TRUE_RATES)
        print(f"| {p:.2f} | {worst[0]:.4f} | {worst[1]:.2f} | {nb:.4f} |")


def summary(savings: dict[str, list[tuple[float, float]]]) -> None:
    sim = np.array(savings["sim"])
    print(f"\nnew design simulated (seeded) against its exact figures: saving within {sim[:, 0].max():.1%}, "
          f"error or power within {sim[:, 1].max():.3f} in every row")
    for name in ("old", "new"):
        s = np.array([x for _, x in savings[name]])
        at = {g: [x for gg, x in savings[name] if gg == g] for g in GAPS}
        caps = [x for _, x in savings[f"cap_{name}"]]
        print(f"{name}: saving median {np.median(s):.0%}, mean {s.mean():.0%} over the {len(s)} rows; equal models "
              f"{min(at[0.0]):.0%} to {max(at[0.0]):.0%}; gaps δ/2–δ {min(at[0.25] + at[0.5]):.0%} to "
              f"{max(at[0.25] + at[0.5]):.0%}; 2δ {min(at[1.0]):.0%} to {max(at[1.0]):.0%}; cap "
              f"{min(caps):.2f}–{max(caps):.2f} × fixed")


def tournaments(reps: int, rng: np.random.Generator, old) -> None:
    """Family-wise error over the three comparisons of a three-model tournament (each its own pairs)."""
    from toolkit.analysis import sequential as S

    print("\n| tournament (three models, K = 3) | village rate: assumed / true | old: any wrong order | "
          "new: any wrong order (≤ 0.05) | old: games ÷ fixed | new: games ÷ fixed |")
    print("|---|---|---|---|---|---|")
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
            d, o = S.Design.make(0.05, 0.8, 0.5, 3, assumed), old.Design.make(0.05, 0.8, 0.5, 3, assumed)
            cells = []
            for design, sim in ((o, old.simulate), (d, S.simulate)):
                any_wrong, used = np.zeros(reps, bool), np.zeros(reps)
                for (p1, p2) in make(true).values():
                    n, v = sim(design, p1, p2, reps, rng)[:2]
                    used += 2 * n
                    truth = np.sign(p1 * (1 - p2) - (1 - p1) * p2)
                    any_wrong |= (v != 0) & (v != truth) if truth else (v != 0)
                cells.append((wilson(int(any_wrong.sum()), reps), used.mean() / (3 * 2 * d.n_fixed)))
            print(f"| {name} | {assumed:.2f} / {true:.2f} | {cells[0][0]} | {cells[1][0]} | {cells[0][1]:.2f} | "
                  f"{cells[1][1]:.2f} |")


def frontier() -> None:
    """The new design's family: spending functions (``optimal``, or the power family's (ρ_α, ρ_β)), looks asked,
    the cap and the rule's continuity correction, each at every rate and gap of the table, computed exactly
    (``operating``). The bounds do not depend on the correction, so a row with another is the same design with
    ``cc`` replaced."""
    from dataclasses import replace

    from toolkit.analysis.sequential import Design, operating

    print("\n| spending | cc | cap asked | looks asked | looks the cap allows | saving: median | mean | equal models | "
          "δ/2–δ | 2δ | largest error (α/K 0.0167) | power at δ | cap ÷ fixed |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    designs = [("optimal", 0.2, 10, 1.1), ("optimal", 0.15, 10, 1.1), ("optimal", 0.25, 10, 1.1),
               ("optimal", 0.5, 10, 1.1), ((3.0, 2.0), 0.5, 10, 1.1), ((3.0, 2.0), 0.2, 10, 1.1)]
    designs += [(shape, 0.5, looks, 1.1) for looks, shape in (
        (10, (3.0, 3.0)), (10, (2.5, 2.5)), (10, (3.5, 1.5)), (10, (4.0, 2.0)), (10, (4.0, 1.5)), (10, (2.0, 2.0)),
        (10, (3.0, 1.0)), (10, (4.0, 1.0)), (10, (5.0, 1.0)), (10, (3.0, 0.75)), (8, (3.0, 2.0)), (15, (3.0, 2.0)))]
    designs += [((3.0, 1.0), 0.5, 10, 1.3), ((3.0, 0.75), 0.5, 10, 1.5)]  # the cap relaxed: what the 1.1 cap costs
    for shape, cc, looks, cap in designs:
        rows, allowed = [], set()
        for p in RATES:
            d = replace(Design.make(0.05, 0.8, 0.5, 3, p, looks=looks, shape=shape, cap=cap), cc=cc)
            allowed.add(d.looks)
            h = math.log(p / (1 - p))
            for gap in GAPS:
                o = operating(d, float(expit(h + gap)), float(expit(h - gap)))
                rows.append((gap, 1 - o.pairs / d.n_fixed, o.a + o.b if gap == 0 else o.a, d.n_max / d.n_fixed))
        s = np.array([r[1] for r in rows])
        at = {g: [r[1] for r in rows if r[0] in g] for g in ((0.0,), (0.25, 0.5), (1.0,))}
        power = [r[2] for r in rows if r[0] == 0.5]
        name = shape if isinstance(shape, str) else f"power {shape[0]:g}, {shape[1]:g}"
        print(f"| {name} | {cc:g} | {cap:g} | {looks} | {min(allowed)}–{max(allowed)} | {np.median(s):.1%} | "
              f"{s.mean():.1%} | " + " | ".join(f"{min(x):.1%}–{max(x):.1%}" for x in at.values()) +
              f" | {max(r[2] for r in rows if r[0] == 0):.4f} | {min(power):.4f}–{max(power):.4f} | "
              f"{max(r[3] for r in rows):.3f} |")


def other_designs() -> None:
    """The default design away from the benchmark's grid (K comparisons, δ logits, village rate p), exactly:
    its error with equal models at its own rate and the largest over true rates 0.01–0.9, its power at δ, and
    the fixed design's (McNemar's test after ``n_fixed`` pairs) exact error and power beside it."""
    from toolkit.analysis.sequential import Design, _norm, _trinomial, operating

    print("\n| K | δ | village rate | looks | cap ÷ fixed | error at the rate | largest error (true rate) | α/K | "
          "power at δ | fixed design: pairs, error, power | saving, equal models | calibrated: nominal power, "
          "power at δ, looks, cap ÷ fixed, error, saving with equal models |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    true = np.round(np.concatenate([np.arange(0.01, 0.1, 0.01), np.arange(0.1, 0.95, 0.05)]), 3)
    for k, delta, p in itertools.product((1, 3, 6), (0.5, 1.0), (0.05, 0.29, 0.5)):
        d, h = Design.make(0.05, 0.8, delta, k, p), math.log(p / (1 - p))
        p1, p2 = float(expit(h + delta)), float(expit(h - delta))
        at, power = operating(d, p, p), operating(d, p1, p2).a
        worst, q = max((lambda o: (o.a + o.b, t))(operating(d, float(t), float(t))) for t in true)
        up, down = np.indices((d.n_fixed + 1, d.n_fixed + 1))
        z = np.abs(up - down) / np.sqrt(np.maximum(up + down, 1))
        fixed = [_trinomial(d.n_fixed, a * (1 - b), (1 - a) * b)[(z >= _norm().isf(0.05 / k / 2)) &
                                                                  ((up > down) | (a == b))].sum()
                 for a, b in ((p, p), (p1, p2))]
        print(f"| {k} | {delta:g} | {p:g} | {d.looks_text()} | {d.n_max / d.n_fixed:.3f} | {at.a + at.b:.4f} | "
              f"{worst:.4f} ({q:g}) | {0.05 / k:.4f} | {power:.4f} | {d.n_fixed}, {fixed[0]:.4f}, {fixed[1]:.4f} | "
              f"{1 - at.pairs / d.n_fixed:.1%} | {cal_text(k, delta, p)} |")


OFF_GRID = ((0.1, 0.2, 0.4), (0.375, 0.75, 1.25))  # rates × gaps 0.75δ, 1.5δ, 2.5δ: the outside review's rows


def calibrated(k: int, delta: float, p: float, shape="optimal", power: float = 0.8, step: float = 0.005):
    """The design sized at village rate ``p`` whose exact power at ``delta`` (``operating``) is at least ``power``:
    its bounds solved at a nominal power raised by ``step`` until it is, its cap still 1.1 × the fixed design of
    ``power`` (fewer looks where it must). (design, nominal power, exact power); the design's ``n_fixed`` and
    ``power`` are the fixed design's at ``power``, the one its savings are against."""
    from dataclasses import replace

    from toolkit.analysis.sequential import CAP, Design, operating

    h = math.log(p / (1 - p))
    p1, p2 = float(expit(h + delta)), float(expit(h - delta))
    ref = Design.make(0.05, power, delta, k, p, shape=shape)
    nominal, d = power, ref
    while (exact := operating(d, p1, p2).a) < power and nominal < 0.9:
        nominal = round(nominal + step, 4)
        n_nominal = Design.make(0.05, nominal, delta, k, p, looks=1).n_fixed  # the fixed design at ``nominal``
        d = replace(Design.make(0.05, nominal, delta, k, p, shape=shape, cap=CAP * ref.n_fixed / n_nominal),
                    power=power, n_fixed=ref.n_fixed)
    return d, nominal, exact


def prior_table() -> None:
    """The design chosen for the prior (``--derive --prior``, ``sequential.PRIOR``) beside the default, neither
    re-tuned: the median and mean saving on the 24-row grid and on the off-grid rows, the expected saving under
    the prior (its Gauss–Legendre nodes), and over village rates 0.05–0.5 in steps of 0.05 (each design
    calibrated to its exact power, ``calibrated``) the power at δ, the error, the saving with equal models, the cap
    and the chance of "no order at the cap" — all exact (``operating``)."""
    from toolkit.analysis.sequential import operating

    made = {}

    def design(shape, q):
        if (shape, q) not in made:
            made[shape, q] = calibrated(3, 0.5, q, shape)
        return made[shape, q]

    def row(shape, q, gap):
        d, h = design(shape, q)[0], math.log(q / (1 - q))
        o = operating(d, float(expit(h + gap)), float(expit(h - gap)))
        return 1 - o.pairs / d.n_fixed, o

    print("\n| spending | grid: median, mean | off-grid: median, mean | expected under the prior | power at δ | "
          "nominal power | largest error (α/K 0.0167) | equal models | cap ÷ fixed | no order at the cap, largest |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    offs = {}
    for shape in ("optimal", "prior"):
        grid = [row(shape, q, g)[0] for q in RATES for g in GAPS]
        offs[shape] = [row(shape, q, g) for q in OFF_GRID[0] for g in OFF_GRID[1]]
        off = [x[0] for x in offs[shape]]
        expected = sum(w * row(shape, q, g)[0] for g, q, w in prior_nodes())
        fine = [round(x, 2) for x in np.arange(0.05, 0.501, 0.05)]
        stats = [(design(shape, q), row(shape, q, 0.0), row(shape, q, 0.5)) for q in fine]
        power = [x[0][2] for x in stats]
        forced = max(row(shape, q, g)[1].forced for q in fine for g in (0.0, 0.25, 0.5, 1.0))
        print(f"| {shape} | {np.median(grid):.1%}, {np.mean(grid):.1%} | {np.median(off):.1%}, {np.mean(off):.1%} | "
              f"{expected:.1%} | {min(power):.4f}–{max(power):.4f} | {max(x[0][1] for x in stats):g} | "
              f"{max(x[1][1].a + x[1][1].b for x in stats):.4f} | {min(x[1][0] for x in stats):.1%}–"
              f"{max(x[1][0] for x in stats):.1%} | {max(x[0][0].n_max / x[0][0].n_fixed for x in stats):.3f} | "
              f"{forced:.4f} |")
    print("\nThe off-grid rows (each design sized at its rate, exactly):\n")
    print("| village rate | gap Δ | fixed pairs | default: P(order), saving, no order at the cap | prior: P(order), "
          "saving, no order at the cap |")
    print("|---|---|---|---|---|")
    for j, (q, g) in enumerate(itertools.product(*OFF_GRID)):
        cells = [f"{o.a:.3f}, {sv:.1%}, {o.forced:.4f}" for sv, o in (offs["optimal"][j], offs["prior"][j])]
        print(f"| {q:g} | {g / 0.5:g}δ | {design('optimal', q)[0].n_fixed} | {cells[0]} | {cells[1]} |")


def prior_median(shape, rate_step: float = 0.005, gap_step: float = 0.01) -> dict:
    """The saving's distribution when (gap, village rate) is drawn from ``PRIOR``, exactly up to quadrature: the
    rate interval cut into cells of ``rate_step`` (each cell's midpoint its design, sized there and calibrated
    to its exact power, ``calibrated``), the gap interval into steps of ``gap_step``, the saving computed exactly
    (``operating``) at every node and taken as linear in the gap between nodes, so P(saving ≤ m) is the mean over
    the rate cells of the length of gaps where it is. Returns its median (bisection on that function), the mean
    (the same quadrature) and, over the rate cells, the lowest power at δ, the largest error with equal models,
    the lowest saving with equal models and the largest cap ÷ fixed."""
    from toolkit.analysis.sequential import operating

    (g0, g1), (r0, r1) = PRIOR
    gaps = np.linspace(g0, g1, round((g1 - g0) / gap_step) + 1)
    cells = round((r1 - r0) / rate_step)
    curves, power, error, equal, cap, nominal = [], [], [], [], [], []
    for q in r0 + (np.arange(cells) + 0.5) * (r1 - r0) / cells:
        d, nom, exact = calibrated(3, 0.5, float(q), shape)
        h = math.log(q / (1 - q))
        ops = [operating(d, float(expit(h + g)), float(expit(h - g))) for g in gaps]
        curves.append(np.array([1 - o.pairs / d.n_fixed for o in ops]))
        power.append(exact)
        error.append(ops[0].a + ops[0].b)
        equal.append(curves[-1][0])
        cap.append(d.n_max / d.n_fixed)
        nominal.append(nom)

    def median(top: int) -> float:  # of the saving with the gap uniform on [g0, gaps[top]] instead
        def below(m: float) -> float:  # P(saving ≤ m): the share of each piecewise-linear curve's length ≤ m
            share = 0.0
            for s in curves:
                lo, hi = np.minimum(s[:top], s[1:top + 1]), np.maximum(s[:top], s[1:top + 1])
                share += np.clip((m - lo) / np.maximum(hi - lo, 1e-15), 0.0, 1.0).mean()
            return share / len(curves)

        lo, hi = -1.0, 1.0
        for _ in range(40):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if below(mid) < 0.5 else (lo, mid)
        return (lo + hi) / 2

    mean = float(np.mean([((s[:-1] + s[1:]) / 2).mean() for s in curves]))  # trapezoid in the gap, midpoint in rate
    tops = {f"{k}δ": round((len(gaps) - 1) * k / 4) for k in (2, 3)}  # the gap up to 2δ, 3δ (the prior: to 4δ)
    return {"median": median(len(gaps) - 1), "mean": mean, **{f"median to {t}": median(j) for t, j in tops.items()},
            "power": min(power), "error": max(error),
            "equal": (min(equal), max(equal)), "cap": max(cap), "nominal": max(nominal), "cells": cells,
            "gaps": len(gaps)}


def prior_medians(steps: tuple[float, float]) -> None:
    """``prior_median`` of the default and the prior's design, neither re-tuned, as a table."""
    print(f"\nUnder the prior, exactly (village rate cells of {steps[0]:g}, gap steps of {steps[1]:g} logits; "
          "each cell's design calibrated to its exact power):\n")
    print("| spending | median under the prior | mean | median, gaps to 2δ only | to 3δ only | power at δ, lowest | "
          "nominal power, highest | largest error (α/K 0.0167) | equal models | cap ÷ fixed, largest |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for shape in ("optimal", "prior"):
        m = prior_median(shape, *steps)
        print(f"| {shape} | {m['median']:.2%} | {m['mean']:.2%} | {m['median to 2δ']:.2%} | {m['median to 3δ']:.2%} | "
              f"{m['power']:.4f} | {m['nominal']:g} | {m['error']:.4f} | {m['equal'][0]:.1%}–{m['equal'][1]:.1%} | "
              f"{m['cap']:.4f} |")


def cal_text(k: int, delta: float, p: float) -> str:
    """The default design calibrated to its exact power (``calibrated``), as a table cell."""
    from toolkit.analysis.sequential import operating

    d, nominal, exact = calibrated(k, delta, p)
    o = operating(d, p, p)
    return (f"{nominal:g}, {exact:.4f}, {d.looks}, {d.n_max / d.n_fixed:.3f}, {o.a + o.b:.4f}, "
            f"{1 - o.pairs / d.n_fixed:.1%}")


def _normal_run(t, c, i, drift: float, v: float):
    """Normal theory of bounds ``c`` (efficacy), ``i`` (futility) at looks ``t``: Z·√t Brownian motion with drift
    ``drift`` and variance ``v`` per unit of t. (chance of stopping at each look for an order, for "within")."""
    from toolkit.analysis.sequential import GRID, _mass, _share

    grid = np.arange(-9.0, 9.0 + abs(drift) + GRID, GRID)
    order, within, h = [], [], None
    for j, tj in enumerate(t):
        dt = tj - (t[j - 1] if j else 0.0)
        if j == 0:
            h = _mass(grid, drift * dt, v * dt)
        else:
            m = min(int((9 * math.sqrt(dt) + abs(drift) * dt) / GRID) + 1, (len(grid) - 1) // 2)
            h = np.convolve(h, _mass(np.arange(-m, m + 1) * GRID, drift * dt, v * dt), mode="same")
        az, w = np.abs(grid / math.sqrt(tj)), GRID / math.sqrt(tj)
        go = _share(c[j], az, w) - (_share(i[j], az, w) if j < len(t) - 1 else _share(c[j], az, w))
        order.append(float(h @ (1 - _share(c[j], az, w))))
        within.append(float(h.sum()) - order[-1] - float(h @ go))
        h = h * go
    return np.array(order), np.array(within)


PRIOR = ((0.0, 2.0), (0.05, 0.5))  # the prior --derive --prior maximises the expected saving under: the gap
# uniform on [0, 4δ] logits (δ = 0.5), the village rate uniform on [0.05, 0.5] (stated in docs/statistics.md)


def prior_nodes(gaps: int = 16, rates: int = 3) -> list[tuple[float, float, float]]:
    """(gap, village rate, weight) of a Gauss–Legendre rule over ``PRIOR`` (weights sum to 1)."""
    (g0, g1), (r0, r1) = PRIOR
    gx, gw = np.polynomial.legendre.leggauss(gaps)
    rx, rw = np.polynomial.legendre.leggauss(rates)
    return [(g0 + (g1 - g0) * (x + 1) / 2, r0 + (r1 - r0) * (y + 1) / 2, wx * wy / 4)
            for x, wx in zip(gx, gw) for y, wy in zip(rx, rw)]


class Family:
    """The designs ``derive`` chooses among, in normal theory: ``looks`` equal looks, ``r`` × the fixed design's
    information, error α/K (K = 3) and power 0.8 at δ = 0.5 logits. A design is x = (c_1..c_J, i_1..i_{J−1}):
    its efficacy bounds, then its futility bounds (i_J = c_J)."""

    def __init__(self, looks: int, r: float):
        from toolkit.analysis.sequential import _norm

        self.looks, self.r, self.a, self.norm = looks, r, 0.05 / 3, _norm()
        self.t = tuple((j + 1) / looks for j in range(looks))

    @staticmethod
    def moments(gap: float, rate: float) -> tuple[float, float]:
        """Z's mean per √(pairs) and its variance at a gap, village rate ``rate``."""
        h = math.log(rate / (1 - rate))
        up, down = float(expit(h + gap)), float(expit(h - gap))
        mu, psi = up - down, up * (1 - down) + (1 - up) * down
        return mu / math.sqrt(psi), 1 - (mu / psi) ** 2 * (3 + psi) / 4

    def at(self, gap: float, rate: float) -> tuple[float, float]:
        """(drift on the Z scale at t = 1, variance) at ``gap`` of the design sized at ``rate``."""
        (m1, v1), (m, v) = self.moments(0.5, rate), self.moments(gap, rate)
        return (self.norm.isf(self.a / 2) + self.norm.ppf(0.8) * math.sqrt(v1)) * math.sqrt(self.r) * m / m1, v

    def run(self, x, drift: float, v: float):
        c = np.array(x[:self.looks])
        return _normal_run(self.t, c, np.minimum(np.append(x[self.looks:], c[-1]), c), drift, v)

    def saving(self, x, drift: float, v: float) -> float:
        order, within = self.run(x, drift, v)
        return 1 - self.r * float(np.dot(self.t, order + within))


def optimise(f: Family, p: float, nodes, rates, least_saving: float | None, maxiter: int):
    """The bounds x maximising the weighted saving over ``nodes`` ((drift, variance), weight), from the power
    family's (3, 2) start, by SLSQP under: error α/K with equal models, power 0.8 at δ at every rate of ``rates``,
    and (where given) a saving with equal models of ``least_saving`` or more."""
    from scipy.optimize import minimize

    from toolkit.analysis.sequential import bounds

    def goal(x):
        return -sum(w * f.saving(x, *dv) for dv, w in nodes)

    _, c, i = bounds(f.a, 0.8, f.t, round(f.moments(0.5, p)[1], 3), (3.0, 2.0))
    limits = [{"type": "ineq", "fun": lambda x: 1000 * (f.a - f.run(x, 0.0, 1.0)[0].sum())}]
    limits += [{"type": "ineq", "fun": lambda x, q=q: 100 * (f.run(x, *f.at(0.5, q))[0].sum() - 0.8)} for q in rates]
    if least_saving is not None:
        limits.append({"type": "ineq", "fun": lambda x: 100 * (f.saving(x, 0.0, 1.0) - least_saving)})
    x = minimize(goal, np.concatenate([c, i[:-1]]), method="SLSQP", constraints=limits,
                 bounds=[(0.5, 8.0)] * f.looks + [(0.0, 4.0)] * (f.looks - 1),
                 options={"maxiter": maxiter, "eps": 1e-3}).x
    return x, -goal(x)


def show_design(f: Family, x, p: float, aim: str, objective: float) -> None:
    """The printout of ``derive``: the design's savings, error and power, its bounds, the shares of α and β."""
    spent_a, spent_b = np.cumsum(f.run(x, 0.0, 1.0)[0]), np.cumsum(f.run(x, *f.at(0.5, p))[1])
    print(f"\noptimal design ({aim}), {f.looks} "
          f"looks, R = {f.r} (normal theory, village rate {p}): objective {objective:.3f}; saving with equal models "
          f"{f.saving(x, 0.0, 1.0):.3f}, at 2δ {f.saving(x, *f.at(1.0, p)):.3f}, at δ "
          f"{f.saving(x, *f.at(0.5, p)):.3f}, at 1.5δ {f.saving(x, *f.at(0.75, p)):.3f}; "
          f"error {spent_a[-1]:.4f}, power {f.run(x, *f.at(0.5, p))[0].sum():.3f}")
    print("efficacy", np.round(x[:f.looks], 3).tolist())
    print("futility", np.round(np.append(x[f.looks:], x[f.looks - 1]), 3).tolist())
    print("t", list(f.t), "\nshare of α", np.round(spent_a / spent_a[-1], 4).tolist(),
          "\nshare of β", np.round(spent_b / spent_b[-1], 4).tolist())


def derive(p: float = 0.29, looks: int = 10, r: float = 1.088, prior: bool = False, gap: float | None = None,
           floor: float = 0.25) -> None:
    """The optimal design ``sequential.OPTIMAL`` is read from: ``looks`` equal looks, ``r`` × the fixed design's
    information, its bounds free (c_1..c_J, i_1..i_{J−1}; i_J = c_J), chosen by SLSQP from the power family's
    (3, 2) to make (saving with equal models + saving at 2δ) / 2 as large as it can be with error α/K and power
    0.8 at δ, in normal theory (the statistic's spread at each gap, village rate ``p``). Prints its savings and
    the shares of α and β it spends by each look: the table ``OPTIMAL`` holds. With ``prior``: the expected
    saving under ``PRIOR`` instead (``prior_nodes``: each rate its own drift and spread), with power 0.8 at δ and
    a saving with equal models of 0.3 or more at every rate node: the table ``sequential.PRIOR`` holds. With
    ``gap``: the saving at that one gap (logits), with equal models saving ``floor`` or more: how far a design of
    this family can go there (the frontier docs/statistics.md quotes)."""
    f = Family(looks, r)
    rates = sorted({q for _, q, _ in prior_nodes()}) if prior else [p]
    nodes = [(f.at(g, q), w) for g, q, w in prior_nodes()] if prior else [(f.at(0.0, p), 0.5), (f.at(1.0, p), 0.5)]
    if gap is not None:
        nodes = [(f.at(gap, p), 1.0)]
    least = 0.3 if prior else floor if gap is not None else None
    x, objective = optimise(f, p, nodes, rates, least, 60 if gap is None and not prior else 150)
    aim = f"saving at {gap / 0.5:g}δ, equal models ≥ {floor:g}" if gap is not None else (
        "expected saving under the prior" if prior else "savings at 0 and 2δ")
    show_design(f, x, p, aim, objective)


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


def steps(text: str) -> tuple[float, float]:
    """``--quadrature``'s "RATE_STEP,GAP_STEP": two steps that divide the prior's ranges into at least 2 parts."""
    try:
        rate, gap = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"need RATE_STEP,GAP_STEP (e.g. 0.01,0.02), got {text!r}") from None
    if not (0 < rate <= 0.225 and 0 < gap <= 1):
        raise argparse.ArgumentTypeError(f"need 0 < RATE_STEP ≤ 0.225 and 0 < GAP_STEP ≤ 1, got {text!r}")
    return rate, gap


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--frontier", action="store_true", help="also print the shapes the design was chosen from")
    ap.add_argument("--real", action="store_true", help="also play one small adaptive tournament offline")
    ap.add_argument("--derive", action="store_true", help="only derive the spending of sequential.OPTIMAL")
    ap.add_argument("--prior", action="store_true", help="with --derive: for the prior (sequential.PRIOR)")
    ap.add_argument("--gap", type=float, help="with --derive: the largest saving at this one gap (logits)")
    ap.add_argument("--looks", type=int, default=10, help="with --derive: equal looks")
    ap.add_argument("--designs", action="store_true", help="also compute designs away from the grid exactly")
    ap.add_argument("--off-grid", action="store_true", help="also the prior's design and the off-grid rows")
    ap.add_argument("--quadrature", type=steps, default=(0.01, 0.02), help="with --off-grid: the rate cell and "
                    "the gap step of the saving's median under the prior (default 0.01,0.02)")
    args = ap.parse_args()
    if args.derive:
        derive(looks=args.looks, prior=args.prior, gap=args.gap)
        return 0
    rng = np.random.default_rng(45)
    old = old_module()
    started = time.perf_counter()
    summary(comparison_table(args.reps, rng, old))
    nuisance()
    tournaments(args.reps, rng, old)
    if args.frontier:
        frontier()
    if args.designs:
        other_designs()
    if args.off_grid:
        prior_table()
        prior_medians(args.quadrature)
    print(f"\n{time.perf_counter() - started:.0f} s for the simulations ({args.reps} replications a row)")
    if args.real:
        real_run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
