"""The Villager: no power; votes by day. The plain village role of ``side_kill`` (its side loses when every
Villager is dead)."""

from __future__ import annotations

from toolkit.werewolf.engine.roles.base import Role


class Villager(Role):
    name = "Villager"
    colour, terminal_colour = "#27ae60", "32"


ROLE = Villager()
