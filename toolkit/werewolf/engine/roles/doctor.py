"""The Doctor (Kaggle's name and options): heals one player a night, who then survives the wolves' attack
(``doctor_self_save``, ``doctor_consecutive_saves``). Its decision is ``protect``, its event ``heal``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolkit.werewolf.engine.events import EventKind
from toolkit.werewolf.engine.roles.base import Ask, Role
from toolkit.werewolf.engine.roles.guard import protections


@dataclass
class Night:
    heal: str | None = None
    done: bool = False


@dataclass
class State:
    last_healed: str | None = None


class Doctor(Role):
    name = "Doctor"
    colour, terminal_colour = "#2980b9", "34"
    special = True
    night_order = 10
    actions = ("protect",)
    events = (EventKind("heal", decision="protect", kaggle=("DoctorHealActionDataEntry", "heal_action"),
                        kaggle_action="HealAction"),)
    Night = Night
    State = State

    def night_asks(self, game: Any) -> list[Ask]:
        doctor = game.living(self.name)
        if not doctor or game.tonight(self.name).done:
            return []
        d = doctor[0]
        last = game.state_of(self.name).last_healed
        barred = {d} if not game.preset.doctor_self_save else set()
        if not game.preset.doctor_consecutive_saves and last:
            barred.add(last)
        return [Ask(d, "protect", tuple(s for s in game.alive if s not in barred), can_pass=True)]

    def act(self, game: Any, seat: str, action: str, target: str | None, fallback: bool) -> None:
        n = game.tonight(self.name)
        n.heal, n.done = target, True
        game.state_of(self.name).last_healed = target
        game.emit("heal", seat, target, f"You heal {target}." if target else "You heal nobody.", seat, fallback)

    def shields(self, game: Any) -> list[tuple[str, str]]:
        target = game.tonight(self.name).heal
        return [(target, "protect")] if target is not None else []

    def observe(self, game: Any, seat: str, ask: Ask) -> dict[str, Any]:
        return {"last_protected": game.state_of(self.name).last_healed}

    def private_lines(self, game: Any, seat: str, visible: list[Any]) -> list[str]:
        return protections(visible, "heal", "healed")


ROLE = Doctor()
