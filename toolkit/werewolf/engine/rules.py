"""The rules of Werewolf as a deterministic state machine: no I/O, no LLM.

``Game.pending()`` lists the decisions the rules wait for now (those listed together may be asked
concurrently); ``Game.apply()`` takes one decision, checks it is legal, and advances through every
phase that needs no decision (dawn, vote counting, win checks) until decisions are needed again or the
game is over. Given a seed and the same decisions, the events are the same every time.

Phases: ``night`` → ``day_speech`` → ``day_vote`` (→ ``day_revote``) (→ ``last_words``) → ``night`` …
Night N leads into day N.

The rules' own random draws (a tie broken at random, a random first speaker or voter) come from the seed, or
from ``draws`` ({"wolf_tie:2": "Player3", ...}: kind and day → the seat drawn), so that a game played elsewhere
(the Kaggle harness draws from Python's global ``random``) replays here exactly. Kinds: ``wolf_tie``,
``vote_tie``, ``speech_start``, ``vote_start``, ``wolf_start``.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from toolkit.werewolf.engine.preset import SPECIAL_ROLES, Preset
from toolkit.werewolf.engine.speech import clean_speech

PUBLIC, WOLVES = "public", "werewolves"


class IllegalMove(ValueError):
    """A decision the rules do not allow now. The game state is unchanged."""


@dataclass(frozen=True)
class Ask:
    seat: str
    action: str  # hunt, protect, verify, save, poison, speak, vote
    choices: tuple[str, ...] = ()
    can_pass: bool = False


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

    def visible_to(self, seat: str, role: str) -> bool:
        return (self.visibility == PUBLIC or self.visibility == seat
                or (self.visibility == WOLVES and role == "Werewolf"))


def side_of(role: str) -> str:
    return "werewolves" if role == "Werewolf" else "village"


@dataclass
class Night:
    protect: str | None = None
    protect_done: bool = False
    proposals: list[tuple[str, str]] = field(default_factory=list)
    verify_done: bool = False
    save_done: bool = False
    saved: bool = False
    poison_done: bool = False
    poisoned: str | None = None
    heal: str | None = None  # the Doctor's protection (Kaggle's heal)
    heal_done: bool = False
    held_hunts: dict[str, tuple[str | None, bool]] = field(default_factory=dict)  # wolf_vote: simultaneous
    wolf_order: list[str] | None = None  # tonight's order of a sequential wolf vote
    victim_drawn: bool = False  # the wolves' victim is settled (a random tie is drawn once)
    victim: str | None = None


class Game:
    def __init__(self, preset: Preset, seed: int, roles: dict[str, str] | None = None,
                 draws: dict[str, str] | None = None):
        self.preset = preset
        self.seed = seed
        self.draws = dict(draws or {})  # given draws (a replayed game's); others come from the seed
        self.drawn: dict[str, str] = {}  # every draw made, given or seeded
        self.seats = preset.seats
        self.roles = self._assign(roles)
        self.alive = list(self.seats)
        self.day = 1
        self.phase = "night"
        self.events: list[Event] = []
        self.antidote = True
        self.poison = True
        self.last_protected: str | None = None
        self.last_healed: str | None = None
        self.vote_cursor = 0  # the first voter of the next sequential vote (rotate), as a seat index
        self.vote_queue: list[str] = []
        self.vote_queue_first: str | None = None
        self.wolf_cursor = 0  # wolf_order: rotate
        self.round_size = 0  # parallel discussion: the seats of one round, and the speeches held until it ends
        self.held: dict[str, tuple[str, bool]] = {}
        self.checks: dict[str, str] = {}  # seer's results
        self.night = Night()
        self.speech_queue: list[str] = []
        self.first_speaker: str | None = None  # who opened the last day's speeches
        self.votes: dict[str, str] = {}
        self.vote_candidates: tuple[str, ...] = ()
        self.deaths: dict[str, tuple[int, str]] = {}  # seat → (day, cause)
        self._vote_fallbacks: set[str] = set()
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

    @property
    def over(self) -> bool:
        return self.winner is not None

    def living(self, role: str | None = None) -> list[str]:
        return [s for s in self.alive if role is None or self.roles[s] == role]

    def seat_of(self, role: str) -> str | None:
        found = [s for s in self.seats if self.roles[s] == role]
        return found[0] if found else None

    def victim(self) -> str | None:
        """The wolves' target tonight: the plurality of proposals; a tie goes by ``wolf_tie`` (the latest
        proposal among the tied, nobody, or a draw among the tied)."""
        if self.night.victim_drawn:
            return self.night.victim
        if not self.night.proposals:
            return None
        counts = Counter(t for _, t in self.night.proposals)
        top = max(counts.values())
        tied = [t for _, t in self.night.proposals if counts[t] == top]
        if len(set(tied)) == 1 or self.preset.wolf_tie == "last_proposal":
            return tied[-1]
        if self.preset.wolf_tie == "none":
            return None
        return self.draw("wolf_tie", sorted(set(tied), key=self.seats.index), f"{self.seed}:wolf_tie:{self.day}")

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

    def _wolf_order(self) -> list[str]:
        """The order of a sequential wolf vote tonight (``wolf_order``), settled once a night: ``fixed`` seat
        order; ``rotate`` from the first living wolf at or after the cursor (which then moves past it); ``random``
        from a seat drawn among all (Kaggle's pivot), the living wolves in seat order round the table from it."""
        if self.night.wolf_order is None:
            wolves = self.living("Werewolf")
            start = 0
            if self.preset.wolf_order == "rotate":
                start = next(i % len(self.seats) for i in range(self.wolf_cursor, self.wolf_cursor + len(self.seats))
                             if self.seats[i % len(self.seats)] in wolves)
                self.wolf_cursor = (start + 1) % len(self.seats)
            elif self.preset.wolf_order == "random":
                start = self.seats.index(self.draw("wolf_start", self.seats, f"{self.seed}:wolves:{self.day}"))
            self.night.wolf_order = [s for s in self.seats[start:] + self.seats[:start] if s in wolves]
        return self.night.wolf_order

    def _wolves_done(self) -> bool:
        return len(self.night.proposals) >= len(self.living("Werewolf"))

    # ---------------------------------------------------------------- what the rules wait for
    def pending(self) -> list[Ask]:
        if self.over:
            return []
        if self.phase == "night":
            return self._night_asks()
        if self.phase == "day_speech" and self.preset.discussion == "parallel":  # the whole round at once
            return [Ask(s, "speak") for s in self.speech_queue[:self.round_size] if s not in self.held]
        if self.phase in ("day_speech", "last_words"):
            return [Ask(self.speech_queue[0], "speak")] if self.speech_queue else []
        if self.phase in ("day_vote", "day_revote"):
            voters = self.vote_queue[:1] if self.preset.day_vote == "sequential" else self.alive
            return [Ask(s, "vote", tuple(c for c in self.vote_candidates if c != s))
                    for s in voters if s not in self.votes]
        return []

    def _night_asks(self) -> list[Ask]:
        asks: list[Ask] = []
        n = self.night
        guard, seer, witch, doctor = (self.living(r) for r in ("Guard", "Seer", "Witch", "Doctor"))
        if doctor and not n.heal_done:
            d = doctor[0]
            barred = {d} if not self.preset.doctor_self_save else set()
            if not self.preset.doctor_consecutive_saves and self.last_healed:
                barred.add(self.last_healed)
            asks.append(Ask(d, "protect", tuple(s for s in self.alive if s not in barred), can_pass=True))
        if guard and not n.protect_done:
            blocked = self.last_protected if self.preset.guard_no_repeat else None
            asks.append(Ask(guard[0], "protect", tuple(s for s in self.alive if s != blocked), can_pass=True))
        wolves = self.living("Werewolf")
        if not self._wolves_done():
            prey = tuple(s for s in self.alive if self.roles[s] != "Werewolf")
            if self.preset.wolf_vote == "simultaneous":  # every wolf at once, none seeing another's choice
                asks += [Ask(w, "hunt", prey) for w in wolves if w not in n.held_hunts]
            else:
                asks.append(Ask(self._wolf_order()[len(n.proposals)], "hunt", prey))
        if seer and not n.verify_done:
            asks.append(Ask(seer[0], "verify", tuple(s for s in self.alive if s != seer[0])))
        if witch and self._wolves_done():
            w = witch[0]
            victim = self.victim()
            can_save = (self.antidote and victim is not None
                        and not (self.preset.witch_no_self_save and victim == w))
            if not n.save_done and can_save:
                asks.append(Ask(w, "save", (victim,), can_pass=True))
            elif not n.poison_done and self.poison and not (n.saved and self.preset.witch_one_potion_per_night):
                asks.append(Ask(w, "poison", tuple(s for s in self.alive if s != w), can_pass=True))
        return asks

    # ---------------------------------------------------------------- taking a decision
    def apply(self, seat: str, action: str, target: str | None = None, text: str = "",
              fallback: bool = False) -> None:
        ask = next((a for a in self.pending() if a.seat == seat and a.action == action), None)
        if ask is None:
            raise IllegalMove(f"{seat} may not {action} now (phase {self.phase}, day {self.day})")
        if action == "speak":
            self._speak(seat, text, fallback)
        elif target is None and not ask.can_pass:
            raise IllegalMove(f"{seat} must choose a target for {action}: one of {list(ask.choices)}")
        elif target is not None and target not in ask.choices:
            raise IllegalMove(f"{seat} cannot {action} {target}: legal targets are {list(ask.choices)}")
        else:
            getattr(self, f"_{action}")(seat, target, fallback)
        self._advance()

    def _speak(self, seat: str, text: str, fallback: bool) -> None:
        if self.phase == "day_speech" and self.preset.discussion == "parallel":
            self.held[seat] = (text, fallback)
            if len(self.held) == self.round_size:  # the round is in: shown together, in seat order
                for s in self.speech_queue[:self.round_size]:
                    said, fell = self.held[s]
                    self._emit("speech", s, None, clean_speech(said), PUBLIC, fell, phase="speech")
                self.speech_queue, self.held = self.speech_queue[self.round_size:], {}
            return
        self.speech_queue.pop(0)
        kind = "speech" if self.phase == "day_speech" else "last_words"
        # Stored as data: one capped line with no control/bidi characters and no quote delimiters (the raw
        # answer stays in the calls table), so no later prompt or transcript can be forged through it.
        self._emit("speech", seat, None, clean_speech(text), PUBLIC, fallback, phase=kind)

    def _protect(self, seat: str, target: str | None, fallback: bool) -> None:
        if self.roles[seat] == "Doctor":
            self.night.heal, self.night.heal_done = target, True
            self.last_healed = target
            self._emit("heal", seat, target, f"You heal {target}." if target else "You heal nobody.",
                       seat, fallback)
            return
        self.night.protect, self.night.protect_done = target, True
        self.last_protected = target
        self._emit("protect", seat, target, f"You protect {target}." if target else "You protect nobody.",
                   seat, fallback)

    def _hunt(self, seat: str, target: str | None, fallback: bool) -> None:
        held = self.night.held_hunts
        if self.preset.wolf_vote == "simultaneous":  # the proposals are shown together, in seat order
            held[seat] = (target, fallback)
            if len(held) < len(self.living("Werewolf")):
                return
            cast = [(w, *held[w]) for w in sorted(held, key=self.seats.index)]
        else:
            cast = [(seat, target, fallback)]
        for wolf, prey, fell in cast:
            self.night.proposals.append((wolf, prey))
            self._emit("hunt_proposal", wolf, prey, f"{wolf} proposes to kill {prey}.", WOLVES, fell)
        if self._wolves_done():
            victim = self.victim()
            self.night.victim, self.night.victim_drawn = victim, True
            if victim is None:  # wolf_tie: none
                self._emit("announcement", None, None, "The werewolves' votes are tied: nobody is attacked tonight.",
                           WOLVES)
                return
            self._emit("kill", None, victim, f"The werewolves chose to kill {victim}.", WOLVES)
            witch = self.living("Witch")
            if witch and self.antidote:  # the witch is told the victim while she has the antidote
                self._emit("announcement", None, victim, f"Tonight the werewolves attacked {victim}.", witch[0])

    def _verify(self, seat: str, target: str | None, fallback: bool) -> None:
        self.night.verify_done = True
        result = "werewolf" if self.roles[target] == "Werewolf" else "good"
        self.checks[target] = result
        if self.preset.seer_learns == "role":
            result = f"{self.roles[target]} ({side_of(self.roles[target])})"
        self._emit("check", seat, target, f"{target} is {result}.", seat, fallback)

    def _save(self, seat: str, target: str | None, fallback: bool) -> None:
        self.night.save_done = True
        if target is not None:
            self.night.saved, self.antidote = True, False
            self._emit("save", seat, target, f"You use your antidote on {target}.", seat, fallback)

    def _poison(self, seat: str, target: str | None, fallback: bool) -> None:
        self.night.poison_done = True
        if target is not None:
            self.night.poisoned, self.poison = target, False
            self._emit("poison", seat, target, f"You poison {target}.", seat, fallback)

    def _vote(self, seat: str, target: str | None, fallback: bool) -> None:
        self.votes[seat] = target
        if fallback:
            self._vote_fallbacks.add(seat)
        if self.preset.day_vote == "sequential":  # each vote is public at once: the next voter sees it
            self.vote_queue.pop(0)
            self._emit("vote", seat, target, f"{seat} votes for {target}.", PUBLIC, fallback)

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
        n = self.night
        victim = self.victim()
        dead = set()
        protected, saved = n.protect == victim or (n.heal is not None and n.heal == victim), n.saved
        if protected and saved:  # both on the same night: the preset decides (many tournaments kill)
            survives = self.preset.protect_and_save == "survive"
        else:
            survives = protected or saved
        if victim is not None and not survives:
            dead.add(victim)
        if n.poisoned is not None:
            dead.add(n.poisoned)
        dead_in_order = sorted(dead, key=self.seats.index)
        names = " and ".join(self.shown_name(s, "night") for s in dead_in_order)
        self._emit("announcement", None, None, f"Day {self.day} dawns. "
                   + (f"{names} died last night." if dead else "Nobody died last night."), PUBLIC, phase="dawn")
        for seat in dead_in_order:
            self._kill(seat, "poison" if seat == n.poisoned else "werewolves")
        self.phase = "day_speech"
        self.night = Night()
        if self._check_win():
            return
        self._open_speeches()

    def _kill(self, seat: str, cause: str) -> None:
        self.alive.remove(seat)
        self.deaths[seat] = (self.day, cause)
        # Public: who died. How is kept in ``deaths`` (the players table), never in a prompt.
        self._emit("death", None, seat, f"{self.shown_name(seat, 'night')} died.", PUBLIC, phase="dawn")

    def _from(self, start: int) -> list[str]:
        """The living seats in seat order, from seat index ``start`` round the table."""
        return [s for s in self.seats[start:] + self.seats[:start] if s in self.alive]

    def _open_speeches(self) -> None:
        order = [s for s in self.seats if s in self.alive]
        if self.preset.discussion == "parallel":
            pass  # every seat at once: a round's speeches are listed in seat order
        elif self.preset.speech_order == "rotate" and self.first_speaker is not None:
            # each day opens one seat later than the day before (every living seat speaks, so starting after
            # the day's last speaker would wrap round to the same first seat every day)
            order = self._from(self.seats.index(self.first_speaker) + 1)
        elif self.preset.speech_order == "random":  # a seat drawn among all (as Kaggle's pivot): the first living
            first = self.draw("speech_start", self.seats, f"{self.seed}:speech:{self.day}")
            order = self._from(self.seats.index(first))
        self.first_speaker = order[0] if order else None
        self.speech_queue = order * self.preset.speech_rounds
        self.round_size, self.held = len(order), {}
        n = self.preset.speech_rounds
        if self.preset.discussion == "parallel":
            rounds = f" All speak at once, {n} round{'s' if n > 1 else ''}; a round's speeches are shown together."
        else:
            rounds = f" Each speaks {n} times, in turn." if n > 1 else ""
        self._emit("announcement", None, None,
                   f"Day {self.day}: the living players are {', '.join(self.alive)}.{rounds} Speaking order: "
                   f"{', '.join(order)}.", PUBLIC)

    def _open_vote(self, candidates: tuple[str, ...], phase: str) -> None:
        self.phase = phase
        self.votes = {}
        self._vote_fallbacks = set()
        self.vote_candidates = candidates
        if self.preset.day_vote == "sequential":
            self.vote_queue = self._vote_order() if phase == "day_vote" else self._vote_order(self.vote_queue_first)
            self.vote_queue_first = self.vote_queue[0] if self.vote_queue else None
        if phase == "day_revote":
            self._emit("announcement", None, None,
                       f"The vote is tied between {', '.join(candidates)}. Vote again among them.", PUBLIC)

    def _vote_order(self, first: str | None = None) -> list[str]:
        """The day's sequential voting order (``vote_order``); a revote keeps the day's first voter."""
        if first is not None:
            return self._from(self.seats.index(first))
        if self.preset.vote_order == "random":
            return self._from(self.seats.index(self.draw("vote_start", self.seats, f"{self.seed}:vote:{self.day}")))
        if self.preset.vote_order == "rotate":  # the first living seat from the cursor; the cursor moves past it
            order = self._from(self.vote_cursor)
            self.vote_cursor = (self.seats.index(order[0]) + 1) % len(self.seats)
            return order
        return self._from(0)

    def _count_votes(self) -> None:
        if self.preset.day_vote == "simultaneous":  # revealed together, once every vote is in
            for voter in sorted(self.votes, key=self.seats.index):
                target = self.votes[voter]
                self._emit("vote", voter, target, f"{voter} votes for {target}.", PUBLIC,
                           voter in self._vote_fallbacks)
        counts = Counter(self.votes.values())
        top = max(counts.values())
        leaders = tuple(sorted((s for s, c in counts.items() if c == top), key=self.seats.index))
        tally = ", ".join(f"{s}: {counts[s]}" for s in sorted(counts, key=self.seats.index))
        out = None
        if len(leaders) == 1:
            out = leaders[0]
        elif self.preset.vote_tie == "revote" and self.phase == "day_vote":
            return self._open_vote(leaders, "day_revote")
        elif self.preset.vote_tie == "random":
            out = self.draw("vote_tie", list(leaders), f"{self.seed}:tie:{self.day}")
        if out is None:
            self._emit("announcement", None, None, f"Votes ({tally}) are tied: nobody is eliminated.", PUBLIC)
            return self._end_day()
        self.alive.remove(out)
        self.deaths[out] = (self.day, "vote")
        self._emit("elimination", None, out, f"Votes: {tally}. {self.shown_name(out, 'exile')} is eliminated.", PUBLIC)
        if self._check_win():
            return
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

    def _check_win(self) -> bool:
        wolves = self.living("Werewolf")
        rest = [s for s in self.alive if self.roles[s] != "Werewolf"]
        if not wolves:
            return self._finish("village", "all werewolves are dead")
        if self.preset.win_rule == "parity":
            if len(wolves) >= len(rest):
                return self._finish("werewolves", "werewolves are as many as the rest")
        else:
            if not any(self.roles[s] == "Villager" for s in rest) and self.preset.roles.get("Villager"):
                return self._finish("werewolves", "all villagers are dead")
            if not any(self.roles[s] in SPECIAL_ROLES for s in rest) and any(
                    self.preset.roles.get(r) for r in SPECIAL_ROLES):
                return self._finish("werewolves", "all special roles are dead")
        return False

    def _finish(self, winner: str, reason: str) -> bool:
        self.winner, self.win_reason = winner, reason
        self.phase = "over"
        self._emit("announcement", None, None, f"Game over: {winner} win ({reason}).", PUBLIC)
        return True

    def _emit(self, kind: str, actor: str | None, target: str | None, text: str, visibility: str,
              fallback: bool = False, phase: str | None = None) -> None:
        self.events.append(Event(len(self.events), self.day, phase or self.phase, kind, actor, target, text,
                                 visibility, fallback))
