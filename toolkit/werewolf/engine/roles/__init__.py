"""The roles, one module each (``base.Role`` says what the engine asks a role). The registry holds every role a
preset may name, in the order ``toolkit.core.werewolf_names.ROLES`` lists them (the order the role shuffle
deals them in, so a new role goes last); ``register`` adds one more (a role defined outside the package, e.g.
in a test). Registering a shipped role: its name in ``werewolf_names.ROLES`` (and any new decision's name in
``TARGETED_ACTIONS``, the rule-based player's own plays), its module ``<name>.py`` here
holding ``ROLE`` (with the kinds of events rows it emits, ``Role.events``), its prompt file
``prompts/werewolf/roles/<name>.j2`` and one template per new decision."""

from __future__ import annotations

from importlib import import_module

from toolkit.core.registry import Registry
from toolkit.core import werewolf_names
from toolkit.core.werewolf_names import ROLES as SHIPPED, TARGETED_ACTIONS
from toolkit.werewolf.engine.events import ENGINE, MODERATOR, EventKind
from toolkit.werewolf.engine.roles.base import PUBLIC, PRIVATE_NIGHTS, WOLVES, Ask, Kill, Role

__all__ = ["PRIVATE_NIGHTS", "PUBLIC", "REGISTRY", "WOLVES", "Ask", "EventKind", "Kill", "Role", "event_kind",
           "event_kinds", "get", "register", "removing_kinds", "side_of", "special_roles"]


def _check(role: Role) -> None:
    """A role's declaration is whole: a side, its kinds of events rows declared (none of them a different
    declaration of a kind the engine or another role declares)."""
    if role.side not in ("village", "werewolves"):
        raise ValueError(f"a role needs a name and a side (village or werewolves): {role!r}")
    if not all(isinstance(k, EventKind) for k in role.events):
        raise ValueError(f"{role.name}.events must hold EventKind declarations: {role.events!r}")
    unplayed = [a for a in role.actions if a not in (*role.plays, *TARGETED_ACTIONS) and role.heuristic is None]
    if unplayed:
        raise ValueError(f"role {role.name}: no rule-based play for {', '.join(map(repr, unplayed))} (Role.plays: "
                         "the heuristic player's first game would fail)")
    others = (r for name, r in REGISTRY.items() if name != role.name)
    _merged([*ENGINE, *(k for r in others for k in r.events), *role.events])


REGISTRY: Registry[Role] = Registry("role", check=_check, parts=("plays", "heuristic"))
werewolf_names.read_roles_from(REGISTRY)  # a scripted file (read below the game) names the roles registered now
register, get = REGISTRY.register, REGISTRY.one


def side_of(role: str) -> str:
    return get(role).side


def event_kinds() -> dict[str, EventKind]:
    """Every kind of events row a game can hold, by name: the engine's, then each registered role's. Two
    declarations of one name must be the same declaration."""
    return _merged([*ENGINE, *(k for role in REGISTRY.values() for k in role.events)])


def _merged(kinds: list[EventKind]) -> dict[str, EventKind]:
    """The kinds by name; two declarations of one name must be the same, and one Kaggle entry records one
    decision (a reader of a Kaggle replay could not tell two apart)."""
    out: dict[str, EventKind] = {}
    entries: dict[tuple, EventKind] = {}
    for kind in kinds:
        if out.setdefault(kind.name, kind) != kind:
            raise ValueError(f"the event kind {kind.name!r} is declared twice, differently: {out[kind.name]} and "
                             f"{kind}")
        entry = entries.setdefault(kind.kaggle, kind) if kind.decision and kind.kaggle != MODERATOR else kind
        if entry.decision != kind.decision:
            raise ValueError(f"the Kaggle entry {kind.kaggle[0]} records two decisions: "
                             f"{entries[kind.kaggle].decision!r} ({entries[kind.kaggle].name}) and {kind.decision!r} "
                             f"({kind.name})")
    return out


def event_kind(name: str) -> EventKind:
    """The declaration of a kind; a kind no role declares (rows of an older results folder) is plain text."""
    return event_kinds().get(name) or EventKind(name)


def removing_kinds() -> tuple[str, ...]:
    """The kinds of events rows that remove their target from the game (a death, an exile, a shot)."""
    return tuple(name for name, kind in event_kinds().items() if kind.removes)


def special_roles() -> tuple[str, ...]:
    """The village roles whose loss ends a ``side_kill`` game, in registry order."""
    return tuple(name for name, r in REGISTRY.items() if r.special)


for _name in SHIPPED:
    register(import_module(f"{__name__}.{_name.lower()}").ROLE)
REGISTRY.seal()  # a plug-in registers a role of its own under another name
