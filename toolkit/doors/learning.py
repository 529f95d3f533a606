"""A small policy trained through the PettingZoo door (``toolkit.doors.pettingzoo_env``) by REINFORCE: a softmax over
the legal targets of one decision whose score is linear in each candidate's features, read from the door's
observation vector (``toolkit.doors.features``): a logistic policy over candidates, one weight per feature, shared
by every seat. At zero weights it picks uniformly among the legal targets. ``benchmarks/rl_learning.py`` and
``notebooks/04_rl_door.ipynb`` train it on the village's vote (or the wolves' night target) against the heuristic
players (docs/rl.md)."""

from __future__ import annotations

import numpy as np

from toolkit.doors import features
from toolkit.doors.pettingzoo_env import WerewolfAEC
from toolkit.werewolf.game import GameConfig

# The candidate's features, each a block of the door's observation vector read at the candidate's seat.
FEATURES = ("accused", "suspected", "claimed_seer", "checked_wolf", "checked_good", "votes_today")
# Which side's seats are the door's agents, and which of their decisions reach the policy.
TRAINED = {"vote": "village", "hunt": "werewolves"}


class TargetPolicy:
    """Softmax over the legal targets; a target's score is ``weights · its features`` (a logistic policy over
    candidates, one weight per feature, shared by every seat)."""

    def __init__(self, env: WerewolfAEC, learning_rate: float = 0.5, seed: int = 0):
        self.where = features.layout(env.seats, env.role_names)
        self.n = len(env.seats)
        self.weights = np.zeros(len(FEATURES))
        self.learning_rate = learning_rate
        self.rng = np.random.default_rng(seed)

    def candidates(self, vector: np.ndarray) -> np.ndarray:
        """(seats × features): each seat's features from the observation vector."""
        return np.stack([vector[self.where[f][0]:self.where[f][0] + self.n] for f in FEATURES], axis=1)

    def probabilities(self, obs: dict) -> np.ndarray:
        legal = obs["action_mask"][:self.n].astype(bool)
        scores = self.candidates(obs["observation"]) @ self.weights
        scores = np.where(legal, scores, -np.inf)
        p = np.exp(scores - scores[legal].max())
        return p / p.sum()

    def act(self, obs: dict) -> tuple[int, np.ndarray]:
        """A target, and the gradient of its log-probability with respect to the weights."""
        p = self.probabilities(obs)
        choice = int(self.rng.choice(self.n, p=p))
        x = self.candidates(obs["observation"])
        return choice, x[choice] - p @ x

    def update(self, gradients: list[np.ndarray], advantage: float) -> None:
        for g in gradients:
            self.weights += self.learning_rate * advantage * g / max(len(gradients), 1)


def play(env: WerewolfAEC, policy: TargetPolicy, seed: int) -> tuple[float, list[np.ndarray]]:
    """One game; the agents' side's reward and the log-probability gradients of their choices."""
    env.reset(seed=seed)
    gradients, reward = [], 0.0
    for agent in env.agent_iter():
        obs, r, terminated, truncated, info = env.last()
        if terminated or truncated:
            reward = r
            env.step(None)
            continue
        choice, gradient = policy.act(obs)
        gradients.append(gradient)
        env.step(choice)
    return reward, gradients


def train(env: WerewolfAEC, policy: TargetPolicy, seeds: range) -> list[float]:
    baseline, rewards = 0.0, []
    for seed in seeds:
        reward, gradients = play(env, policy, seed)
        policy.update(gradients, reward - baseline)
        baseline += 0.05 * (reward - baseline)
        rewards.append(reward)
    return rewards


def evaluate(env: WerewolfAEC, policy: TargetPolicy, seeds: range) -> np.ndarray:
    """1 for each evaluation game the agents' side won, else 0 (the policy samples, as it plays)."""
    return np.array([play(env, policy, seed)[0] > 0 for seed in seeds], dtype=float)


def door(decision: str, preset: str = "classic7") -> WerewolfAEC:
    """The environment whose agents are the side that takes ``decision`` (``TRAINED``), with only that decision
    reaching them; everything else played inside by the heuristic players."""
    return WerewolfAEC(GameConfig(preset=preset, side_models={TRAINED[decision]: "door"}), actions_through=(decision,))
