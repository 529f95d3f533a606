"""The Guard: protects one player a night from the wolves' attack (``guard_no_repeat``: not the same one two
nights running); may protect themselves. The Doctor is a Guard under other rules (``doctor.Doctor``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolkit.werewolf.engine.events import EventKind
from toolkit.werewolf.engine.roles.base import PRIVATE_NIGHTS, Ask, Role


@dataclass
class Night:
    protect: str | None = None
    done: bool = False


@dataclass
class State:
    last_protected: str | None = None


class Guard(Role):
    name = "Guard"
    colour, terminal_colour = "#2c3e50", "34"
    special = True
    night_order = 20
    actions = ("protect",)
    # Kaggle has no Guard: its protection is written as the nearest entry Kaggle has, a Doctor's heal
    events = (EventKind("protect", decision="protect", kaggle=("DoctorHealActionDataEntry", "heal_action")),)
    Night = Night
    State = State
    verbs = ("protect", "protected")  # its events row's kind (and what it does), its private lines' verb

    def barred(self, game: Any, seat: str, last: str | None) -> set[str]:
        """Whom ``seat`` may not protect tonight (``last``: whom it protected last night)."""
        return {last} if game.preset.guard_no_repeat and last else set()

    def night_asks(self, game: Any) -> list[Ask]:
        guard = game.living(self.name)
        if not guard or game.tonight(self.name).done:
            return []
        barred = self.barred(game, guard[0], game.state_of(self.name).last_protected)
        return [Ask(guard[0], "protect", tuple(s for s in game.alive if s not in barred), can_pass=True)]

    def act(self, game: Any, seat: str, action: str, target: str | None, fallback: bool) -> None:
        n = game.tonight(self.name)
        n.protect, n.done = target, True
        game.state_of(self.name).last_protected = target
        verb = self.verbs[0]
        game.emit(verb, seat, target, f"You {verb} {target}." if target else f"You {verb} nobody.", seat, fallback)

    def shields(self, game: Any) -> list[tuple[str, str]]:
        target = game.tonight(self.name).protect
        return [(target, "protect")] if target is not None else []

    def observe(self, game: Any, seat: str, ask: Ask) -> dict[str, Any]:
        return {"last_protected": game.state_of(self.name).last_protected}

    def private_lines(self, game: Any, seat: str, visible: list[Any]) -> list[str]:
        return protections(visible, *self.verbs)


def protections(visible: list[Any], kind: str, verb: str) -> list[str]:
    """A protector's own last nights, older ones counted."""
    done = [e for e in visible if e.kind == kind]
    shown = done[-PRIVATE_NIGHTS:]
    lines = [f"({len(done) - len(shown)} earlier nights' protections not shown)"] if len(done) > len(shown) else []
    return lines + [f"Night {e.day}: you {verb} {e.target or 'nobody'}." for e in shown]


ROLE = Guard()
