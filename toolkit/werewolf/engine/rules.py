"""The rules of Werewolf as a deterministic state machine: no I/O, no LLM.

``Game.pending()`` lists the decisions the rules wait for now (those listed together may be asked
concurrently); ``Game.apply()`` takes one decision, checks it is legal, and advances through every
phase that needs no decision (dawn, vote counting, win checks) until decisions are needed again or the
game is over. Given a seed and the same decisions, the events are the same every time.

Phases: ``night`` → ``day_speech`` → ``day_vote`` (→ ``day_revote``) (→ ``last_words``) → ``night`` …
Night N leads into day N. A death that calls for a decision (a Hunter's shot: ``Role.on_death``) holds the
game in phase ``reaction`` until it is taken, at dawn or after an elimination; the win is checked after it.
What each role does is its module's (``toolkit.werewolf.engine.roles``): this module has no role's name but
the Werewolf's victim, which every game has. How the day's talk goes is the preset's discussion protocol's
(``toolkit.werewolf.engine.discussions``), how the day votes and what a tie does are the preset's day vote and
tie rule (``toolkit.werewolf.engine.votes``): this module names no protocol and no vote option.

The rules' own random draws (a tie broken at random, a random first speaker or voter) come from the seed, or
from ``draws`` ({"wolf_tie:2": "Player3", ...}: kind and day → the seat drawn), so that a game played elsewhere
(the Kaggle harness draws from Python's global ``random``) replays here exactly. Kinds: ``wolf_tie``,
``vote_tie``, ``speech_start``, ``vote_start``, ``wolf_start``.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

from toolkit.werewolf.engine import discussions, votes
from toolkit.werewolf.engine import roles as role_registry
from toolkit.werewolf.engine.preset import Preset
from toolkit.werewolf.engine.roles import PUBLIC, WOLVES, Ask, Role
from toolkit.werewolf.engine.roles.base import MODERATOR, IllegalMove
from toolkit.werewolf.engine.speech import clean_speech

__all__ = ["MODERATOR", "PUBLIC", "WOLVES", "Ask", "Event", "Game", "IllegalMove", "side_of"]


@dataclass(frozen=True)
class Event:
    seq: int
    day: int
    phase: str
    kind: str
    actor: str | None
    target: str | None
    text: str
    visibility: str
    fallback: bool = False
    # What an announcement announces, for the seat's view (never read back from the text): "speaking_order",
    # "bids", "revote", "tie" or "abstained"; ``seats`` the speaking order or the revote's candidates.
    # Not columns of the events table (the text says the same to a reader of the rows).
    about: str | None = None
    seats: tuple[str, ...] = ()

    def visible_to(self, seat: str, role: str) -> bool:
        return (self.visibility == PUBLIC or self.visibility == seat
                or (self.visibility == WOLVES and side_of(role) == "werewolves"))


def side_of(role: str) -> str:
    return role_registry.side_of(role)


class Game:
    """The game: seats, phases, votes, deaths and the win. What a role does (its night decision, what it learns,
    what its death sets off) is asked of the role (``toolkit.werewolf.engine.roles``); a role's state is
    ``state_of(name)`` for the game and ``tonight(name)`` for the night."""

    def __init__(self, preset: Preset, seed: int, roles: dict[str, str] | None = None,
                 draws: dict[str, str] | None = None):
        self.preset = preset
        self.seed = seed
        self.draws = dict(draws or {})  # given draws (a replayed game's); others come from the seed
        self.drawn: dict[str, str] = {}  # every draw made, given or seeded
        self.seats = preset.seats
        self.roles = self._assign(roles)
        self._in_play = sorted((role_registry.get(r) for r, n in preset.roles.items() if n),
                               key=lambda r: (r.night_order is None, r.night_order or 0))
        self.alive = list(self.seats)
        self.day = 1
        self.phase = "night"
        self.events: list[Event] = []
        self._state = {r.name: r.new_state() for r in self._in_play}
        self.night: dict[str, Any] = self._new_night()
        self.day_vote, self.tie_rule = votes.get(preset.day_vote), votes.get_tie(preset.vote_tie)
        self.balloting: dict[str, Any] = {}  # the day vote's own state across days (a rotating first voter, ...)
        self.vote_queue: list[str] = []  # who votes next, in order (a vote that has an order)
        self.discussion = discussions.get(preset.discussion)
        self.talk: dict[str, Any] = {}  # the discussion's own state (its bids, who opened the last day, ...)
        self.speech_queue: list[str] = []  # who speaks next, in order (the discussion's, or last words)
        self.votes: dict[str, str] = {}
        self.vote_candidates: tuple[str, ...] = ()
        self.deaths: dict[str, tuple[int, str]] = {}  # seat → (day, cause)
        self.reactions: list[Ask] = []  # decisions a death calls for (a Hunter's shot), asked before all else
        self._resume: tuple[str, str | None] | None = None  # where the game goes on once they are taken
        self.vote_fallbacks: set[str] = set()  # the voters whose ballot was a fallback answer
        self._kinds = role_registry.event_kinds()
        self.winner: str | None = None
        self.win_reason: str | None = None
        self._emit("announcement", None, None, f"Night 1 falls. Seats: {', '.join(self.seats)}.", PUBLIC)

    # ---------------------------------------------------------------- set-up and queries
    def _assign(self, fixed: dict[str, str] | None) -> dict[str, str]:
        if fixed:
            if sorted(fixed) != sorted(self.seats) or Counter(fixed.values()) != Counter(self.preset.role_list()):
                raise ValueError(f"roles {fixed} do not match preset {self.preset.name}: "
                                 f"{dict(self.preset.roles)} over {self.seats}")
            return {seat: fixed[seat] for seat in self.seats}
        roles = self.preset.role_list()
        random.Random(self.seed).shuffle(roles)
        return dict(zip(self.seats, roles))

    def _new_night(self) -> dict[str, Any]:
        return {r.name: r.new_night() for r in self._in_play}

    def roles_in_play(self) -> list[Role]:
        """The preset's roles, in night order (roles never asked at night last)."""
        return list(self._in_play)

    def role(self, name: str) -> Role:
        return role_registry.get(name)

    def state_of(self, role: str) -> Any:
        return self._state[role]

    def tonight(self, role: str) -> Any:
        return self.night[role]

    @staticmethod
    def side_of(role: str) -> str:
        return side_of(role)

    @property
    def over(self) -> bool:
        return self.winner is not None

    def living(self, role: str | None = None) -> list[str]:
        return [s for s in self.alive if role is None or self.roles[s] == role]

    def seat_of(self, role: str) -> str | None:
        found = [s for s in self.seats if self.roles[s] == role]
        return found[0] if found else None

    def victim(self) -> str | None:
        """The wolves' target tonight (``roles.werewolf``)."""
        return self.role("Werewolf").victim(self)

    def draw(self, kind: str, options: list[str], salt: str) -> str:
        """One of the rules' random draws: the given one for this kind and day, else seeded by ``salt``."""
        key = f"{kind}:{self.day}"
        if key in self.draws:
            choice = self.draws[key]
            if choice not in options:
                raise IllegalMove(f"draw {key}: {choice} is not one of {options}")
        else:
            choice = random.Random(salt).choice(options)
        self.drawn[key] = choice
        return choice

    def shown_name(self, seat: str, death: str) -> str:
        """A dead seat as its announcement names it: ``death`` is night (night_reveal) or exile (exile_reveal)."""
        level = self.preset.night_reveal if death == "night" else self.preset.exile_reveal
        if level == "role":
            return f"{seat} ({self.roles[seat]})"
        if level == "team":
            return f"{seat} ({side_of(self.roles[seat])})"
        return seat

    # ---------------------------------------------------------------- what the rules wait for
    def pending(self) -> list[Ask]:
        if self.over:
            return []
        if self.reactions:
            # its choices among the living now: a death later in the same dawn (a poisoned seat) is out too
            first = self.reactions[0]
            return [Ask(first.seat, first.action, tuple(c for c in first.choices if c in self.alive), first.can_pass)]
        if self.phase == "night":
            return [a for r in self._in_play for a in r.night_asks(self)]
        if self.phase == "day_speech":
            return self.discussion.asks(self)
        if self.phase == "last_words":
            return [Ask(self.speech_queue[0], "speak")] if self.speech_queue else []
        if self.phase in ("day_vote", "day_revote"):
            voters = self.day_vote.voters(self)
            mine = self.preset.self_vote
            return [Ask(s, "vote", tuple(c for c in self.vote_candidates if mine or c != s), self.preset.vote_abstain)
                    for s in voters if s not in self.votes]
        return []

    # ---------------------------------------------------------------- taking a decision
    def apply(self, seat: str, action: str, target: str | None = None, text: str = "",
              fallback: bool = False, bid: int | None = None) -> None:
        ask = next((a for a in self.pending() if a.seat == seat and a.action == action), None)
        if ask is None:
            raise IllegalMove(f"{seat} may not {action} now (phase {self.phase}, day {self.day})")
        if action == "speak" and self.phase == "day_speech":
            self.discussion.speak(self, seat, text, fallback)
        elif action == "speak":
            self.speech_queue.pop(0)
            self._emit("speech", seat, None, clean_speech(text), PUBLIC, fallback, phase="last_words")
        elif action in self.discussion.decisions and self.phase == "day_speech":
            self.discussion.decide(self, seat, action, bid, fallback)
        elif target is None and not ask.can_pass:
            raise IllegalMove(f"{seat} must choose a target for {action}: one of {list(ask.choices)}")
        elif target is not None and target not in ask.choices:
            raise IllegalMove(f"{seat} cannot {action} {target}: legal targets are {list(ask.choices)}")
        elif action == "vote":
            self._vote(seat, target, fallback)
        else:
            reaction = bool(self.reactions)
            if reaction:
                self.reactions.pop(0)
            self.role(self.roles[seat]).act(self, seat, action, target, fallback)
            if reaction and not self.reactions:
                self._go_on()
        self._advance()

    def _vote(self, seat: str, target: str | None, fallback: bool) -> None:
        self.votes[seat] = target
        if fallback:
            self.vote_fallbacks.add(seat)
        self.day_vote.cast(self, seat, target, fallback)

    # ---------------------------------------------------------------- phases without decisions
    def _advance(self) -> None:
        while not self.over and not self.pending():
            if self.phase == "night":
                self._dawn()
            elif self.phase in ("day_vote", "day_revote"):
                self._count_votes()
            elif self.phase == "last_words":
                self._end_day()
            elif self.phase == "day_speech":
                self._open_vote(tuple(self.alive), "day_vote")

    def _dawn(self) -> None:
        dead: dict[str, str] = {}  # seat → cause; a later role's kill names the cause (poison over the attack)
        for role in self._in_play:
            for kill in role.night_kills(self):
                if not (kill.shieldable and self._shielded(kill.seat)):
                    dead[kill.seat] = kill.cause
        dead_in_order = sorted(dead, key=self.seats.index)
        names = " and ".join(self.shown_name(s, "night") for s in dead_in_order)
        self._emit("announcement", None, None, f"Day {self.day} dawns. "
                   + (f"{names} died last night." if dead else "Nobody died last night."), PUBLIC, phase="dawn")
        for seat in dead_in_order:
            self._kill(seat, dead[seat])
        self.phase = "day_speech"
        self.night = self._new_night()
        if self.reactions:  # a death called for a decision (a Hunter's shot): taken before the day goes on
            self._wait("dawn")
            return
        if self._check_win():
            return
        self._open_speeches()

    def _shielded(self, seat: str) -> bool:
        """Whether tonight's protections or saves keep ``seat`` alive: one is enough; a protection and a save
        both on it go by ``protect_and_save``."""
        kinds = {kind for role in self._in_play for target, kind in role.shields(self) if target == seat}
        if {"protect", "save"} <= kinds:  # both on the same night: the preset decides (many tournaments kill)
            return self.preset.protect_and_save == "survive"
        return bool(kinds)

    def _kill(self, seat: str, cause: str) -> None:
        self._remove(seat, cause)
        # Public: who died. How is kept in ``deaths`` (the players table), never in a prompt.
        self._emit("death", None, seat, f"{self.shown_name(seat, 'night')} died.", PUBLIC, phase="dawn")
        self._react(seat, cause)

    def _remove(self, seat: str, cause: str) -> None:
        self.alive.remove(seat)
        self.deaths[seat] = (self.day, cause)

    def _react(self, seat: str, cause: str) -> None:
        self.reactions += self.role(self.roles[seat]).on_death(self, seat, cause)

    def eliminate(self, seat: str, cause: str) -> None:
        """A role's kill outside the night's (a Hunter's shot): ``seat`` dies now; its own death's decisions
        are asked next. The role emits the event that says so."""
        self._remove(seat, cause)
        self._react(seat, cause)

    # ---------------------------------------------------------------- error policies (the runner decides when)
    def forfeit(self, failed: dict[str, str]) -> None:
        """Kaggle's forfeit: the seats of ``failed`` ({seat: reason}) failed a decision in the same step, all
        judged alike: their side loses now; when both sides failed, nobody wins (a ``draw``)."""
        if self.over or not failed:
            return
        sides = {}
        for seat, reason in failed.items():
            sides.setdefault(side_of(self.roles[seat]), []).append(seat)
            self._emit("forfeit", None, seat, f"{seat} forfeits: it gave no usable answer ({reason}).", PUBLIC)
        named = ", ".join(f"{seat} ({side})" for side, seats in sides.items() for seat in seats)
        if len(sides) > 1:
            self._finish("draw", f"forfeit: {named} gave no usable answer (both sides: no winner)")
            return
        side = next(iter(sides))
        self._finish("village" if side == "werewolves" else "werewolves", f"forfeit: {named} gave no usable answer")

    def disqualify(self, seats: dict[str, str]) -> None:
        """TextArena's elimination: the seats of ``seats`` ({seat: reason}) leave the game together for failed
        decisions (a death with no reaction: a Hunter so removed does not shoot), then the win is checked once.
        Only at nightfall, before any of the night's decisions, where no queue or tally holds a seat."""
        seats = {seat: why for seat, why in seats.items() if seat in self.alive}
        if self.over or not seats:
            return
        if self.phase != "night":
            raise IllegalMove(f"a seat is disqualified at nightfall, not in phase {self.phase}")
        sides = {side_of(self.roles[seat]) for seat in seats}
        for seat, reason in seats.items():
            self._remove(seat, "disqualified")
            self._emit("disqualification", None, seat, f"{seat} is removed from the game ({reason}).", PUBLIC)
        if len(sides) > 1 and self._winner():  # both sides failed at once and that decides it: judged alike
            self._finish("draw", f"disqualified: {', '.join(seats)} (both sides at once: no winner)")
            return
        self._check_win()

    def _wait(self, then: str, exiled: str | None = None) -> None:
        """Hold the game while ``reactions`` are asked; ``_go_on`` resumes it (``then``: dawn or exile)."""
        self._resume, self.phase = (then, exiled), "reaction"

    def _go_on(self) -> None:
        """The reactions are taken: the win is checked, then the game goes on where it was held."""
        then, exiled = self._resume or ("dawn", None)
        self._resume = None
        self.phase = "day_speech" if then == "dawn" else "day_vote"
        if self._check_win():
            return
        if then == "dawn":
            self._open_speeches()
        else:
            self._after_exile(exiled)

    def around(self, start: int) -> list[str]:
        """The living seats in seat order, from seat index ``start`` round the table."""
        return [s for s in self.seats[start:] + self.seats[:start] if s in self.alive]

    def _open_speeches(self) -> None:
        self.speech_queue = []
        self.discussion.open(self)

    def _open_vote(self, candidates: tuple[str, ...], phase: str) -> None:
        self.phase = phase
        self.votes = {}
        self.vote_fallbacks = set()
        self.vote_candidates = candidates
        self.day_vote.open(self, phase)
        if phase == "day_revote":
            self._emit("announcement", None, None,
                       f"The vote is tied between {', '.join(candidates)}. Vote again among them.", PUBLIC,
                       about="revote", seats=tuple(candidates))

    def _count_votes(self) -> None:
        self.day_vote.reveal(self)
        counts = Counter(t for t in self.votes.values() if t is not None)  # an abstention is not counted
        top = max(counts.values(), default=0)
        # no vote counted: every candidate is tied (a tie rule may draw among them, as Kaggle does)
        leaders = tuple(sorted((s for s, c in counts.items() if c == top), key=self.seats.index)) if counts \
            else self.vote_candidates
        tally = ", ".join(f"{s}: {counts[s]}" for s in sorted(counts, key=self.seats.index)) or "none counted"
        out = leaders[0] if len(leaders) == 1 else self.tie_rule.settle(self, leaders, bool(counts))
        if out is votes.REVOTE:
            return self._open_vote(leaders, "day_revote")
        if out is None:
            self._emit("announcement", None, None, f"Votes ({tally}) are tied: nobody is eliminated." if counts
                       else "Every voter abstained: nobody is eliminated.", PUBLIC,
                       about="tie" if counts else "abstained")
            return self._end_day()
        self._remove(out, "vote")
        self._emit("elimination", None, out, f"Votes: {tally}. {self.shown_name(out, 'exile')} is eliminated.", PUBLIC)
        self._react(out, "vote")
        if self.reactions:
            return self._wait("exile", out)
        if self._check_win():
            return
        self._after_exile(out)

    def _after_exile(self, out: str) -> None:
        if self.preset.last_words:
            self.phase, self.speech_queue = "last_words", [out]
            return
        self._end_day()

    def _end_day(self) -> None:
        if self.day >= self.preset.max_days:
            return self._finish("draw", f"max_days={self.preset.max_days} reached")
        self.day += 1
        self.phase = "night"
        self.votes = {}
        self._emit("announcement", None, None, f"Night {self.day} falls.", PUBLIC)

    def _winner(self) -> tuple[str, str] | None:
        """The side that has won now and why, or None (nothing changes)."""
        wolves = [s for s in self.alive if side_of(self.roles[s]) == "werewolves"]
        rest = [s for s in self.alive if s not in wolves]
        if not wolves:
            return "village", "all werewolves are dead"
        if self.preset.win_rule == "parity":
            if len(wolves) >= len(rest):
                return "werewolves", "werewolves are as many as the rest"
        else:
            village = [r for r in self._in_play if r.side == "village"]
            plain, special = [r.name for r in village if not r.special], [r.name for r in village if r.special]
            if plain and not any(self.roles[s] in plain for s in rest):
                return "werewolves", "all villagers are dead"
            if special and not any(self.roles[s] in special for s in rest):
                return "werewolves", "all special roles are dead"
        return None

    def _check_win(self) -> bool:
        won = self._winner()
        return self._finish(*won) if won else False

    def _finish(self, winner: str, reason: str) -> bool:
        self.winner, self.win_reason = winner, reason
        self.phase = "over"
        self._emit("announcement", None, None, f"Game over: {winner} win ({reason}).", PUBLIC)
        return True

    def emit(self, kind: str, actor: str | None, target: str | None, text: str, visibility: str,
             fallback: bool = False, phase: str | None = None, about: str | None = None,
             seats: tuple[str, ...] = ()) -> None:
        """One events row (a role's or the discussion's decisions emit theirs through it), of a kind the engine
        or a role declares."""
        if kind not in self._kinds:
            raise ValueError(f"no role declares the event kind {kind!r}: add it to the role's events "
                             "(toolkit.werewolf.engine.events.EventKind)")
        self._emit(kind, actor, target, text, visibility, fallback, phase, about, seats)

    def _emit(self, kind: str, actor: str | None, target: str | None, text: str, visibility: str,
              fallback: bool = False, phase: str | None = None, about: str | None = None,
              seats: tuple[str, ...] = ()) -> None:
        self.events.append(Event(len(self.events), self.day, phase or self.phase, kind, actor, target, text,
                                 visibility, fallback, about, tuple(seats)))
