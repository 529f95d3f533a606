"""A door's actions and the answers they stand for. A decision's answer is what a model seat writes (JSON of the
decision's schema: ``{"target": "Player3"}``, ``{"speech": "..."}``, ``{"bid": 2}``); a door also takes:

- a **discrete action** (an index, PettingZoo's form) over one space for every decision of a preset with ``n``
  seats: ``0..n-1`` a seat (the target, the vote; for a speech the line "I suspect <seat>."), ``n`` no target
  (pass, abstain; for a speech "I have nothing to add."), ``n+1..n+5`` a bid of 0 to 4. The mask says which are
  legal for the decision asked now;
- a **dict** of the answer's fields, or for a speech its **text**;
- in TextArena's form, text such as ``[Player3]`` or ``[3]`` (both Player3) for a targeted decision.

``check`` refuses an answer the rules would not take, naming the legal ones (the game is unchanged).
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
from pydantic import ValidationError

from toolkit.werewolf.seat.decisions import output_model

MAX_BID = 4
NO_TARGET_SPEECH = "I have nothing to add."
_BRACKETED = re.compile(r"\[(?:player\s*)?(\d+)\]", re.I)


class IllegalAction(ValueError):
    """An action the decision asked now does not allow (masked out, or not an answer of its schema)."""


def clipped(text: str, limit: int = 200) -> str:
    """``text`` as an error message or a re-ask echoes it: its first ``limit`` characters and its length."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def n_actions(seats: list[str]) -> int:
    return len(seats) + 2 + MAX_BID


def mask(view: dict[str, Any], seats: list[str]) -> np.ndarray:
    """1 for each discrete action legal for the decision in ``view`` (a seat's observation), else 0."""
    out = np.zeros(n_actions(seats), dtype=np.int8)
    action, n = view["action"], len(seats)
    if action == "bid":
        out[n + 1:] = 1
    elif action == "speak":
        out[[seats.index(s) for s in view["alive"] if s != view["seat"]]] = 1
        out[n] = 1
    elif action != "reflect":
        out[[seats.index(s) for s in view["choices"]]] = 1
        out[n] = 1 if view["can_pass"] else 0
    return out


def from_index(index: int, view: dict[str, Any], seats: list[str]) -> dict[str, Any]:
    """The answer a discrete action stands for in the decision of ``view`` (legal or not: see ``check``)."""
    n = len(seats)
    if not 0 <= index < n_actions(seats):
        raise IllegalAction(f"action {index} is outside the action space (0..{n_actions(seats) - 1})")
    if index > n:  # a bid slot stands for a bid whatever is asked: at another decision a wrong answer, not a pass
        return {"bid": index - n - 1}
    target = seats[index] if index < n else None
    if view["action"] == "bid":  # a seat or no one where a bid is asked: a wrong answer the bid's schema refuses
        return {"target": target}
    if view["action"] == "speak":
        return {"speech": f"I suspect {target}." if target else NO_TARGET_SPEECH}
    return {"target": target}


def index_of(answer: dict[str, Any], view: dict[str, Any], seats: list[str]) -> int | None:
    """The discrete action of an answer, where it has one (a speech has one only if it is a canned line)."""
    n = len(seats)
    if view["action"] == "bid":
        return n + 1 + int(answer["bid"])
    if view["action"] == "speak":
        speech = answer.get("speech")
        found = [i for i, s in enumerate(seats) if speech == f"I suspect {s}."]
        return found[0] if found else (n if speech == NO_TARGET_SPEECH else None)
    target = answer.get("target")
    return seats.index(target) if target is not None else n


def from_text(text: str, view: dict[str, Any], seats: list[str]) -> dict[str, Any] | str:
    """A TextArena answer: JSON as a model writes it is passed on as it is; ``[Player3]`` or ``[3]`` names the target
    Player3 (the seat's name in every prompt, not TextArena's 0-based player id: ``[0]`` and ``[99]`` name no seat,
    an invalid move, asked again); a speech is its text; a bid its first digit."""
    stripped = text.strip()
    if stripped.startswith("{"):
        return text
    action = view["action"]
    if action == "speak":
        return {"speech": stripped}
    if action == "bid":
        digits = re.findall(r"\d", stripped)
        return {"bid": int(digits[0])} if digits else text
    found = _BRACKETED.search(stripped)
    if found:  # [3] is [Player3], the name every prompt uses; a number that names no seat is refused by ``check``
        return {"target": f"Player{int(found.group(1))}"}
    if stripped.lower() in ("pass", "[pass]", "none", "[none]", "abstain", "[abstain]"):
        return {"target": None}
    return text


def check(answer: dict[str, Any], view: dict[str, Any], roles: tuple[str, ...]) -> None:
    """Refuse (``IllegalAction``) an answer the decision's schema does not take: a target that is not a legal
    choice, a pass where passing is not allowed, a bid out of range, a missing field."""
    model = output_model(view["action"], tuple(view["choices"]), view["can_pass"], roles)
    try:
        model.model_validate(answer)
    except ValidationError as exc:
        legal = ", ".join([*view["choices"], *(["null (pass)"] if view["can_pass"] else [])])
        detail = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in exc.errors())
        raise IllegalAction(f"{view['seat']} cannot answer {clipped(json.dumps(answer))} to {view['action']}: "
                            f"{clipped(detail, 400)}"
                            + (f" (legal targets: {legal})" if view["action"] not in ("speak", "bid") else "")) \
            from None
