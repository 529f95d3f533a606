"""The Villager: no power; votes by day. The plain village role of ``side_kill`` (its side loses when every
Villager is dead)."""

from __future__ import annotations

from toolkit.werewolf.engine.roles.base import Role


class Villager(Role):
    name = "Villager"


ROLE = Villager()
