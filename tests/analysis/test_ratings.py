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
    r = A.ratings(games, players, by_side=True, n_boot=200).set_index(["spec", "side"])
    for side, true in (("village", VILLAGE), ("werewolves", WOLF)):
        fitted = r.xs(side, level="side")["rating"]
        assert list(fitted.sort_values(ascending=False).index) == sorted(true, key=true.get, reverse=True)
    side_row = r.loc[("(side term)", "village advantage")]
    assert side_row["ci_low"] > 0 and side_row["ci_low"] < SIDE < side_row["ci_high"]
    sep = A.separation(games, players, by_side=True, n_boot=200)
    assert "werewolves" in set(sep["side"]) and (sep["verdict"] == "alpha > gamma").sum() == 2


def test_intervals_cover_the_true_values_in_90_percent_of_100_replications():
    covered = {k: 0 for k in truth()}
    for seed in range(100):
        games, players = synthetic(seed)
        r = A.ratings(games, players, by_side=True, n_boot=200, seed=seed).set_index(["spec", "side"])
        for key, value in truth().items():
            covered[key] += int(r.loc[key, "ci_low"] <= value <= r.loc[key, "ci_high"])
    assert min(covered.values()) >= 90, covered


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


def test_elo_and_openskill_rank_the_strong_wolf_first():
    games, players = synthetic(seed=2, games_per_pair=80)
    e = A.elo(games, players, n_boot=30).set_index(["spec", "side"])
    assert e.loc[("alpha", "werewolves"), "elo"] > e.loc[("gamma", "werewolves"), "elo"]
    assert e.loc[("alpha", "village"), "elo"] > e.loc[("gamma", "village"), "elo"]
    pytest.importorskip("openskill")
    o = A.openskill_ratings(games, players).set_index(["spec", "side"])
    assert o.loc[("alpha", "werewolves"), "mu"] > o.loc[("gamma", "werewolves"), "mu"]


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
