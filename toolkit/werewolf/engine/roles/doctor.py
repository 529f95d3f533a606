"""The Doctor (Kaggle's name and options): a Guard under other rules (``guard.Guard``). It heals one player a
night, who then survives the wolves' attack, as ``doctor_self_save`` and ``doctor_consecutive_saves`` allow. Its
decision is ``protect``, its event ``heal``."""

from __future__ import annotations

from typing import Any

from toolkit.werewolf.engine.events import EventKind
from toolkit.werewolf.engine.roles.guard import Guard


class Doctor(Guard):
    name = "Doctor"
    colour, terminal_colour = "#2980b9", "34"
    night_order = 10
    events = (EventKind("heal", decision="protect", kaggle=("DoctorHealActionDataEntry", "heal_action"),
                        kaggle_action="HealAction"),)
    verbs = ("heal", "healed")

    def barred(self, game: Any, seat: str, last: str | None) -> set[str]:
        barred = {seat} if not game.preset.doctor_self_save else set()
        if not game.preset.doctor_consecutive_saves and last:
            barred.add(last)
        return barred


ROLE = Doctor()
