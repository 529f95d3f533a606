"""Simulated tournaments with known strengths, for checking that the ratings recover what they claim to.

``tournament_outcomes`` takes a schedule (``toolkit.study.tournament.schedule``: who sits where in every
game) and draws each game's winner from the Bradley–Terry model the ratings fit,
logit P(village wins) = side + Σ village seat shares · village strength − Σ wolf seat shares · wolf strength,
so the truth is known exactly. Seeded; vectorised over games. No game engine is involved: it checks the
statistics, not the players.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def tournament_outcomes(plan: pd.DataFrame, village: dict[str, float], wolves: dict[str, float], side: float,
                        seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(games, players) frames as ``toolkit.record.load`` gives them: one decided game per planned game."""
    strength = np.where(plan["side"] == "village", plan["spec"].map(village), -plan["spec"].map(wolves))
    per_side = pd.DataFrame({"game": plan["game"], "side": plan["side"], "s": strength})
    logit = side + per_side.groupby(["game", "side"])["s"].mean().groupby("game").sum()
    rng = np.random.default_rng(seed)
    won = rng.random(len(logit)) < 1.0 / (1.0 + np.exp(-logit.to_numpy()))
    games = pd.DataFrame({"game_id": logit.index.astype(str), "seed": logit.index.to_numpy(),
                          "winner": np.where(won, "village", "werewolves")})
    players = plan[["seat", "role", "side", "spec"]].assign(game_id=plan["game"].astype(str))
    return games, players
