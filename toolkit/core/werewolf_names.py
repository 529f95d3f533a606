"""The werewolf game's role and action names, kept once. The rules (``toolkit.werewolf.engine``) and the
seats' actions (``toolkit.werewolf.seat.decisions``) use them, and so does the scripted-file schema
(``toolkit.core.files``), which the model layer's scripted backend reads below the game: so they live here,
at the bottom."""

# Each role is a module toolkit/werewolf/engine/roles/<name>.py, registered by its name here (what a role does is
# there, not here). New roles go last: the shuffle deals roles in this order.
ROLES = ("Werewolf", "Villager", "Guard", "Witch", "Seer", "Doctor", "Hunter")
TARGETED_ACTIONS = ("hunt", "protect", "verify", "save", "poison", "vote", "shoot")  # each names a seat (or passes)
ACTIONS = (*TARGETED_ACTIONS, "speak", "bid", "reflect")  # every decision a seat is asked for

# The roles registered now (shipped and plug-ins), as the game layer's role registry holds them: that layer gives
# its registry here when it is imported (``read_roles_from``), so a file schema below the game (a scripted file)
# can accept a plug-in role and its decisions. Before that layer is imported no plug-in role can be registered,
# and the shipped names above are the whole list.
_roles: dict[str, object] | None = None


def read_roles_from(registry: dict[str, object]) -> None:
    """The game layer's role registry (name -> a role with ``actions``), read by ``roles``/``actions``."""
    global _roles
    _roles = registry


def roles() -> tuple[str, ...]:
    """Every role a preset or a scripted file may name now."""
    return tuple(_roles) if _roles is not None else ROLES


def targeted_actions() -> tuple[str, ...]:
    """Every decision that names a seat now: each registered role's, and the day's vote."""
    if _roles is None:
        return TARGETED_ACTIONS
    return tuple(dict.fromkeys([*(a for role in _roles.values() for a in getattr(role, "actions", ())), "vote"]))


def actions() -> tuple[str, ...]:
    """Every decision a seat may be asked for now."""
    return (*targeted_actions(), *(a for a in ACTIONS if a not in TARGETED_ACTIONS))
