"""The rules of Werewolf as a deterministic state machine: no I/O, no LLM.

``Game.pending()`` lists the decisions the rules wait for now (those listed together may be asked
concurrently); ``Game.apply()`` takes one decision, checks it is legal, and advances through every
phase that needs no decision (dawn, vote counting, win checks) until decisions are needed again or the
game is over. Given a seed and the same decisions, the events are the same every time.

Phases: ``night`` → ``day_speech`` → ``day_vote`` (→ ``day_revote``) (→ ``last_words``) → ``night`` …
Night N leads into day N.
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


class Game:
    def __init__(self, preset: Preset, seed: int, roles: dict[str, str] | None = None):
        self.preset = preset
        self.seed = seed
        self.seats = preset.seats
        self.roles = self._assign(roles)
        self.alive = list(self.seats)
        self.day = 1
        self.phase = "night"
        self.events: list[Event] = []
        self.antidote = True
        self.poison = True
        self.last_protected: str | None = None
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
        """The wolves' target tonight: the plurality of proposals, ties to the latest proposal."""
        if not self.night.proposals:
            return None
        counts = Counter(t for _, t in self.night.proposals)
        top = max(counts.values())
        return [t for _, t in self.night.proposals if counts[t] == top][-1]

    def _wolves_done(self) -> bool:
        return len(self.night.proposals) >= len(self.living("Werewolf"))

    # ---------------------------------------------------------------- what the rules wait for
    def pending(self) -> list[Ask]:
        if self.over:
            return []
        if self.phase == "night":
            return self._night_asks()
        if self.phase in ("day_speech", "last_words"):
            return [Ask(self.speech_queue[0], "speak")] if self.speech_queue else []
        if self.phase in ("day_vote", "day_revote"):
            return [Ask(s, "vote", tuple(c for c in self.vote_candidates if c != s))
                    for s in self.alive if s not in self.votes]
        return []

    def _night_asks(self) -> list[Ask]:
        asks: list[Ask] = []
        n = self.night
        guard, seer, witch = (self.living(r) for r in ("Guard", "Seer", "Witch"))
        if guard and not n.protect_done:
            blocked = self.last_protected if self.preset.guard_no_repeat else None
            asks.append(Ask(guard[0], "protect", tuple(s for s in self.alive if s != blocked), can_pass=True))
        wolves = self.living("Werewolf")
        if not self._wolves_done():
            asks.append(Ask(wolves[len(n.proposals)], "hunt",
                            tuple(s for s in self.alive if self.roles[s] != "Werewolf")))
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
        self.speech_queue.pop(0)
        kind = "speech" if self.phase == "day_speech" else "last_words"
        # Stored as data: one capped line with no control/bidi characters and no quote delimiters (the raw
        # answer stays in the calls table), so no later prompt or transcript can be forged through it.
        self._emit("speech", seat, None, clean_speech(text), PUBLIC, fallback, phase=kind)

    def _protect(self, seat: str, target: str | None, fallback: bool) -> None:
        self.night.protect, self.night.protect_done = target, True
        self.last_protected = target
        self._emit("protect", seat, target, f"You protect {target}." if target else "You protect nobody.",
                   seat, fallback)

    def _hunt(self, seat: str, target: str | None, fallback: bool) -> None:
        self.night.proposals.append((seat, target))
        self._emit("hunt_proposal", seat, target, f"{seat} proposes to kill {target}.", WOLVES, fallback)
        if self._wolves_done():
            victim = self.victim()
            self._emit("kill", None, victim, f"The werewolves chose to kill {victim}.", WOLVES)
            witch = self.living("Witch")
            if witch and self.antidote:  # the witch is told the victim while she has the antidote
                self._emit("announcement", None, victim, f"Tonight the werewolves attacked {victim}.", witch[0])

    def _verify(self, seat: str, target: str | None, fallback: bool) -> None:
        self.night.verify_done = True
        result = "werewolf" if self.roles[target] == "Werewolf" else "good"
        self.checks[target] = result
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
        protected, saved = n.protect == victim, n.saved
        if protected and saved:  # both on the same night: the preset decides (many tournaments kill)
            survives = self.preset.protect_and_save == "survive"
        else:
            survives = protected or saved
        if victim is not None and not survives:
            dead.add(victim)
        if n.poisoned is not None:
            dead.add(n.poisoned)
        dead_in_order = sorted(dead, key=self.seats.index)
        names = " and ".join(self._announce_name(s) for s in dead_in_order)
        self._emit("announcement", None, None, f"Day {self.day} dawns. "
                   + (f"{names} died last night." if dead else "Nobody died last night."), PUBLIC, phase="dawn")
        for seat in dead_in_order:
            self._kill(seat, "poison" if seat == n.poisoned else "werewolves")
        self.phase = "day_speech"
        self.night = Night()
        if self._check_win():
            return
        self._open_speeches()

    def _announce_name(self, seat: str) -> str:
        return f"{seat} ({self.roles[seat]})" if self.preset.reveal_roles_on_death else seat

    def _kill(self, seat: str, cause: str) -> None:
        self.alive.remove(seat)
        self.deaths[seat] = (self.day, cause)
        # Public: who died. How is kept in ``deaths`` (the players table), never in a prompt.
        self._emit("death", None, seat, f"{self._announce_name(seat)} died.", PUBLIC, phase="dawn")

    def _open_speeches(self) -> None:
        order = [s for s in self.seats if s in self.alive]
        if self.preset.speech_order == "rotate" and self.first_speaker is not None:
            # each day opens one seat later than the day before (every living seat speaks, so starting after
            # the day's last speaker would wrap round to the same first seat every day)
            start = self.seats.index(self.first_speaker) + 1
            rotated = self.seats[start:] + self.seats[:start]
            order = [s for s in rotated if s in self.alive]
        self.first_speaker = order[0] if order else None
        self.speech_queue = order
        self._emit("announcement", None, None,
                   f"Day {self.day}: the living players are {', '.join(self.alive)}. Speaking order: "
                   f"{', '.join(order)}.", PUBLIC)

    def _open_vote(self, candidates: tuple[str, ...], phase: str) -> None:
        self.phase = phase
        self.votes = {}
        self._vote_fallbacks = set()
        self.vote_candidates = candidates
        if phase == "day_revote":
            self._emit("announcement", None, None,
                       f"The vote is tied between {', '.join(candidates)}. Vote again among them.", PUBLIC)

    def _count_votes(self) -> None:
        for voter in sorted(self.votes, key=self.seats.index):
            target = self.votes[voter]
            self._emit("vote", voter, target, f"{voter} votes for {target}.", PUBLIC, voter in self._vote_fallbacks)
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
            out = random.Random(f"{self.seed}:tie:{self.day}").choice(leaders)
        if out is None:
            self._emit("announcement", None, None, f"Votes ({tally}) are tied: nobody is eliminated.", PUBLIC)
            return self._end_day()
        self.alive.remove(out)
        self.deaths[out] = (self.day, "vote")
        self._emit("elimination", None, out, f"Votes: {tally}. {self._announce_name(out)} is eliminated.", PUBLIC)
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
