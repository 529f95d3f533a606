"""The game transcript, formatted once for every front end: ``line`` (one event, as it happens) and
``lines`` (a whole list) give what to show; ``ansi`` renders a line for a terminal (``toolkit play``),
``html`` for the notebook widget. Speeches are quoted «…» as in the prompts. A death already named by the dawn
announcement is not repeated."""

from __future__ import annotations

import html as _html
from dataclasses import dataclass, replace

from toolkit.core.printable import printable
from toolkit.werewolf.engine import roles
from toolkit.werewolf.engine.rules import PUBLIC, Event

EMPHASISED = ("announcement", "elimination", "death")


def _role(name: str) -> roles.Role:
    """The role's declaration (its colours); a role no longer registered (an old results folder) is plain."""
    return roles.REGISTRY.get(name) or roles.Role()


@dataclass(frozen=True)
class Line:
    day: int
    phase: str
    text: str
    actor: str | None = None
    role: str | None = None  # shown where the reader knows it
    private_to: str | None = None
    emphasis: bool = False
    fallback: bool = False


def event_text(e: Event, last_announcement: str = "") -> str | None:
    """An event's text for a reader, or None when an earlier line already said it (a death at dawn
    follows the announcement that names it). A speech (or last words) is quoted «…» as the prompts quote it:
    a player's words, never a game fact (the speech cleaner folds every look-alike of « and », so a speech
    cannot close its quote)."""
    if e.kind == "death" and e.target and e.target in last_announcement:
        return None
    if e.kind == "speech":
        return f"«{e.text}»"
    if e.kind == "check" and e.text.endswith(" is werewolf."):
        return e.text[: -len("werewolf.")] + "a werewolf."
    return e.text


def line(e: Event, roles: dict[str, str], last_announcement: str = "") -> Line | None:
    """One event's line, or None for one already said. Which events and roles a reader may see is decided
    before (``toolkit.ui.viewer``: the widget passes only what its viewer sees; the terminal shows everything):
    an actor's role shows when ``roles`` has it."""
    text = event_text(e, last_announcement)
    if text is None:
        return None
    return Line(e.day, e.phase, text, e.actor, roles.get(e.actor) if e.actor else None,
                None if e.visibility == PUBLIC else e.visibility, e.visibility == PUBLIC and e.kind in EMPHASISED,
                bool(e.fallback))


def lines(events: list[Event], roles: dict[str, str]) -> list[Line]:
    out, last = [], ""
    for e in events:
        x = line(e, roles, last)
        if e.kind == "announcement" and e.visibility == PUBLIC:
            last = e.text
        if x is not None:
            out.append(x)
    return out


def ansi(x: Line, colour: bool = True) -> str:
    """A line for a terminal: its own colours, and every text in it made printable (a speech cannot send escape
    sequences of its own)."""
    def c(code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if colour else text

    x = replace(x, text=printable(x.text), actor=x.actor and printable(x.actor), role=x.role and printable(x.role),
                phase=printable(x.phase), private_to=x.private_to and printable(x.private_to))

    who = ""
    if x.actor:
        who = c(_role(x.role).terminal_colour if x.role else "0", f"{x.actor} ({x.role})" if x.role else x.actor) + ": "
    if x.private_to is None:
        text = f"[day {x.day} {x.phase}] {who}{x.text}"
        text = c("1", text) if x.emphasis else text
    else:
        text = c("2", f"[day {x.day} {x.phase}] (private to {x.private_to}) {who}{x.text}")
    return text + (c("33", "  [fallback]") if x.fallback else "")


def html(x: Line) -> str:
    who = ""
    if x.actor:
        who = (f"<b style='color:{_role(x.role).colour}'>{x.actor} ({x.role})</b>: " if x.role
               else f"<b>{x.actor}</b>: ")
    private = "" if x.private_to is None else f"<i>(private to {x.private_to})</i> "
    fallback = " <span style='color:#b7950b'>[fallback]</span>" if x.fallback else ""
    return f"<div>[day {x.day} {x.phase}] {private}{who}{_html.escape(x.text)}{fallback}</div>"
