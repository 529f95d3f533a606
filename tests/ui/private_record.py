"""What the other seats' private records hold, as the texts that would give them away on a human seat's screen:
the texts of the private events the human seats may not see (night targets, checks, proposals, potions, the
Witch's victim), and every other seat's role where the human cannot know it, in each form the widget or a
prompt would write it. Worked out from the game's events and roles alone (not from the widget's viewer), so
that the tests that use it check the viewer rather than repeat it."""

from __future__ import annotations

from toolkit.ui.transcript import event_text
from toolkit.werewolf.engine.roles import side_of
from toolkit.werewolf.engine.rules import PUBLIC, Event


def as_event(row: dict) -> Event:
    """An events-table row (events.jsonl) as the engine's Event."""
    return Event(row["seq"], row["day"], row["phase"], row["kind"], row["actor"], row["target"], row["text"],
                 row["visibility"], bool(row["fallback"]))


def known_roles(events: list[Event], roles: dict[str, str], humans: tuple[str, ...]) -> set[str]:
    """The seats whose role the humans may know: their own, a wolf's partners, a check that told a role (its text
    names it), a role the game made public (a revealed death)."""
    public = " ".join(e.text for e in events if e.visibility == PUBLIC)
    known = set(humans)
    for h in humans:
        if roles[h] == "Werewolf":
            known |= {s for s, r in roles.items() if r == "Werewolf"}
        known |= {e.target for e in events if e.kind == "check" and e.visibility == h and f"is {roles[e.target]}"
                  in e.text}
    return known | {s for s, r in roles.items() if f"{s} ({r})" in public}


def secrets(events: list[Event], roles: dict[str, str], humans: tuple[str, ...]) -> set[str]:
    """Texts the humans' screen must never show outside god view (each form the widget or a prompt writes)."""
    public = " ".join(e.text for e in events if e.visibility == PUBLIC)
    hidden = [e for e in events if e.visibility != PUBLIC
              and not any(e.visible_to(h, roles[h]) for h in humans)]
    out = {t for e in hidden for t in (e.text, event_text(e)) if t and t not in public}
    known = known_roles(events, roles, humans)
    for seat, role in roles.items():
        if seat not in known:
            out |= {f"{seat} ({role})", f"You are {seat}. Your role: {role}", f"You are {seat}: {role}"}
            if f"{seat} ({side_of(role)})" not in public and not any(
                    e.kind == "check" and e.target == seat and e.visibility in humans for e in events):
                out.add(f"{seat} ({side_of(role)})")
    return out


def shown_in_god_view(events: list[Event], roles: dict[str, str], humans: tuple[str, ...]) -> set[str]:
    """The secrets god view's transcript must show: the hidden events' lines, and the role of every other seat
    that acted in the open (the transcript writes "Player3 (Werewolf): ...")."""
    hidden = [e for e in events if e.visibility != PUBLIC and not any(e.visible_to(h, roles[h]) for h in humans)]
    known = known_roles(events, roles, humans)
    actors = {e.actor for e in events if e.actor and e.visibility == PUBLIC and e.kind == "speech"}
    return {event_text(e) for e in hidden} | {f"{s} ({roles[s]})" for s in actors - known}
