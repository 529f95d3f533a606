"""A mixed-strategy baseline (spec ``mixed``): each decision is the heuristic player's with probability
``HEURISTIC_SHARE``, otherwise a uniformly random legal answer. It sits between ``heuristic`` and
``random`` in strength, which gives a tournament a third, distinct opponent with no model to run.
All randomness comes from the request's seed and replay key, so a seeded game plays the same every time."""

from __future__ import annotations

import dataclasses
import random

from toolkit.llm import Backend, Completion, Provider, Request
from toolkit.llm.offline import RandomBackend
from toolkit.werewolf.players.heuristic import HeuristicBackend

HEURISTIC_SHARE = 0.5


class MixedBackend(Backend):
    model = "mixed"
    free = True

    def __init__(self, heuristic_share: float = HEURISTIC_SHARE):
        self.share = heuristic_share
        self.heuristic, self.random = HeuristicBackend(), RandomBackend()

    async def complete(self, request: Request) -> Completion:
        rng = random.Random(f"{request.sampling.seed}:mixed:{request.replay_key or ''}:{len(request.messages)}")
        backend = self.heuristic if rng.random() < self.share else self.random
        return dataclasses.replace(await backend.complete(request), model=self.model)


# The `mixed` spec: an entry point in pyproject.toml points here.
PROVIDER = Provider("mixed", lambda arg, config: MixedBackend(),
                    about="per decision the heuristic answer or a random one", example="mixed")
