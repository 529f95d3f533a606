"""What one seat may know, as data: the observation behind every prompt and every rule-based decision.

Only events visible to the seat are used (its own night actions, the wolves' channel for wolves, public
events for all). The observation carries a game *record* that never loses a public fact: every night's
deaths, every vote of every round (revotes marked) with its outcome (elimination or tie), last words, every
role's public act (a Hunter's shot, as its event's text),
role reveals where the preset reveals them, and public claims. Only speech text is ever elided, and
every elision is counted in a note. The record stays bounded however long a game runs: the last
``FULL_DAYS`` days are listed in full; older days are condensed without dropping a fact (deaths and
eliminations with their day, day ranges without deaths or eliminations, and every older vote as
voter→target with its count).

Speeches are data: every text shown passes through ``speech.clean_speech`` (one line, no control or
bidi characters, no quote delimiters, capped).
"""

from __future__ import annotations

from collections import Counter
from typing import Any
from weakref import WeakKeyDictionary

from toolkit.werewolf.engine.discussions import bidding
from toolkit.werewolf.engine import claims as claims_mod
from toolkit.werewolf.engine.rules import PUBLIC, Ask, Event, Game, side_of
from toolkit.werewolf.engine.speech import clean_speech

FULL_DAYS = 7  # days listed vote by vote; older days are condensed (see the module docstring)
MAX_MESSAGE_CHARS = 400  # a speech longer than this is cut (with " […]") in the recent speeches
SPEECH_BUDGET = 2400  # characters of recent speech text per prompt; earlier speeches are counted, not shown


def observe(game: Game, seat: str, ask: Ask, recent: int = 12) -> dict[str, Any]:
    """The observation for ``seat`` answering ``ask``. At most ``recent`` speeches are quoted, and at most
    one round of them (as many as there are living players). Its public part (the record, the speeches, the
    claims) is the same objects for every seat asked at the same moment of the game (``public_view``): read it,
    never change it."""
    role = game.roles[seat]
    visible = [e for e in game.events if e.visible_to(seat, role)]
    view = public_view(game, min(recent, len(game.alive)))
    obs: dict[str, Any] = {
        "game": "werewolf", "seat": seat, "role": role, "side": side_of(role), "day": game.day,
        "phase": game.phase, "action": ask.action, "choices": list(ask.choices), "can_pass": ask.can_pass,
        "alive": list(game.alive), "dead": [s for s in game.seats if s not in game.alive],
        "seats": list(game.seats), "roles_in_game": dict(game.preset.roles),
        "record": view["record"], "speeches": view["speeches"], "omitted": view["omitted"], "claims": view["claims"],
    }
    obs.update(game.role(role).observe(game, seat, ask))  # what the role knows: checks, potions, teammates
    if ask.action == "bid":  # how far the day's bidding is, and (urgency ties) who the last speech named
        said = [e for e in view["said"] if e.phase == "speech"]
        obs["bidding"] = {"done": game.talk.get("done", 0), "scale": list(bidding.URGENCY),
                          "named": bidding.mentioned(said[-1].text, game.seats) if said else []}
    obs["private"] = private_record(game, seat, visible)
    return obs


# The public view of each game in play, with the moment it was made: every seat asked at that moment gets it.
_VIEWS: WeakKeyDictionary[Game, tuple[tuple[Any, ...], dict[str, Any]]] = WeakKeyDictionary()


def public_view(game: Game, limit: int) -> dict[str, Any]:
    """What every seat sees alike at this moment of the game: the record, the recent speeches (at most
    ``limit``) and the public claims. Made once per moment (the game's events are only ever appended to, so
    their number, with the day, the phase and the living, marks one) and shared by the seats asked then: the
    seats of a night or a vote do not each rebuild it. Read only."""
    moment = (len(game.events), game.day, game.phase, len(game.alive), limit)
    held = _VIEWS.get(game)
    if held is not None and held[0] == moment:
        return held[1]
    public = [e for e in game.events if e.visibility == PUBLIC]
    speeches = [e for e in public if e.kind == "speech"]
    claims = [c for e in speeches for c in claims_mod.extract(e.actor, e.text)]
    view = {"record": record(game, public), **recent_speeches(game, speeches, limit),
            "claims": [list(c) for c in dict.fromkeys(claims)], "said": speeches}
    _VIEWS[game] = (moment, view)
    return view


# ---------------------------------------------------------------------------------------------- record
def record(game: Game, public: list[Event]) -> dict[str, Any]:
    """Every public fact so far, as data for ``prompts/werewolf/_record.j2``."""
    days: dict[int, dict[str, Any]] = {}

    def day(n: int) -> dict[str, Any]:
        if n not in days:
            days[n] = {"day": n, "dawn": False, "night_deaths": [], "rounds": [], "outcome": None,
                       "eliminated": None, "last_words": None, "order": [], "acts": []}
        return days[n]

    for e in public:
        d = day(e.day)
        if e.kind == "announcement" and e.phase == "dawn":
            d["dawn"] = True
        elif e.kind == "death":
            d["night_deaths"].append(game.shown_name(e.target, "night"))
        elif e.about == "speaking_order":  # (a bidding discussion has none: the bids decide)
            d["order"] = list(e.seats)
        elif e.about == "bids":
            d.setdefault("bids", []).append(e.text)
        elif e.about == "revote":
            d["rounds"][-1]["outcome"] = "revote"
            d["rounds"].append({"revote": True, "candidates": list(e.seats), "votes": [], "outcome": None})
        elif e.kind == "vote":
            if not d["rounds"] or d["rounds"][-1]["outcome"] is not None:
                d["rounds"].append({"revote": False, "candidates": [], "votes": [], "outcome": None})
            d["rounds"][-1]["votes"].append([e.actor, e.target])
        elif e.about in ("tie", "abstained"):
            d["rounds"][-1]["outcome"] = e.about
            d["outcome"] = "tie"
        elif e.kind == "elimination":
            d["rounds"][-1]["outcome"] = game.shown_name(e.target, "exile")
            d["outcome"] = "eliminated"
            d["eliminated"] = game.shown_name(e.target, "exile")
        elif e.kind == "speech" and e.phase == "last_words":
            d["last_words"] = [e.actor, clean_speech(e.text)]
        elif e.kind not in ("announcement", "speech"):  # a role's public act (a Hunter's shot), as its text says:
            d["acts"].append([e.text, "vote" if d["rounds"] else "dawn"])  # at dawn, or after the day's votes
    for d in days.values():
        for r in d["rounds"]:
            r["by_target"] = _by_target([v for v in r["votes"] if v[1] is not None])
            abstained = [voter for voter, target in r["votes"] if target is None]
            if abstained:  # (the key only where someone abstained: an observation is otherwise as before)
                r["abstained"] = abstained
    first_full = max(1, game.day - FULL_DAYS + 1)
    full = [days[n] for n in sorted(days) if n >= first_full]
    old = [days[n] for n in sorted(days) if n < first_full]
    return {"days": full, "condensed": _condense(old) if old else None, "claims": public_claims(public)}


def _condense(old: list[dict[str, Any]]) -> dict[str, Any]:
    """Older days in a size that stops growing: no fact dropped, only the day of each older vote."""
    votes: Counter[tuple[str, str]] = Counter()
    rounds = revotes = 0
    for d in old:
        for r in d["rounds"]:
            rounds += 1
            revotes += r["revote"]
            votes.update((v, t or "abstain") for v, t in r["votes"])
    return {
        "first": old[0]["day"], "last": old[-1]["day"],
        "deaths": [[d["day"], s] for d in old for s in d["night_deaths"]],
        "eliminated": [[d["day"], d["eliminated"]] for d in old if d["eliminated"]],
        "quiet_nights": _ranges([d["day"] for d in old if d["dawn"] and not d["night_deaths"]]),
        "tie_days": _ranges([d["day"] for d in old if d["outcome"] == "tie"]),
        "last_words": [[d["day"], *d["last_words"]] for d in old if d["last_words"]],
        "acts": [[d["day"], text] for d in old for text, _ in d["acts"]],
        "rounds": rounds, "revotes": revotes,
        "votes": [[v, t, n] for (v, t), n in sorted(votes.items(), key=lambda x: (_seat_no(x[0][0]),
                                                                                   _seat_no(x[0][1])))],
    }


def _by_target(votes: list[list[str]]) -> list[list[Any]]:
    """[[voter, target], …] → [[target, [voters…]], …], most voted first (then seat order)."""
    groups: dict[str, list[str]] = {}
    for voter, target in votes:
        groups.setdefault(target, []).append(voter)
    return [[t, v] for t, v in sorted(groups.items(), key=lambda x: (-len(x[1]), _seat_no(x[0])))]


def _seat_no(seat: str) -> int:
    digits = "".join(ch for ch in seat if ch.isdigit())
    return int(digits) if digits else 0


def _ranges(days: list[int]) -> str:
    """[1, 2, 3, 5] → "1–3, 5"."""
    out: list[str] = []
    for n in days:
        if out and out[-1][1] == n - 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in out)


def public_claims(public: list[Event]) -> dict[str, list[list[Any]]]:
    """Role claims (grouped by role, then by the day first claimed) and claimed findings (who called whom a
    werewolf or good, first day said), deduped."""
    roles: dict[tuple[str, str], int] = {}
    results: dict[tuple[str, str, str], int] = {}
    for e in public:
        if e.kind != "speech":
            continue
        for speaker, kind, value in claims_mod.extract(e.actor, e.text):
            if kind == "role":
                roles.setdefault((speaker, value), e.day)
            elif kind in ("accuse", "clear"):
                results.setdefault((speaker, value, "werewolf" if kind == "accuse" else "good"), e.day)
    by_role: dict[str, dict[int, list[str]]] = {}
    for (seat, role), day in roles.items():
        by_role.setdefault(role, {}).setdefault(day, []).append(seat)
    return {"roles": [[role, [[d, seats] for d, seats in sorted(days.items())]] for role, days in by_role.items()],
            "results": [[s, t, r, d] for (s, t, r), d in results.items()]}


# ---------------------------------------------------------------------------------------------- speeches
def recent_speeches(game: Game, speeches: list[Event], limit: int = 12) -> dict[str, Any]:
    """Day speeches of yesterday and today, newest kept within a character budget; the rest counted.

    Last words are not here: they are part of the record. Returns ``speeches`` (shown, oldest first)
    and ``omitted`` (notes: how many speeches of which days are not shown).
    """
    day_speeches = [e for e in speeches if e.phase == "speech"]
    window = [e for e in day_speeches if e.day >= game.day - 1]
    shown: list[Event] = []
    used = 0
    for e in reversed(window):
        text = clean_speech(e.text, MAX_MESSAGE_CHARS)
        if len(shown) >= max(limit, 0) or used + len(text) > SPEECH_BUDGET:
            break
        shown.append(e)
        used += len(text)
    shown.reverse()
    shown_seqs = {e.seq for e in shown}
    hidden = Counter(e.day for e in day_speeches if e.seq not in shown_seqs)
    older = [d for d in sorted(hidden) if d < game.day - 1]
    notes = []
    if older:
        n = sum(hidden[d] for d in older)
        span = f"day {older[0]}" if len(older) == 1 else f"days {_ranges(older)}"
        notes.append(f"{n} speech{'es' if n != 1 else ''} of {span} omitted")
    for d in sorted(hidden):
        if d >= game.day - 1:
            notes.append(f"{hidden[d]} earlier speech{'es' if hidden[d] != 1 else ''} of day {d} omitted")
    return {"speeches": [{"day": e.day, "actor": e.actor, "text": clean_speech(e.text, MAX_MESSAGE_CHARS)}
                         for e in shown], "omitted": notes}


# ---------------------------------------------------------------------------------------------- private
def private_record(game: Game, seat: str, visible: list[Event]) -> list[str]:
    """This seat's own night knowledge as short lines (seer checks, potions and victims are separate)."""
    return game.role(game.roles[seat]).private_lines(game, seat, visible)
