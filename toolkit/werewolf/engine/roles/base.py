"""What a role is to the engine: a ``Role`` answers every question the rules ask about it, so that a new role
is one module (and its prompt file), registered by name, and ``rules.Game`` has no branch on a role's name.

The questions, in the order a game asks them:

- ``side`` and ``special``: how it affects the win (``special``: one of the village roles whose loss ends a
  ``side_kill`` game, the "gods" of the common rule);
- ``events``: the kinds of events rows its decisions emit (``toolkit.werewolf.engine.events.EventKind``: which
  decision each records and how the report, the exporters, the HTML replay and Kaggle's readers treat it);
- ``night_order`` and ``night_asks``: whether it is asked at night, when (lower first: the order the asks are
  listed and applied in), and for which decision (``actions``: the decisions it makes, each with a template
  ``prompts/werewolf/<action>.j2``);
- ``act``: taking one of its decisions (its private event, its state);
- ``after_hunt``: what it is told once the wolves' victim is settled;
- ``shields`` and ``night_kills``: how the night resolves at dawn (who it protects or saves, whom it kills);
- ``on_death``: what happens when it dies (a decision the death calls for, asked before the game goes on);
- ``observe`` and ``private_lines``: what it learns (its part of a seat's observation and private record);
- ``plays`` (or ``heuristic``): how the rule-based player takes each new decision (the shipped decisions,
  ``werewolf_names.TARGETED_ACTIONS``, are the rule-based player's own: ``players.heuristic.PLAYS``); ``colour`` and
  ``terminal_colour``: its name's colour in the transcripts;
- its prompt file ``prompts/werewolf/roles/<name>.j2``: its clause of the rules paragraph (``night()``, or a
  sentence ``death()``), where the clause stands (``text_order``), ``special`` as here (a test checks), and how
  to play it (``play()``).

Rules stay pure: a role reads and changes the game it is given and emits events through it, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolkit.werewolf.engine.events import EventKind

PUBLIC, WOLVES = "public", "werewolves"
MODERATOR = "moderator"  # an event no seat is shown (a bidding result kept private: Kaggle bid_result_public false)
PRIVATE_NIGHTS = 3  # the guard's and the wolves' own past night actions shown (older ones are summarised)


class IllegalMove(ValueError):
    """A decision the rules do not allow now. The game state is unchanged."""


@dataclass(frozen=True)
class Ask:
    seat: str
    action: str  # hunt, protect, verify, save, poison, shoot, speak, vote
    choices: tuple[str, ...] = ()
    can_pass: bool = False


@dataclass(frozen=True)
class Kill:
    """A death the night brings at dawn: ``shieldable`` if a protection or a save can prevent it."""

    seat: str
    cause: str
    shieldable: bool = False


class Role:
    name = ""
    side = "village"  # village | werewolves
    special = False
    night_order: int | None = None  # None: never asked at night
    actions: tuple[str, ...] = ()
    events: tuple[EventKind, ...] = ()  # the kinds of events rows it emits (the engine's own are in events.ENGINE)
    # The rule-based player's play of each of its decisions (``actions``) that is not a shipped one
    # (``TARGETED_ACTIONS``: the player has its own, ``players.heuristic.PLAYS``): ``"module:function"`` or the
    # function itself, ``(observation, choices, rng) -> target``; or ``heuristic``, one function for all of them,
    # ``(action, observation, choices, rng) -> target``, which a shipped decision the role takes is played by too.
    # Registering a role without a play for a new decision is refused (the first heuristic game would fail).
    plays: dict[str, Any] = {}
    heuristic: Any = None
    colour = "#7f8c8d"  # its name's colour in the notebook's transcript (HTML) ...
    terminal_colour = "37"  # ... and on a terminal (an ANSI SGR code)

    @property
    def prompt(self) -> str:
        return f"werewolf/roles/{self.name.lower()}.j2"

    # ---------------------------------------------------------------- state
    State: Any = None  # a class: its state for the whole game (potions left, the last protected player)
    Night: Any = None  # a class: its state for one night (whom it chose tonight)

    def new_state(self) -> Any:
        return self.State() if self.State is not None else None

    def new_night(self) -> Any:
        return self.Night() if self.Night is not None else None

    # ---------------------------------------------------------------- the night
    def night_asks(self, game: Any) -> list[Ask]:
        return []

    def act(self, game: Any, seat: str, action: str, target: str | None, fallback: bool) -> None:
        raise NotImplementedError(f"{self.name} has no decision {action}")

    def after_hunt(self, game: Any, victim: str) -> None:
        """The wolves' victim is settled tonight."""

    def shields(self, game: Any) -> list[tuple[str, str]]:
        """(seat, "protect" | "save") for every seat it shields tonight."""
        return []

    def night_kills(self, game: Any) -> list[Kill]:
        return []

    # ---------------------------------------------------------------- death
    def on_death(self, game: Any, seat: str, cause: str) -> list[Ask]:
        """The decisions ``seat`` (of this role) must take now that it died of ``cause``."""
        return []

    # ---------------------------------------------------------------- what it learns
    def observe(self, game: Any, seat: str, ask: Ask) -> dict[str, Any]:
        return {}

    def private_lines(self, game: Any, seat: str, visible: list[Any]) -> list[str]:
        return []
