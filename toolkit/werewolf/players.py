"""A seat's player: turns an observation into a decision through a werewolf Action and its backend.

Every player is the same class; what differs is the backend its model spec names (an LLM endpoint,
``heuristic``, ``random``, ``scripted:``, ``replay:``, ``chaos:``). A decision that stays unusable after
one re-ask becomes a seeded legal fallback, recorded as such.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from toolkit.actions import CallContext
from toolkit.llm import Backend
from toolkit.werewolf.actions import ACTIONS, Reflection, Speech, output_model
from toolkit.werewolf.rules import Ask


@dataclass
class SeatConfig:
    spec: str = "heuristic"
    reflection: bool = False
    experience: bool = False
    strategy: str | None = None  # "honest" keeps a wolf from impersonating; prompts may read others


@dataclass
class Decision:
    target: str | None = None
    text: str = ""
    fallback: bool = False
    error: str | None = None
    calls: int = 1


@dataclass
class Player:
    seat: str
    role: str
    config: SeatConfig
    backend: Backend
    notes: str = ""
    experiences: list[str] = field(default_factory=list)

    async def act(self, action: str, obs: dict[str, Any], values: dict[str, Any], ctx: CallContext,
                  seed: int, key: str, choices: tuple[str, ...] = (), can_pass: bool = False,
                  temperature: float | None = None) -> tuple[BaseModel, bool, str | None, int]:
        def fallback() -> BaseModel:
            rng = random.Random(f"{seed}:fallback:{key}")
            if action == "speak":
                return Speech(speech="I have nothing to add.")
            if action == "reflect":
                return Reflection(reflection="")
            target = None if can_pass else rng.choice(choices)
            return output_model(action, choices, can_pass)(target=target)

        result = await ACTIONS[action].run(
            self.backend, {**values, "reflection": self.notes, "experiences": self.experiences,
                           "strategy": self.config.strategy or "default"},
            fallback=fallback, ctx=ctx, output=output_model(action, choices, can_pass), observation=obs,
            meta={"seat": self.seat, "role": self.role, "replay_key": key}, temperature=temperature, seed=seed)
        return result.value, result.fallback, result.error, result.calls

    async def decide(self, ask: Ask, obs: dict[str, Any], values: dict[str, Any], ctx: CallContext, seed: int,
                     key: str, temperature: float | None = None) -> Decision:
        value, fallback, error, calls = await self.act(ask.action, obs, values, ctx, seed, key, ask.choices,
                                                       ask.can_pass, temperature)
        if ask.action == "speak":
            return Decision(text=value.speech, fallback=fallback, error=error, calls=calls)
        return Decision(target=value.target, fallback=fallback, error=error, calls=calls)
