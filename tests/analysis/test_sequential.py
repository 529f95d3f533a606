"""The group-sequential design on side-swapped pairs (issue 45): its bounds, its cap, its sizing at the preset's
village rate, its error, power and coverage computed exactly (and by seeded simulation), the coordinator's
frozen verdicts and resumable state."""

import json
import math

import numpy as np
import pytest

from toolkit.analysis import sequential as S


@pytest.mark.slow  # scipy's bivariate normal CDF, 33 calls: about 1 s
def test_the_bounds_spend_what_they_promise_by_an_independent_computation():
    """Issue 45 asked for a well-kept library for the boundary math; ``expectation`` needs Python ≥ 3.12, so the
    grid recursion is ours, checked here against known values computed another way: at two looks (t = ½, 1) the
    first bound is the normal quantile of the α spent by then, the second spends the rest of α given the first
    look's continuation region (scipy's bivariate normal, correlation √½), and the design has its power at the
    drift it was solved for; at one look the design is the fixed test (R = 1)."""
    from scipy.stats import multivariate_normal, norm

    alpha, power = 0.05, 0.8
    r, (c1, c2), (i1, i2) = S.bounds(alpha, power, (0.5, 1.0), shape=(3.0, 2.0))  # the power family
    assert c1 == pytest.approx(norm.isf(alpha * 0.5 ** 3 / 2), abs=0.03)  # α·t³ at t = ½, two-sided
    assert i2 == c2 and 0 < i1 < c1

    def two_looks(mean, var1):  # P(continue at look 1, |Z2| ≥ c2) and P(continue, Z2 ≥ c2)
        cov = np.array([[1, math.sqrt(0.5)], [math.sqrt(0.5), 1]]) * var1
        mvn = multivariate_normal(mean, cov)

        def box(lo1, hi1, lo2, hi2):
            return mvn.cdf([hi1, hi2]) - mvn.cdf([lo1, hi2]) - mvn.cdf([hi1, lo2]) + mvn.cdf([lo1, lo2])

        up = box(i1, c1, c2, 9) + box(-c1, -i1, c2, 9)
        down = box(i1, c1, -9, -c2) + box(-c1, -i1, -9, -c2)
        return up + down, up

    both, _ = two_looks([0, 0], 1.0)
    assert 2 * norm.sf(c1) + both == pytest.approx(alpha, rel=0.03)  # binding: the futility region is removed
    theta = (norm.isf(alpha / 2) + norm.ppf(power)) * math.sqrt(r)  # the drift at t = 1
    first = norm.sf(c1 - theta * math.sqrt(0.5))
    assert first + two_looks([theta * math.sqrt(0.5), theta], 1.0)[1] == pytest.approx(power, abs=0.005)
    one = S.bounds(alpha, power, (1.0,))
    assert one[0] == pytest.approx(1.0, abs=0.005) and one[1][0] == pytest.approx(norm.isf(alpha / 2), abs=0.03)


def test_the_recursion_gives_the_published_lan_demets_obrien_fleming_bounds():
    """A known value for the boundary recursion (``expectation``, the library the issue names, needs Python
    ≥ 3.12): Lan–DeMets' O'Brien–Fleming spending α(t) = 4 − 4Φ(z_{α/4}/√t), two-sided α = 0.05, five equal
    looks, no futility, gives the published 4.877, 3.357, 2.680, 2.290, 2.031 (Jennison & Turnbull 2000, the
    values the test of 03f59fe checked to 0.07 on a coarser grid); the recursion now finds them to 0.005."""
    from scipy.stats import norm

    def obf(t):
        return 4 - 4 * norm.cdf(norm.isf(0.05 / 4) / math.sqrt(t)), 1e-12 * t  # (α spent, β spent: none)

    c, _, _ = S._pass(0.05, 1e-12, (0.2, 0.4, 0.6, 0.8, 1.0), 0.0, 1.0, obf)
    assert c == pytest.approx((4.877, 3.357, 2.680, 2.290, 2.031), abs=0.005)


def test_a_long_step_between_looks_keeps_the_density_on_its_grid():
    """A first look at a tenth of the information: the step to the last is long, and its transition kernel
    (9 sd each way) was longer than the grid, so ``np.convolve(..., "same")`` returned an array of the kernel's
    length and the recursion failed (ValueError). The first bound is the normal quantile of the α spent by
    then (α·t³, two-sided) and the last spends the rest."""
    from scipy.stats import norm

    r, (c1, c2), _ = S.bounds(0.05, 0.8, (0.1, 1.0), shape=(3.0, 2.0))
    assert c1 == pytest.approx(norm.isf(0.05 * 0.1 ** 3 / 2), abs=0.03) and c2 == pytest.approx(1.96, abs=0.03)
    assert 1.0 <= r < 1.05


def test_the_design_is_sized_at_the_village_rate_and_capped_within_1_1_of_the_fixed_design():
    """Issue 45: the round and the fixed design were sized at P(village wins) = 0.5. A preset the wolves win
    78% of the time needs more pairs for the same logits; the cap stays within 1.1 × the fixed design."""
    even, kaggle7 = S.Design.make(0.05, 0.8, 0.5, 3, 0.5), S.Design.make(0.05, 0.8, 0.5, 3, 0.22)
    assert kaggle7.n_fixed > even.n_fixed * 1.15
    for d in (even, kaggle7, S.Design.make(0.05, 0.8, 1.0, 1, 0.29), S.Design.make(0.05, 0.8, 2.0, 1, 0.29)):
        assert d.n_max <= 1.1 * d.n_fixed and d.futility[-1] == d.efficacy[-1]
    # McNemar's test: Z = Σd/√Σd² has mean μ√n/√ψ and variance v = 1 − (μ/ψ)²(3 + ψ)/4 at the design difference
    # (ψ the share of pairs one side won both games of): n = ((z_{α/2K} + z_power·√v)·√ψ/μ)²
    up, down = S.expit(S.logit(0.22) + 0.5), S.expit(S.logit(0.22) - 0.5)
    psi, mu = up * (1 - down) + (1 - up) * down, up - down
    v = 1 - (mu / psi) ** 2 * (3 + psi) / 4
    assert kaggle7.n_fixed == math.ceil(((2.3940 + 0.8416 * math.sqrt(v)) * math.sqrt(psi) / mu) ** 2)
    assert 0.8 < v < 0.9  # less than 1: sizing with the no-difference spread (v = 1) asked for ~10% more pairs


def test_the_exact_error_power_and_coverage_hold_under_optional_stopping():
    """Computed exactly (``operating``: the law of the pair counts carried from look to look, no Monte Carlo):
    with the design sized at village rate 0.29, equal models are separated at most α/K of the time whatever the
    true rate, a gap of δ is found with the design's power, the interval at the look that decided holds the true
    μ at least 1 − α/K of the time at every gap, and the design stops well before the fixed design. (The design
    landed first for issue 45 had a simulated power of 0.76-0.78 at δ; this module had no ``operating``.)"""
    d, h, a_k = S.Design.make(0.05, 0.8, 0.5, 3, 0.29), S.logit(0.29), 0.05 / 3
    for p in (0.05, 0.29, 0.5):  # the error at every true village rate, not only the one assumed
        o = S.operating(d, p, p)
        assert o.a + o.b <= a_k and o.a == pytest.approx(o.b) and o.covered >= 1 - a_k
    assert S.operating(d, 0.29, 0.29).pairs <= 0.7 * d.n_fixed
    for gap in (0.1, 0.25, 0.5, 1.0, 2.0):
        o = S.operating(d, S.expit(h + gap), S.expit(h - gap))
        assert o.covered >= 1 - a_k and o.b <= a_k / 2, gap  # the wrong order: within α/2K
        if gap == 0.5:
            assert o.a >= 0.8 and o.within <= 0.2 and o.pairs <= 0.85 * d.n_fixed
        if gap == 2.0:
            assert o.pairs <= 0.35 * d.n_fixed


def test_the_seeded_simulation_agrees_with_the_exact_computation():
    """``simulate`` (what the benchmark's tournaments use) against ``operating`` at one setting: 4,000 seeded
    replications land within four standard errors of the exact figures."""
    d, h = S.Design.make(0.05, 0.8, 0.5, 3, 0.5), S.logit(0.5)
    p1, p2 = S.expit(h + 0.5), S.expit(h - 0.5)
    used, verdict, covered = S.simulate(d, p1, p2, 4000, np.random.default_rng(45))
    o = S.operating(d, p1, p2)
    assert abs((verdict == 1).mean() - o.a) < 4 * math.sqrt(o.a * (1 - o.a) / 4000)
    assert abs(used.mean() - o.pairs) < 4 * used.std() / math.sqrt(4000)
    assert abs(covered.mean() - o.covered) < 4 * math.sqrt(o.covered * (1 - o.covered) / 4000) + 1e-3


@pytest.mark.slow  # village rate 0.05: about 450 pairs, the exact computation takes ~2 s
def test_a_rare_village_win_keeps_the_error_and_power_exactly():
    """At village rate 0.05 (kaggle-like) few pairs are discordant and the statistic is most discrete: the exact
    error stays within α/K and the power at δ at the design's."""
    d, h = S.Design.make(0.05, 0.8, 0.5, 3, 0.05), S.logit(0.05)
    o = S.operating(d, 0.05, 0.05)
    assert o.a + o.b <= 0.05 / 3 and o.pairs <= 0.7 * d.n_fixed
    o = S.operating(d, S.expit(h + 0.5), S.expit(h - 0.5))
    assert o.a >= 0.8
    assert S.operating(d, S.expit(h + 1.0), S.expit(h - 1.0)).pairs <= 0.5 * d.n_fixed


def test_a_decided_comparison_is_frozen_and_progress_and_report_count_the_same():
    """Issue 45: a decided comparison kept taking pairs from later rounds (its verdict beside an interval
    through 0), and the progress bar counted "undecided at the horizon" as decided. Now a decided comparison
    is given no pairs, takes none, and keeps its verdict and interval; ``decided`` is the one count."""
    d = S.Design.make(0.05, 0.8, 0.5, 2, 0.5)
    assert d.looks >= 4 and d.futility[0] < 0.01  # no futility stop at the first look
    co = S.Coordinator({"classic7": d}, S.comparisons(["a", "b", "c"], ["classic7"], [("a", "b"), ("c", "b")]))
    assert [(c.a, c.b) for c in co.comps] == [("a", "b"), ("c", "b")]
    assert co.next_round() == [("classic7", "a", "b", d.batch), ("classic7", "c", "b", d.batch)]
    for _ in range(3):  # a won every pair: Z = √n passes the bound at the third look
        co.add_round({("classic7", "a", "b"): [1.0] * d.batch,
                      ("classic7", "c", "b"): [1.0, 1.0, -1.0] * (d.batch // 3) + [0.0] * (d.batch % 3)}, 4 * d.batch)
    ab = co.comps[0]
    assert ab.verdict == "a > b" and co.decided == 1 and not co.done
    frozen = (ab.verdict, ab.estimate, ab.ci_low, ab.ci_high, len(ab.scores))
    assert co.next_round() == [("classic7", "c", "b", d.batch)]
    co.add_round({("classic7", "a", "b"): [-1.0] * d.batch, ("classic7", "c", "b"): [0.0] * d.batch}, 2 * d.batch)
    assert (ab.verdict, ab.estimate, ab.ci_low, ab.ci_high, len(ab.scores)) == frozen
    assert 0 < ab.ci_low and ab.ci_high == 1.0  # excludes 0, as its verdict says; μ is at most 1


def test_a_last_look_between_the_two_corrected_bounds_names_no_order_and_is_not_called_within():
    """Review s18: at the last look the bounds meet, but |Σd| − cc ≥ c·√Σd² (an order) and |Σd| + cc < c·√Σd²
    ("within") leave a band between them; a comparison stopped there was labelled "within ±δ", a verdict the
    futility bound never gave. Two looks of 4 pairs, last bound 2: after 4 pairs won by A's side of 8, Σd = 4 and
    √Σd² = 2 lie in the band. The exact computation counts such stops apart (``Operating.forced``)."""
    d = S.Design(0.05, 0.8, 0.5, 1, 0.5, looks=2, batch=4, n_fixed=8, inflation=1.0, mu_delta=0.25,
                 efficacy=(3.0, 2.0), futility=(0.5, 2.0), last=4, shape="optimal", cc=0.2)
    co = S.Coordinator({"classic7": d}, S.comparisons(["a", "b"], ["classic7"]))
    for _ in range(2):
        co.add_round({("classic7", "a", "b"): [1.0, 1.0, 0.0, 0.0]}, 8)
    c = co.comps[0]
    assert c.verdict == S.FORCED and c.forced and c.decided and co.done
    assert c.ci_low < 0 < c.ci_high  # no order: the interval holds 0
    o = S.operating(d, 0.7, 0.3)
    assert 0 < o.forced < o.within and o.a + o.b + o.within == pytest.approx(1.0)
    # by hand: every (pairs +1, pairs −1) at each look, 4 pairs a look, A's side winning 0.7 and B's 0.3
    law = {(k, m): math.comb(4, k) * math.comb(4 - k, m) * 0.49 ** k * 0.09 ** m * 0.42 ** (4 - k - m)
           for k in range(5) for m in range(5 - k)}

    def rule(s, ss, c, i):
        spread = max(math.sqrt(ss), 0.5)
        return abs(s) - 0.2 >= c * spread, abs(s) + 0.2 < i * spread

    forced = sum(p1 * p2 for (k1, m1), p1 in law.items() if not any(rule(k1 - m1, k1 + m1, 3.0, 0.5))
                 for (k2, m2), p2 in law.items() if not any(rule(k1 + k2 - m1 - m2, k1 + k2 + m1 + m2, 2.0, 2.0)))
    assert o.forced == pytest.approx(forced, abs=1e-9)


def test_the_coordinators_state_is_json_and_rebuilds_it():
    d = S.Design.make(0.05, 0.8, 1.0, 1, 0.29)
    co = S.Coordinator({"classic7": d}, S.comparisons(["a", "b"], ["classic7"]))
    co.add_round({("classic7", "a", "b"): [1.0, 0.0, -1.0, 0.5] * (d.batch // 4) + [0.0] * (d.batch % 4)},
                 2 * d.batch)
    again = S.Coordinator.from_state(json.loads(json.dumps(co.state())))
    assert again.state() == co.state() and again.table().equals(co.table())
    assert again.designs["classic7"] == d


def test_a_pair_scores_the_two_games_of_a_side_swap():
    assert S.pair_score("village", "werewolves") == 1.0  # A's village won, then A's wolves won
    assert S.pair_score("werewolves", "village") == -1.0
    assert S.pair_score("village", "village") == 0.0 and S.pair_score("draw", "werewolves") == 0.5
    assert S.pair_score("error", "village") is None


GAPS, RATES = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0), (0.05, 0.15, 0.29, 0.5)  # benchmarks/sequential_tournament.py's grid


def _savings(d, gaps=GAPS):
    h = S.logit(d.p_village)
    return [1 - S.operating(d, S.expit(h + g), S.expit(h - g)).pairs / d.n_fixed for g in gaps]


def test_the_optimal_spending_stops_equal_models_and_large_gaps_earlier_at_the_same_error_and_power():
    """Issue 45 asked for a median saving of 50% over gaps 0–4δ; the power-family design (α·t³, β·t², a
    continuity correction of ½) saved 35% with equal models and 53.5% at 2δ at village rate 0.29, exactly. The
    optimal design's spending with a correction of 0.2 saves 42.6% and 59%, within the same cap, error and
    power, all computed exactly."""
    d, a_k = S.Design.make(0.05, 0.8, 0.5, 3, 0.29), 0.05 / 3
    assert d.shape == "optimal" and d.cc == 0.2 and d.looks == 10 and d.n_max <= 1.1 * d.n_fixed
    equal, _, _, two = _savings(d, (0.0, 0.5, 0.5, 1.0))
    assert equal >= 0.42 and two >= 0.58
    h = S.logit(0.29)
    assert S.operating(d, S.expit(h + 0.5), S.expit(h - 0.5)).a >= 0.8
    for p in (0.05, 0.29, 0.5):
        o = S.operating(d, p, p)
        assert o.a + o.b <= a_k and o.covered >= 1 - a_k


def test_the_spending_table_is_a_spending_function_and_the_bounds_spend_it():
    """``OPTIMAL``: shares of α and β that only grow, from 0 at t = 0 to all of it at t = 1; the first bound is
    the normal quantile of the α it spends by then (two-sided), as ``bounds`` solves it."""
    from scipy.stats import norm

    t, share_a, share_b = (np.array(x) for x in S.OPTIMAL)
    assert t[0] == share_a[0] == share_b[0] == 0 and t[-1] == share_a[-1] == share_b[-1] == 1
    assert (np.diff(t) > 0).all() and (np.diff(share_a) >= 0).all() and (np.diff(share_b) >= 0).all()
    _, c, i = S.bounds(0.05, 0.8, tuple(np.round(np.arange(1, 11) / 10, 1)), 0.85, "optimal")
    assert c[0] == pytest.approx(norm.isf(0.05 * share_a[1] / 2), abs=0.03) and i[-1] == c[-1]
    assert i[1] < 0.05 < i[2]  # (almost) no "within" before t = 0.3


def test_the_priors_spending_table_is_a_spending_function_and_named_prior():
    """``PRIOR`` (the design for the prior docs/statistics.md states; not the default): shares that only grow
    from 0 to 1, and the spending "prior" reads it."""
    t, share_a, share_b = (np.array(x) for x in S.PRIOR)
    assert t[0] == share_a[0] == share_b[0] == 0 and t[-1] == share_a[-1] == share_b[-1] == 1
    assert (np.diff(t) > 0).all() and (np.diff(share_a) >= 0).all() and (np.diff(share_b) >= 0).all()
    assert S.spending("prior", 0.05, 0.2)(0.5) == pytest.approx((0.05 * share_a[5], 0.2 * share_b[5]))
    assert S.SHAPE == "optimal"


def test_a_design_written_before_the_correction_was_stored_keeps_its_rule():
    """A run resumed from a state written by the design before (no ``cc``, no ``shape``) keeps the rule it was
    decided under: a correction of ½ and the power family, not today's 0.2. At 10 pairs of which 7 were
    won by A's side and none by B's, |Σd| − cc against c·√Σd² decides the first and not the second."""
    from dataclasses import asdict, replace

    state = {k: v for k, v in asdict(S.Design.make(0.05, 0.8, 0.5, 3, 0.29)).items() if k not in ("cc", "shape")}
    c = (7 - 0.35) / math.sqrt(7)  # a first bound between the two corrections
    old = S.Design(**{**state, "efficacy": (c,) + tuple(state["efficacy"][1:])})
    assert (old.cc, old.shape) == (0.5, (3.0, 2.0))
    scores = np.array([1.0] * 7 + [0.0] * 3)
    assert old.decide(1, scores)[0] == "open" and replace(old, cc=S.CC).decide(1, scores)[0] == "a"


@pytest.mark.slow  # 24 settings computed exactly: about 15 s
def test_the_median_saving_over_the_benchmarks_grid_is_at_least_half_at_the_same_error_and_power():
    """Issue 45's goal, on the benchmark's grid fixed in advance (gaps 0, δ/2, δ, 2δ, 3δ, 4δ × village rates
    0.05, 0.15, 0.29, 0.5), exactly: the median saving against the fixed design is at least 50% (the power-family
    design before: 43.8%), with equal models at least 25%, the cap within 1.1 ×, the power at δ at least 0.8
    and the error with equal models within α/K at every rate."""
    savings = []
    for p in RATES:
        d, h = S.Design.make(0.05, 0.8, 0.5, 3, p), S.logit(p)
        assert d.n_max <= 1.1 * d.n_fixed
        savings += (s := _savings(d))
        assert s[0] >= 0.25
        o, power = S.operating(d, p, p), S.operating(d, S.expit(h + 0.5), S.expit(h - 0.5)).a
        assert o.a + o.b <= 0.05 / 3 and power >= 0.8, p
    assert np.median(savings) >= 0.5


@pytest.mark.slow  # 9 village rate cells × 21 gaps, exactly: about 8 s
def test_the_median_saving_under_the_stated_prior_is_at_least_half_and_its_quadrature_agrees_with_the_expected():
    """Issue 45's goal over the stated spread (docs/statistics.md's prior: the gap uniform on [0, 4δ], the village
    rate uniform on [0.05, 0.5]): the saving's median when (gap, rate) is drawn from the prior, by the benchmark's
    quadrature (coarse here: rate cells of 0.05, gap steps of 0.1; the docs' figure is at 0.01 and 0.02), is at
    least 50% for the default design, with every rate cell's error within α/K, power at δ at least 0.8 (none
    calibrated), equal models at least 25% and the cap within 1.1 ×. Its mean agrees with the expected saving
    under the prior from the benchmark's Gauss–Legendre nodes (52.4%, docs/benchmarks.md), which checks the
    quadrature."""
    from benchmarks import sequential_tournament as bench

    m = bench.prior_median("optimal", 0.05, 0.1)
    assert m["median"] >= 0.5 and m["median"] > m["mean"]  # half the prior's gaps are 2δ or more
    assert m["median to 2δ"] < 0.5  # and over gaps up to 2δ only, it is not reached
    assert m["power"] >= 0.8 and m["nominal"] == 0.8 and m["error"] <= 0.05 / 3
    assert m["equal"][0] >= 0.25 and m["cap"] <= 1.1
    assert m["mean"] == pytest.approx(0.524, abs=0.003)
