"""A seat's observation as a fixed-length vector in [0, 1], for learners that read numbers: made from the seat's
view only (``toolkit.werewolf.seat.observation.observe``: nothing the seat may not know), so the vector hides
what the view hides. Blocks, in order (``n`` seats):

- ``me`` (n), ``role`` (one per role of the preset), ``alive`` (n), ``teammates`` (n: a wolf's fellow wolves);
- ``checked_wolf`` and ``checked_good`` (n each: the seat's own checks, a Seer's);
- ``claimed_seer`` (n: who claimed the Seer in a speech), ``accused`` and ``suspected`` (n each: how many
  speeches called a seat a werewolf, or named it as suspect, divided by n), ``votes_today`` (n: today's votes
  against each seat so far, divided by n);
- ``phase`` (one per phase), ``action`` (one per decision), ``day`` (day / max_days), ``can_pass``.

``layout`` names each block and where it starts, for a learner that wants to read one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from toolkit.werewolf.engine.roles import REGISTRY
from toolkit.werewolf.seat.decisions import ACTIONS

PHASES = ("night", "day_speech", "day_vote", "day_revote", "last_words", "reaction")
DECISIONS = tuple(sorted({*ACTIONS, *(a for role in REGISTRY.values() for a in role.actions)}))
SEAT_BLOCKS = ("me", "alive", "teammates", "checked_wolf", "checked_good", "claimed_seer", "accused", "suspected",
               "votes_today")


def layout(seats: list[str], roles: list[str]) -> dict[str, tuple[int, int]]:
    """Block name → (start, length) in the vector."""
    sizes = {"me": len(seats), "role": len(roles), **{b: len(seats) for b in SEAT_BLOCKS[1:]},
             "phase": len(PHASES), "action": len(DECISIONS), "day": 1, "can_pass": 1}
    out, at = {}, 0
    for name, size in sizes.items():
        out[name] = (at, size)
        at += size
    return out


def size(seats: list[str], roles: list[str]) -> int:
    return sum(n for _, n in layout(seats, roles).values())


def vector(view: dict[str, Any], seats: list[str], roles: list[str], max_days: int) -> np.ndarray:
    """The vector of one observation (``view``: the seat's observation dict)."""
    where = layout(seats, roles)
    out = np.zeros(size(seats, roles), dtype=np.float32)
    n = len(seats)

    def mark(block: str, names: Any, value: float = 1.0) -> None:
        start = where[block][0]
        for s in names:
            if s in seats:
                out[start + seats.index(s)] += value

    mark("me", [view["seat"]])
    out[where["role"][0] + roles.index(view["role"])] = 1
    mark("alive", view["alive"])
    mark("teammates", view.get("teammates", []))
    checks = view.get("checks", {})
    mark("checked_wolf", [s for s, side in checks.items() if side == "werewolf"])  # the Seer's "werewolf" | "good"
    mark("checked_good", [s for s, side in checks.items() if side == "good"])
    claims = [tuple(c) for c in view.get("claims", [])]
    mark("claimed_seer", {speaker for speaker, kind, value in claims if kind == "role" and value == "Seer"})
    mark("accused", [value for _, kind, value in claims if kind == "accuse"], 1 / n)
    mark("suspected", [value for _, kind, value in claims if kind == "suspect"], 1 / n)
    days = view["record"]["days"]
    today = [d for d in days if d["day"] == view["day"]]
    if today and today[0]["rounds"]:
        mark("votes_today", [t for _, t in today[0]["rounds"][-1]["votes"] if t is not None], 1 / n)
    if view["phase"] in PHASES:
        out[where["phase"][0] + PHASES.index(view["phase"])] = 1
    if view["action"] in DECISIONS:
        out[where["action"][0] + DECISIONS.index(view["action"])] = 1
    out[where["day"][0]] = min(view["day"] / max_days, 1.0)
    out[where["can_pass"][0]] = 1.0 if view["can_pass"] else 0.0
    return np.clip(out, 0.0, 1.0)
