"""The Hunter: no night power. When eliminated, by the wolves at night or by the day's vote, the Hunter shoots
one other living player, who dies at once; a Hunter the Witch poisoned does not shoot (the common rule).

The shot is a decision (``shoot``: a target, no pass) asked as soon as the Hunter's death is announced: at dawn
before the day's speeches, by day right after the elimination (before any last words). The win is checked
once the shot is resolved, so the shot counts before a win the Hunter's death alone would give, and before
the draw of the last day. The shot is public: an events row ``shot`` (actor the Hunter, target the shot
player), its text naming the shooter as the Hunter; the shot player's role is announced as an exile's is
(``exile_reveal``)."""

from __future__ import annotations

from typing import Any

from toolkit.werewolf.engine.events import EventKind
from toolkit.werewolf.engine.roles.base import PUBLIC, Ask, Role


class Hunter(Role):
    name = "Hunter"
    colour, terminal_colour = "#d35400", "33"
    special = True
    actions = ("shoot",)
    events = (EventKind("shot", decision="shoot", removes=True),)  # Kaggle has no Hunter: a moderator entry

    def on_death(self, game: Any, seat: str, cause: str) -> list[Ask]:
        if cause == "poison":
            return []
        others = tuple(s for s in game.alive if s != seat)
        return [Ask(seat, "shoot", others)] if others else []

    def act(self, game: Any, seat: str, action: str, target: str | None, fallback: bool) -> None:
        game.emit("shot", seat, target, f"The Hunter {seat} shoots {game.shown_name(target, 'exile')}.", PUBLIC,
                  fallback)
        game.eliminate(target, "shot")


ROLE = Hunter()
