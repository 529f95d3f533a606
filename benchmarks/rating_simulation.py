"""Ratings on 200 simulated tournaments with known side-specific strengths, in the default design
(pairs with self-play, 97 games per pairing, classic7: 873 games) and in the rotation design with the same
number of games: how often each rating the report prints gets both sides' order right, and how often the
Bradley–Terry 95% intervals cover the true strengths. Elo and OpenSkill are computed as the report computes
them (medians over 200 and 10 random game orders); they have no interval to cover. The rotation half fits
Bradley–Terry only (it is there to compare designs; Elo and OpenSkill there take ~5 s per replication).
Prints the figures docs/statistics.md quotes.

    python benchmarks/rating_simulation.py [--reps 200] [--designs pairs,rotation]
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
    parser.add_argument("--designs", default="pairs,rotation")
    args = parser.parse_args()
    reps = args.reps
    truth = {**{(m, "village"): x for m, x in VILLAGE.items()}, **{(m, "werewolves"): x for m, x in WOLF.items()},
             ("(side term)", "village advantage"): SIDE}
    plans = {"pairs": schedule(MODELS, ["classic7"], seed=0),
             "rotation": schedule(MODELS, ["classic7"], "rotation", games=291, seed=0)}
    for design in args.designs.split(","):
        plan = plans[design]
        start = time.perf_counter()
        order = {"bradley-terry": 0} if design == "rotation" else {"bradley-terry": 0, "elo": 0, "openskill": 0}
        covered = {k: 0 for k in truth}
        widths = []
        for rep in range(reps):
            games, players = tournament_outcomes(plan, VILLAGE, WOLF, SIDE, seed=rep)
            r = A.ratings(games, players, by_side=True).set_index(["spec", "side"])
            for key, value in truth.items():
                covered[key] += int(r.loc[key, "ci_low"] <= value <= r.loc[key, "ci_high"])
            widths.append((r["ci_high"] - r["ci_low"]).drop(("(side term)", "village advantage")).mean())
            order["bradley-terry"] += right_order(r, "rating")
            if "elo" in order:  # the report's defaults: 200 orders for Elo, 10 for OpenSkill
                order["elo"] += right_order(A.elo(games, players, seed=rep).set_index(["spec", "side"]), "elo")
                order["openskill"] += right_order(
                    A.openskill_ratings(games, players, seed=rep).set_index(["spec", "side"]), "mu")
        print(f"== {design}{' (default)' if design == 'pairs' else ''}: {plan['game'].nunique()} games, "
              f"{reps} replications ({time.perf_counter() - start:.0f} s)")
        for name, k in order.items():
            print(f"  order right on both sides, {name}: {k / reps:.3f} ({k} of {reps})")
        cov = np.array(list(covered.values())) / reps
        print(f"  Bradley-Terry 95% coverage: pooled {cov.mean():.3f}, per rating {cov.min():.3f}-{cov.max():.3f}")
        print(f"  Bradley-Terry mean interval width (logits): {np.mean(widths):.2f}", flush=True)


if __name__ == "__main__":
    main()
