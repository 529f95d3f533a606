"""Ratings on synthetic tournaments whose true strengths are known (no game engine: outcomes are drawn from
the logistic model itself, seeded), plus the example-study situation played by the real game."""

import numpy as np
import pandas as pd
import pytest

from toolkit import analysis as A

MODELS = ["alpha", "beta", "gamma"]
VILLAGE = {"alpha": 0.6, "beta": 0.0, "gamma": -0.6}  # centred, as the fit reports them
WOLF = {"alpha": 0.8, "beta": 0.1, "gamma": -0.9}
SIDE = 0.4
ROLES = ["Werewolf", "Werewolf", "Villager", "Villager", "Seer", "Witch", "Guard"]


def synthetic(seed: int, games_per_pair: int = 40, side: float = SIDE):
    """Every ordered pair (village model, wolf model), self-play included; P(village wins) from the model."""
    rng = np.random.default_rng(seed)
    games, players = [], []
    for v in MODELS:
        for w in MODELS:
            p = 1 / (1 + np.exp(-(side + VILLAGE[v] - WOLF[w])))
            for i in range(games_per_pair):
                gid = f"{v}-{w}-{i}"
                games.append({"game_id": gid, "seed": len(games), "winner": "village" if rng.random() < p
                              else "werewolves"})
                for s, role in enumerate(ROLES):
                    wolf = role == "Werewolf"
                    players.append({"game_id": gid, "seat": f"Player{s + 1}", "role": role,
                                    "side": "werewolves" if wolf else "village", "spec": w if wolf else v})
    return pd.DataFrame(games), pd.DataFrame(players)


def truth():
    return {**{(m, "village"): x for m, x in VILLAGE.items()}, **{(m, "werewolves"): x for m, x in WOLF.items()},
            ("(side term)", "village advantage"): SIDE}


def test_order_and_side_effect_are_recovered():
    games, players = synthetic(seed=1, games_per_pair=150)
    r = A.ratings(games, players, by_side=True).set_index(["spec", "side"])
    for side, true in (("village", VILLAGE), ("werewolves", WOLF)):
        fitted = r.xs(side, level="side")["rating"]
        assert list(fitted.sort_values(ascending=False).index) == sorted(true, key=true.get, reverse=True)
    side_row = r.loc[("(side term)", "village advantage")]
    assert side_row["ci_low"] > 0 and side_row["ci_low"] < SIDE < side_row["ci_high"]
    sep = A.separation(games, players, by_side=True)
    assert "werewolves" in set(sep["side"]) and (sep["verdict"] == "alpha > gamma").sum() == 2


def default_plan(models=MODELS, preset="classic7"):
    """The default tournament design and size (pairs, self-play, 97 games per pairing) of ``toolkit.study``."""
    from toolkit.study.tournament import schedule

    return schedule(models, [preset], seed=0)


@pytest.mark.slow
def test_default_design_recovers_the_order_and_covers_in_200_replications():
    """200 simulated tournaments in the default design with known side-specific strengths: the fitted
    village and wolf orders are right in ≥ 90% of them, and the 95% intervals cover the truth 93–97% of the
    time over all 1,400 intervals (Monte-Carlo standard error 0.6 points), 90–99% for each rating alone
    (200 intervals each: standard error 1.5 points). ``benchmarks/rating_simulation.py`` prints the figures."""
    from toolkit.analysis.simulate import tournament_outcomes

    plan = default_plan()
    assert plan["game"].nunique() == 9 * 97
    covered = {k: 0 for k in truth()}
    ordered = 0
    for rep in range(200):
        games, players = tournament_outcomes(plan, VILLAGE, WOLF, SIDE, seed=rep)
        r = A.ratings(games, players, by_side=True).set_index(["spec", "side"])
        for key, value in truth().items():
            covered[key] += int(r.loc[key, "ci_low"] <= value <= r.loc[key, "ci_high"])
        ordered += all(list(r.xs(side, level="side")["rating"].sort_values(ascending=False).index)
                       == sorted(true, key=true.get, reverse=True) for side, true in (("village", VILLAGE),
                                                                               ("werewolves", WOLF)))
    assert ordered >= 180, ordered
    assert 0.93 <= sum(covered.values()) / (200 * len(covered)) <= 0.97, covered
    assert all(180 <= c <= 198 for c in covered.values()), covered


def test_the_rotation_design_is_nearly_blind_where_the_default_is_not():
    """The same number of games as mixed tables: the expected interval of a village difference is several
    times wider (what ``--plan`` prints before a tournament runs)."""
    from toolkit.study.tournament import expected_widths, schedule

    pairs = expected_widths(default_plan())[1]
    rotation = expected_widths(schedule(MODELS, ["classic7"], "rotation", games=291, seed=0))[1]
    village = lambda t: t[t["side"] == "village"]["diff_half_width"].mean()  # noqa: E731
    assert village(rotation) > 4 * village(pairs)
    assert 0.25 < village(pairs) < 0.4


def test_the_plan_widens_where_the_models_differ():
    """Issue 45: the planner took every model as equal at the village rate, so its half-widths were 4–42% too
    narrow where models differ. At the models' strengths (a pilot's fit, or ``spread``'s gap) it promises the
    Fisher information of those strengths: wider for the models at the edges."""
    from toolkit.study.tournament import expected_widths, spread

    plan = default_plan()
    equal = expected_widths(plan, 0.29)[0].set_index(["spec", "side"])["half_width"]
    gap = spread(MODELS, 2.0)
    assert gap[(MODELS[0], "village")] == -1.0 and gap[(MODELS[-1], "werewolves")] == 1.0
    apart = expected_widths(plan, 0.29, strengths=gap)[0].set_index(["spec", "side"])["half_width"]
    assert (apart >= equal - 1e-9).all() and apart.max() > 1.1 * equal.max()
    assert expected_widths(plan, 0.29, strengths=spread(MODELS, 0.0))[0]["half_width"].tolist() == \
        expected_widths(plan, 0.29)[0]["half_width"].tolist()


def test_a_perfect_split_has_an_honest_interval_and_cannot_always_separate():
    games, players = synthetic(seed=0, games_per_pair=2)
    # village always wins: the side term is large but its interval is not a point, and strengths overlap
    games["winner"] = "village"
    r = A.ratings(games, players, by_side=True, n_boot=100).set_index(["spec", "side"])
    assert (r["ci_high"] - r["ci_low"] > 0.5).all()
    sep = A.separation(games, players, by_side=True, n_boot=100)
    assert (sep["verdict"] == "cannot separate").all()


def test_overall_rating_and_side_term_separate_side_from_model():
    # Two models, each always with the same side: the old rating put all the side effect on the models.
    games, players = synthetic(seed=3, games_per_pair=60)
    r = A.ratings(games, players, by_side=False, n_boot=100).set_index("spec")
    assert r.loc["alpha", "rating"] > r.loc["beta", "rating"] > r.loc["gamma", "rating"]
    assert r.loc["(side term)", "ci_low"] > 0


@pytest.mark.slow
def test_elo_and_openskill_recover_the_order_in_the_default_design():
    """Elo and OpenSkill (medians over 5 random game orders) get both sides' order right in ≥ 90% of 20
    simulated default tournaments (20, not 200, to keep the test short: 200 in
    ``benchmarks/rating_simulation.py``);
    Elo reports its Monte-Carlo error, which shrinks with more orders."""
    from toolkit.analysis.simulate import tournament_outcomes

    pytest.importorskip("openskill")
    plan = default_plan()
    good = {"elo": 0, "openskill": 0}
    for rep in range(20):
        games, players = tournament_outcomes(plan, VILLAGE, WOLF, SIDE, seed=rep)
        e = A.elo(games, players, n_orders=5, seed=rep).set_index(["spec", "side"])["elo"]
        o = A.openskill_ratings(games, players, n_orders=5, seed=rep).set_index(["spec", "side"])["mu"]
        for name, table in (("elo", e), ("openskill", o)):
            good[name] += all(list(table.xs(side, level="side").sort_values(ascending=False).index)
                              == sorted(true, key=true.get, reverse=True)
                              for side, true in (("village", VILLAGE), ("werewolves", WOLF)))
    assert min(good.values()) >= 18, good
    few, many = (A.elo(games, players, n_orders=n, seed=1)["mc_error"].mean() for n in (10, 80))
    assert many < few / 2


def test_openskill_weights_models_by_seat_share():
    """Mixed tables where alpha holds three of four village seats: before the weights, every model present
    moved alike and all village ratings came out identical."""
    pytest.importorskip("openskill")
    from toolkit.analysis.simulate import tournament_outcomes
    from toolkit.study.tournament import schedule

    plan = schedule(MODELS, ["classic7"], "rotation", games=60, seed=0)
    games, players = tournament_outcomes(plan, VILLAGE, WOLF, SIDE, seed=0)
    o = A.openskill_ratings(games, players, n_orders=2).set_index(["spec", "side"])["mu"]
    assert o.xs("village", level="side").nunique() == 3


def test_n_counts_the_games_that_inform_a_rating():
    """Self-play cancels out of the overall rating: it informs only the side term."""
    games, players = synthetic(seed=0, games_per_pair=10)
    overall = A.ratings(games, players, by_side=False).set_index("spec")
    assert (overall.loc[MODELS, "n"] == 40).all()  # 4 non-self-play pairings × 10 games
    assert overall.loc["(side term)", "n"] == 90
    assert (A.ratings(games, players, by_side=True).query("spec != '(side term)'")["n"] == 30).all()


def test_separation_verdicts_are_holm_corrected():
    games, players = synthetic(seed=4, games_per_pair=60)
    sep = A.separation(games, players)
    assert (sep["p_holm"] >= sep["p"]).all()
    assert ((sep["p_holm"] < 0.05) == (sep["verdict"] != "cannot separate")).all()


@pytest.mark.slow
def test_the_example_study_situation_ranks_heuristic_wolves_above_random_wolves(tmp_path):
    """Heuristic villagers against heuristic or random wolves (the old example study), played for real."""
    from toolkit.study.experiments import run_werewolf_cell
    from toolkit.record.load import load

    for wolves in ("heuristic", "random"):
        run_werewolf_cell(str(tmp_path / wolves), n_games=80, seed=0, wolf_model=wolves)
    t = load(tmp_path, complete_games=True)
    r = A.ratings(t.games, t.players, by_side=True, n_boot=100).set_index(["spec", "side"])
    assert r.loc[("heuristic", "werewolves"), "rating"] > r.loc[("random", "werewolves"), "rating"]
    sep = A.separation(t.games, t.players, by_side=True, n_boot=100).set_index("side")
    assert sep.loc["werewolves", "a"] == "heuristic"


def test_a_study_of_draws_only_has_no_ratings_and_no_crash():
    """All games drawn (max_days reached): nothing decided, so no strengths, not an IndexError."""
    games = pd.DataFrame({"game_id": ["g1", "g2"], "winner": ["draw", "draw"]})
    players = pd.DataFrame({"game_id": ["g1"] * 2 + ["g2"] * 2, "seat": ["P1", "P2"] * 2,
                            "side": ["village", "werewolves"] * 2, "spec": ["a", "b"] * 2})
    d = A.ratings(games, players, by_side=True)
    assert d.empty and list(d.columns) == ["spec", "side", "rating", "ci_low", "ci_high", "n"]


@pytest.mark.slow
def test_the_bootstrap_fits_take_the_draws_a_block_at_a_time_with_the_same_numbers(monkeypatch):
    """``fit_ratings``' bootstrap merges its replicate weights a block of replicates at a time (the whole
    (replicates × games) matrix is 1.6 GB at 100,000 games, and the old code built it at once): its peak stays
    well under that matrix's size, and the fits are those of the whole matrix, to the last bit."""
    import importlib
    import tracemalloc

    from toolkit.analysis import intervals

    ratings = importlib.import_module("toolkit.analysis.ratings")  # (the package's ``ratings`` is the function)
    games, players = synthetic(seed=2, games_per_pair=400)  # 3,600 games: the matrix is 2,000 x 3,600 floats
    d = ratings.design(games, players)
    T = ratings.constraints(d)
    whole = ratings.fit(d.X, d.y, intervals.cluster_draws(len(d.y), 2000, 0), T=T)
    monkeypatch.setattr(intervals, "BLOCK", 1 << 16)  # 18 replicates a block
    tracemalloc.start()
    try:
        f = ratings.fit_ratings(games, players, n_boot=2000, seed=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (f.boots == whole).all()
    matrix = 2000 * len(d.y) * 8
    assert peak < matrix / 3, (peak, matrix)  # the old code held the matrix twice (its blocks and their concatenation)
