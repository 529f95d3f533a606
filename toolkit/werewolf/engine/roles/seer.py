"""The Seer: checks one other player a night and learns their side (``seer_learns: side``) or their role."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolkit.werewolf.engine.events import EventKind
from toolkit.werewolf.engine.roles.base import Ask, Role


@dataclass
class Night:
    done: bool = False


@dataclass
class State:
    checks: dict[str, str] = field(default_factory=dict)  # target → "werewolf" | "good"


class Seer(Role):
    name = "Seer"
    colour, terminal_colour = "#8e44ad", "35"
    special = True
    night_order = 40
    actions = ("verify",)
    events = (EventKind("check", decision="verify", kaggle=("SeerInspectActionDataEntry", "inspect_action"),
                        kaggle_action="InspectAction"),)
    Night = Night
    State = State

    def night_asks(self, game: Any) -> list[Ask]:
        seer = game.living(self.name)
        if not seer or game.tonight(self.name).done:
            return []
        return [Ask(seer[0], "verify", tuple(s for s in game.alive if s != seer[0]))]

    def act(self, game: Any, seat: str, action: str, target: str | None, fallback: bool) -> None:
        game.tonight(self.name).done = True
        side = game.side_of(game.roles[target])
        result = "werewolf" if side == "werewolves" else "good"
        game.state_of(self.name).checks[target] = result
        if game.preset.seer_learns == "role":
            result = f"{game.roles[target]} ({side})"
        game.emit("check", seat, target, f"{target} is {result}.", seat, fallback)

    def observe(self, game: Any, seat: str, ask: Ask) -> dict[str, Any]:
        checks = game.state_of(self.name).checks
        obs: dict[str, Any] = {"checks": dict(checks)}  # only the seer verifies: this seat's own results
        if game.preset.seer_learns == "role":  # what the check told: the role (``checks`` keeps the side)
            obs["check_roles"] = {t: f"{game.roles[t]} ({game.side_of(game.roles[t])})" for t in checks}
        return obs


ROLE = Seer()
