"""A policy that learns through the PettingZoo door: the village's day vote, trained by REINFORCE.

The village seats of each deal are the door's agents, and only their day vote reaches them
(``WerewolfAEC(GameConfig(side_models={"village": "door"}), actions_through=("vote",))``); every other decision,
theirs and the wolves', is the heuristic players'. (``--decision hunt`` trains the wolves' night target instead.)
The policy is a softmax over the legal targets whose score is linear in each candidate's features, read from the
door's observation vector (``toolkit.doors.features``: how often the candidate was called a werewolf or named as a
suspect in speeches, whether it claimed the Seer, the seat's own checks of it, today's votes against it): a
logistic policy over candidates, one weight per feature. It starts at zero weights: the untrained policy votes
uniformly among the legal targets. REINFORCE with a running-mean baseline on the game's reward (+1 win, -1 loss,
0 draw) updates it after each game.

Then the untrained and the trained policy each play the same evaluation seeds (seeds no training game used), and
the script prints each one's win rate with a 95% bootstrap interval over games, the paired difference with its
interval (the same seeds resampled together), and the heuristic players' own rate for reference; ``--plot``
writes the learning curve and the rates as a PNG.

    python benchmarks/rl_learning.py                      # 400 training games, 200 evaluation games each
    python benchmarks/rl_learning.py --quick              # 100 and 60: the README's tour
    python benchmarks/rl_learning.py --plot docs/rl_learning.png
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this tree's toolkit

from toolkit.analysis.intervals import bootstrap_ci, paired_difference  # noqa: E402
from toolkit.doors.learning import FEATURES, TRAINED, TargetPolicy, door, evaluate, train  # noqa: E402
from toolkit.werewolf import GameConfig, play_games  # noqa: E402


def rate(wins: np.ndarray) -> tuple[float, float, float]:
    """The win rate and its 95% bootstrap interval, resampling games (``toolkit.analysis.intervals``)."""
    low, high = bootstrap_ci(wins)
    return float(wins.mean()), low, high


def heuristic_wins(seeds: range, preset: str, side: str) -> np.ndarray:
    games = asyncio.run(play_games([GameConfig(preset=preset, seed=s) for s in seeds]))
    return np.array([g.winner == side for g in games], dtype=float)


def plot(path: Path, curve: list[float], rates: dict[str, tuple], n_eval: int, decision: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    wins = (np.array(curve) > 0).astype(float)
    window = max(len(wins) // 15, 20)
    smooth = np.convolve(wins, np.ones(window) / window, mode="valid")
    left.plot(np.arange(window, len(wins) + 1), smooth)
    side = TRAINED[decision]
    left.set(xlabel="training game", ylabel=f"{side} win rate (moving mean of {window})",
             title=f"REINFORCE on the {side}'s {decision} through the PettingZoo door")
    names = list(rates)
    means = [rates[k][0] for k in names]
    errors = [[rates[k][0] - rates[k][1] for k in names], [rates[k][2] - rates[k][0] for k in names]]
    right.bar(names, means, yerr=errors, capsize=6, color=["#999999", "#2a7ab9", "#b9752a"][:len(names)])
    right.set(ylabel=f"{side} win rate (95% bootstrap CI)", title=f"{n_eval} evaluation games each",
              ylim=(0, max(r[2] for r in rates.values()) * 1.15))
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="classic7")
    parser.add_argument("--decision", choices=sorted(TRAINED), default="vote",
                        help="the decision trained: the village's vote or the wolves' night target")
    parser.add_argument("--train", type=int, default=400, help="training games")
    parser.add_argument("--eval", type=int, default=200, help="evaluation games per policy")
    parser.add_argument("--quick", action="store_true", help="100 training games, 60 evaluation games each")
    parser.add_argument("--plot", type=Path, help="write the learning curve and the rates as a PNG")
    parser.add_argument("--seed", type=int, default=2, help="the trained policy's seed (default 2, docs/rl.md's run)")
    parser.add_argument("--train-from", type=int, default=10_000,
                        help="the first training game's seed (default 10000; evaluation uses seeds 0 to --eval - 1)")
    args = parser.parse_args()
    if args.quick:
        args.train, args.eval = 100, 60
    side = TRAINED[args.decision]
    env = door(args.decision, args.preset)
    train_seeds = range(args.train_from, args.train_from + args.train)
    eval_seeds = range(args.eval)
    if set(train_seeds) & set(eval_seeds):
        parser.error(f"training seeds {args.train_from}.. overlap the evaluation seeds 0..{args.eval - 1}")
    started, cpu = time.perf_counter(), time.process_time()
    untrained = evaluate(env, TargetPolicy(env, seed=1), eval_seeds)
    policy = TargetPolicy(env, seed=args.seed)
    curve = train(env, policy, train_seeds)
    trained = evaluate(env, policy, eval_seeds)
    heuristic = heuristic_wins(eval_seeds, args.preset, side)
    env.close()
    wall = time.perf_counter() - started
    rates = {"untrained": rate(untrained), "trained": rate(trained), "heuristic": rate(heuristic)}
    print(f"{side}'s {args.decision} trained, preset {args.preset}: {args.train} training games, {args.eval} "
          f"evaluation games per policy (the same seeds), policy seed {args.seed}, training seeds from "
          f"{args.train_from}; {wall:.0f} s, {time.process_time() - cpu:.0f} s of CPU")
    print("weights: " + ", ".join(f"{f} {w:+.2f}" for f, w in zip(FEATURES, policy.weights)))
    for name, (mean, low, high) in rates.items():
        print(f"{name:>10} {side} win {mean:.3f} [{low:.3f}, {high:.3f}]  (n={args.eval} games)")
    ones = np.ones(args.eval)
    diff = paired_difference(trained, ones, untrained, ones)
    print(f"trained - untrained: {diff['diff']:+.3f} [{diff['ci_low']:+.3f}, {diff['ci_high']:+.3f}]  "
          f"({diff['method']}, n={diff['n_pairs']} seeds)")
    if args.plot:
        plot(args.plot, curve, rates, args.eval, args.decision)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
