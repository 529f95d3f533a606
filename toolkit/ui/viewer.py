"""What the person at the werewolf widget may see: the one place every part of the widget asks (transcript,
call inspector, status line, alive chart, and any part added later).

Outside god view the viewer is the human seats (none: a spectator) and knows what their observations hold
(``toolkit.werewolf.seat.observation.observe``, the very record a model seat of the same role gets): an event
only when one of its seats may see it (``Event.visible_to``, the rule the observation uses), a model call only
when one of its seats made it, a seat's role or side only where the observation tells it (its own, a wolf's
partners, the Seer's checks, a death the preset reveals). The counts follow: the alive chart gives the sides'
numbers only when the viewer can work them out. In god view it sees everything the game holds."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from toolkit.werewolf.engine.roles import side_of
from toolkit.werewolf.engine.roles.base import Ask
from toolkit.werewolf.engine.rules import PUBLIC, Event, Game
from toolkit.werewolf.seat.observation import observe, record

WOLVES = "werewolves"
_SHOWN = re.compile(r"^(\S+) \((.+)\)$")  # a revealed death as the record names it: "Player3 (Werewolf)"


@dataclass(frozen=True)
class Viewer:
    game: Game | None
    seats: tuple[str, ...] = ()  # the human seats: whose knowledge the screen shows
    god: bool = False

    # ------------------------------------------------------------------ what happened
    def sees(self, e: Event) -> bool:
        if self.god or e.visibility == PUBLIC:
            return True
        return self.game is not None and any(e.visible_to(s, self.game.roles[s]) for s in self.seats)

    def events(self, events: list[Event]) -> list[Event]:
        return [e for e in events if self.sees(e)]

    def calls(self, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The model calls the viewer may open: a call's prompt is its seat's private view, so only its own."""
        return list(calls) if self.god else [c for c in calls if c.get("seat") in self.seats]

    # ------------------------------------------------------------------ who is who
    @cached_property
    def observations(self) -> list[dict[str, Any]]:
        """Each human seat's observation now (as a model seat would get it), the source of what it knows."""
        if self.game is None:
            return []
        return [observe(self.game, s, Ask(s, "watch")) for s in self.seats]

    def _public_record(self) -> dict[str, Any]:
        return record(self.game, [e for e in self.game.events if e.visibility == PUBLIC])

    def roles(self) -> dict[str, str]:
        """The roles the viewer knows: every role in god view; else its seats', a wolf's partners, the checks
        that told a role, and the deaths the preset reveals by role."""
        if self.game is None:
            return {}
        if self.god:
            return dict(self.game.roles)
        known = {s: r for s, r in _revealed(self._public_record()).items() if r not in (WOLVES, "village")}
        for obs in self.observations:
            known[obs["seat"]] = obs["role"]
            known.update({t: obs["role"] for t in obs.get("teammates", ())})
            known.update({t: r.split(" (")[0] for t, r in (obs.get("check_roles") or {}).items()})
        return known

    def sides(self) -> dict[str, str]:
        """The side of every seat the viewer knows it of (a Seer's check or a team-level reveal tells a side)."""
        if self.game is None:
            return {}
        if self.god:
            return {s: side_of(r) for s, r in self.game.roles.items()}
        revealed = _revealed(self._public_record())
        known = {s: (r if r in (WOLVES, "village") else side_of(r)) for s, r in revealed.items()}
        for obs in self.observations:
            known.update({t: WOLVES if r == "werewolf" else "village" for t, r in (obs.get("checks") or {}).items()})
            known.update({t: WOLVES for t in obs.get("teammates", ())})
            known[obs["seat"]] = obs["side"]
        known.update({s: side_of(r) for s, r in self.roles().items()})
        return known

    def alive(self) -> dict[str, int | None]:
        """The alive chart's numbers: the living, and the village's and the wolves' living where the viewer can
        count them (it knows every wolf, or the side of every dead seat); else None."""
        g = self.game
        wolves_in_game = sum(n for r, n in g.preset.roles.items() if side_of(r) == WOLVES)
        sides = self.sides()
        known_wolves = {s for s, side in sides.items() if side == WOLVES}
        dead = [s for s in g.seats if s not in g.alive]
        if len(known_wolves) == wolves_in_game:
            wolves = sum(s in g.alive for s in known_wolves)
        elif all(s in sides for s in dead):
            wolves = wolves_in_game - sum(sides[s] == WOLVES for s in dead)
        else:
            wolves = None
        return {"alive": len(g.alive), "werewolves": wolves,
                "village": None if wolves is None else len(g.alive) - wolves, "werewolves_at_start": wolves_in_game}


def _revealed(rec: dict[str, Any]) -> dict[str, str]:
    """Seat → role or side for every death the public record names with one (the preset's reveal levels)."""
    names = [n for d in rec["days"] for n in (*d["night_deaths"], d["eliminated"]) if n]
    if rec.get("condensed"):
        names += [n for _, n in (*rec["condensed"]["deaths"], *rec["condensed"]["eliminated"])]
    return {m[1]: m[2] for m in map(_SHOWN.match, names) if m}
