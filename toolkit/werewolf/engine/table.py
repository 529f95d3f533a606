"""What a discussion protocol or a day vote reads and writes of a game: the table around which the day is held.

``rules.Game`` is one such table; discussions and votes are typed against this ``Protocol``, not against
``rules.Game``, so the engine's modules import in one direction (rules → discussions, votes) and a test or
another engine can hand them any object with these members.
"""

from __future__ import annotations

from typing import Any, Protocol

from toolkit.werewolf.engine.preset import Preset


class Table(Protocol):
    preset: Preset
    seed: int
    seats: list[str]
    alive: list[str]
    day: int
    phase: str
    events: list[Any]
    talk: dict[str, Any]  # the discussion's own state
    speech_queue: list[str]  # who speaks next, in order
    balloting: dict[str, Any]  # the day vote's own state across days
    vote_queue: list[str]  # who votes next, in order
    votes: dict[str, str]  # the ballots taken
    vote_candidates: tuple[str, ...]
    vote_fallbacks: set[str]  # voters whose ballot was a fallback answer

    def around(self, start: int) -> list[str]:
        """The living seats in seat order, from seat index ``start`` round the table."""

    def draw(self, kind: str, options: list[str], salt: str) -> str:
        """One of the rules' random draws (given for this kind and day, else seeded by ``salt``)."""

    def emit(self, kind: str, actor: str | None, target: str | None, text: str, visibility: str,
             fallback: bool = False, phase: str | None = None, about: str | None = None,
             seats: tuple[str, ...] = ()) -> None:
        """One events row, of a kind the engine, a role or the protocol declares."""
