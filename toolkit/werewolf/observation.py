"""What one seat may know, as data: the observation behind every prompt and every rule-based decision.

Only events visible to the seat are used (its own night actions, the wolves' channel for wolves, public
events for all). History is bounded: the last ``recent`` visible events verbatim, and the days before
them as a compact structured summary (deaths, eliminations, votes, claims) made without an LLM.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from toolkit.werewolf import claims as claims_mod
from toolkit.werewolf.rules import Ask, Event, Game, side_of

MESSAGE_KINDS = ("speech", "vote", "elimination", "announcement", "death", "hunt_proposal", "kill", "protect",
                 "check", "save", "poison")


MAX_MESSAGE_CHARS = 400  # a speech longer than this is cut in other players' prompts
SUMMARY_DAYS = 4  # earlier days summarised; older ones survive as the dead list and private knowledge


def observe(game: Game, seat: str, ask: Ask, recent: int = 12) -> dict[str, Any]:
    role = game.roles[seat]
    visible = [e for e in game.events if e.visible_to(seat, role)]
    recent_events = visible[-recent:] if recent > 0 else []
    first_recent_day = recent_events[0].day if recent_events else game.day + 1
    older = [e for e in visible if e.day < first_recent_day]
    speeches = [e for e in visible if e.kind == "speech"]
    claims = [c for e in speeches for c in claims_mod.extract(e.actor, e.text)]
    obs: dict[str, Any] = {
        "game": "werewolf", "seat": seat, "role": role, "side": side_of(role), "day": game.day,
        "phase": game.phase, "action": ask.action, "choices": list(ask.choices), "can_pass": ask.can_pass,
        "alive": list(game.alive), "dead": [s for s in game.seats if s not in game.alive],
        "recent": [_message(e) for e in recent_events],
        "summary": _summarise(older)[-SUMMARY_DAYS:],
        "claims": [list(c) for c in dict.fromkeys(claims)],
    }
    if role == "Werewolf":
        obs["teammates"] = [s for s in game.seats if game.roles[s] == "Werewolf" and s != seat]
        obs["proposals"] = [list(p) for p in game.night.proposals] if game.phase == "night" else []
    if role == "Seer":
        obs["checks"] = dict(game.checks)  # only the seer verifies, so these are this seat's own results
    if role == "Witch":
        obs["antidote"], obs["poison"] = game.antidote, game.poison
        if ask.action == "save":
            obs["victim"] = ask.choices[0]
        if ask.action == "poison":
            obs["saved_tonight"] = game.night.saved
    if role == "Guard":
        obs["last_protected"] = game.last_protected
    return obs


def _message(e: Event) -> dict[str, Any]:
    text = e.text if len(e.text) <= MAX_MESSAGE_CHARS else e.text[:MAX_MESSAGE_CHARS] + " […]"
    return {"day": e.day, "kind": e.kind, "actor": e.actor, "target": e.target, "text": text,
            "private": e.visibility != "public"}


def _summarise(events: list[Event]) -> list[dict[str, Any]]:
    days: dict[int, dict[str, Any]] = defaultdict(lambda: {"deaths": [], "eliminated": None, "votes": {},
                                                          "claims": [], "private": []})
    for e in events:
        d = days[e.day]
        if e.kind == "death":
            d["deaths"].append(e.target)
        elif e.kind == "elimination":
            d["eliminated"] = e.target
        elif e.kind == "vote":
            d["votes"][e.actor] = e.target
        elif e.kind == "speech":
            d["claims"].extend(claims_mod.describe(c) for c in claims_mod.extract(e.actor, e.text))
        elif e.visibility != "public" and e.kind in ("check", "protect", "save", "poison", "kill"):
            d["private"].append(e.text)
    return [{"day": day, **d} for day, d in sorted(days.items())]
