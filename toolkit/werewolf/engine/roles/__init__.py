"""The roles, one module each (``base.Role`` says what the engine asks a role). The registry holds every role a
preset may name, in the order ``toolkit.core.werewolf_names.ROLES`` lists them (the order the role shuffle
deals them in, so a new role goes last); ``register`` adds one more (a role defined outside the package, e.g.
in a test). Registering a shipped role: its name in ``werewolf_names.ROLES`` (and any new decision's name in
``TARGETED_ACTIONS``, which the scripted-file schema below the game reads), its module ``<name>.py`` here
holding ``ROLE``, its prompt file ``prompts/werewolf/roles/<name>.j2`` and one template per new decision."""

from __future__ import annotations

from importlib import import_module

from toolkit.core.werewolf_names import ROLES as SHIPPED
from toolkit.werewolf.engine.roles.base import PUBLIC, PRIVATE_NIGHTS, WOLVES, Ask, Kill, Role

__all__ = ["PRIVATE_NIGHTS", "PUBLIC", "REGISTRY", "WOLVES", "Ask", "Kill", "Role", "get", "register", "side_of",
           "special_roles"]

REGISTRY: dict[str, Role] = {}


def register(role: Role) -> Role:
    if not role.name or role.side not in ("village", "werewolves"):
        raise ValueError(f"a role needs a name and a side (village or werewolves): {role!r}")
    REGISTRY[role.name] = role
    return role


def get(name: str) -> Role:
    if name not in REGISTRY:
        raise KeyError(f"unknown role {name!r}; roles are {', '.join(REGISTRY)}")
    return REGISTRY[name]


def side_of(role: str) -> str:
    return get(role).side


def special_roles() -> tuple[str, ...]:
    """The village roles whose loss ends a ``side_kill`` game, in registry order."""
    return tuple(name for name, r in REGISTRY.items() if r.special)


for _name in SHIPPED:
    register(import_module(f"{__name__}.{_name.lower()}").ROLE)
