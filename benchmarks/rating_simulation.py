"""Ratings on 200 simulated tournaments with known side-specific strengths, in the default design
(pairs with self-play, 97 games per pairing, classic7: 873 games) and in the rotation design with the same
number of games: how often each rating gets both sides' order right, and how often the Bradley–Terry 95%
intervals cover the true strengths. Prints the figures docs/statistics.md quotes.

    python benchmarks/rating_simulation.py [--reps 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from toolkit import analysis as A
from toolkit.analysis.simulate import tournament_outcomes
from toolkit.study.tournament import schedule

MODELS = ["alpha", "beta", "gamma"]
VILLAGE = {"alpha": 0.6, "beta": 0.0, "gamma": -0.6}
WOLF = {"alpha": 0.8, "beta": 0.1, "gamma": -0.9}
SIDE = 0.4


def right_order(table, column):
    return all(list(table.xs(side, level="side")[column].sort_values(ascending=False).index)
               == sorted(true, key=true.get, reverse=True)
               for side, true in (("village", VILLAGE), ("werewolves", WOLF)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=200)
    reps = parser.parse_args().reps
    truth = {**{(m, "village"): x for m, x in VILLAGE.items()}, **{(m, "werewolves"): x for m, x in WOLF.items()},
             ("(side term)", "village advantage"): SIDE}
    for design, plan in (("pairs (default)", schedule(MODELS, ["classic7"], seed=0)),
                         ("rotation", schedule(MODELS, ["classic7"], "rotation", games=291, seed=0))):
        start = time.perf_counter()
        order = {"bradley-terry": 0, "elo": 0, "openskill": 0}
        covered = {k: 0 for k in truth}
        widths = []
        for rep in range(reps):
            games, players = tournament_outcomes(plan, VILLAGE, WOLF, SIDE, seed=rep)
            r = A.ratings(games, players, by_side=True).set_index(["spec", "side"])
            for key, value in truth.items():
                covered[key] += int(r.loc[key, "ci_low"] <= value <= r.loc[key, "ci_high"])
            widths.append((r["ci_high"] - r["ci_low"]).drop(("(side term)", "village advantage")).mean())
            order["bradley-terry"] += right_order(r, "rating")
            order["elo"] += right_order(A.elo(games, players, n_orders=5, seed=rep).set_index(["spec", "side"]), "elo")
            order["openskill"] += right_order(
                A.openskill_ratings(games, players, n_orders=5, seed=rep).set_index(["spec", "side"]), "mu")
        print(f"== {design}: {plan['game'].nunique()} games, {reps} replications "
              f"({time.perf_counter() - start:.0f} s)")
        for name, k in order.items():
            print(f"  order right on both sides, {name}: {k / reps:.3f}")
        cov = np.array(list(covered.values())) / reps
        print(f"  Bradley-Terry 95% coverage: pooled {cov.mean():.3f}, per rating {cov.min():.3f}-{cov.max():.3f}")
        print(f"  Bradley-Terry mean interval width (logits): {np.mean(widths):.2f}")


if __name__ == "__main__":
    main()
