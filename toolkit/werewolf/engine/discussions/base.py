"""What a discussion protocol is to the engine: how the day's talk goes, from the dawn's announcement to the
vote. ``rules.Game`` has no branch on a protocol's name: it asks the preset's protocol (``Preset.discussion``,
a name of the registry in ``toolkit.werewolf.engine.discussions``) each question below, in the order a day asks
them:

- ``open``: the talk begins (the living are known): who speaks, in which order, and the announcement saying so;
- ``asks``: the decisions it waits for now (``speak``, or a decision of its own such as ``bid``); none left ends
  the talk and opens the vote;
- ``speak`` and ``decide``: taking a speech, or one of its own decisions (``decisions`` names them; each has a
  template ``prompts/werewolf/<decision>.j2``);
- its prompt file ``prompts/werewolf/discussions/<name>.j2``: the clause of the rules paragraph that says how
  the day's talk goes (``By day <clause>, then votes ...``).

Its state for the day is the game's (``Game.talk``: a dict it fills in ``open``), and it emits its rows through
``Game.emit``: ``speech`` for a speech, ``announcement`` (with ``about`` and ``seats`` for the seat's view) for
what it announces, or a kind it declares in ``events``. Rules stay pure: no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolkit.werewolf.engine.events import EventKind
from toolkit.werewolf.engine.roles.base import PUBLIC, Ask
from toolkit.werewolf.engine.speech import clean_speech

if TYPE_CHECKING:
    from toolkit.werewolf.engine.table import Table  # what a protocol reads of a game (rules.Game is one)


class Discussion:
    name = ""
    summary = ""  # one line: what the day's talk is (play --help, the docs' table)
    kaggle: str | None = None  # the Kaggle discussion_protocol it plays (kaggle-environments' name), if any
    decisions: tuple[str, ...] = ()  # its own decisions beside ``speak`` (e.g. ``bid``)
    events: tuple[EventKind, ...] = ()  # the kinds of events rows it emits beside the engine's

    def open(self, game: Table) -> None:
        """The day's talk begins: fill ``game.talk`` and ``game.speech_queue`` and announce the order."""
        raise NotImplementedError

    def asks(self, game: Table) -> list[Ask]:
        """The decisions it waits for now; the default: the first seat of the queue speaks."""
        return [Ask(game.speech_queue[0], "speak")] if game.speech_queue else []

    def speak(self, game: Table, seat: str, text: str, fallback: bool) -> None:
        """A speech asked by ``asks``: the default records it and takes the seat off the queue."""
        game.speech_queue.pop(0)
        say(game, seat, text, fallback)

    def decide(self, game: Table, seat: str, action: str, value: Any, fallback: bool) -> None:
        """One of its own ``decisions`` (``value``: what the decision carries, e.g. a bid)."""
        raise NotImplementedError(f"{self.name} has no decision {action}")

    @property
    def prompt(self) -> str:
        return f"werewolf/discussions/{self.name}.j2"

    def __repr__(self) -> str:
        return f"<discussion {self.name}>"


def say(game: Table, seat: str, text: str, fallback: bool) -> None:
    """A speech of the day, recorded as data: one capped line with no control/bidi characters and no quote
    delimiters (the raw answer stays in the calls table), so no later prompt or transcript can be forged
    through it."""
    game.emit("speech", seat, None, clean_speech(text), PUBLIC, fallback, phase="speech")


def announce_order(game: Table, order: list[str], how: str) -> None:
    """The day's opening announcement with its speaking order (``about="speaking_order"``: the seat's view
    reads the order from ``seats``, never from the text)."""
    game.emit("announcement", None, None, f"Day {game.day}: the living players are {', '.join(game.alive)}.{how} "
              f"Speaking order: {', '.join(order)}.", PUBLIC, about="speaking_order", seats=tuple(order))


def rounds(n: int) -> str:
    return f"{n} round{'s' if n > 1 else ''}"
