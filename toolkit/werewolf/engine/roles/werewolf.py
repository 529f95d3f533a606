"""The Werewolf: each night the wolves choose a victim together (``wolf_vote``, ``wolf_order``, ``wolf_tie``);
they see each other's proposals on their channel."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from toolkit.werewolf.engine.events import EventKind
from toolkit.werewolf.engine.roles.base import PRIVATE_NIGHTS, WOLVES, Ask, Kill, Role


@dataclass
class Night:
    proposals: list[tuple[str, str]] = field(default_factory=list)
    held: dict[str, tuple[str | None, bool]] = field(default_factory=dict)  # wolf_vote: simultaneous
    order: list[str] | None = None  # tonight's order of a sequential wolf vote
    settled: bool = False  # the victim is settled (a random tie is drawn once)
    victim: str | None = None


@dataclass
class State:
    cursor: int = 0  # wolf_order: rotate, as a seat index


class Werewolf(Role):
    name = "Werewolf"
    colour, terminal_colour = "#c0392b", "31"
    side = "werewolves"
    night_order = 30
    actions = ("hunt",)
    events = (EventKind("hunt_proposal", decision="hunt", kaggle=("WerewolfNightVoteDataEntry", "vote_action"),
                        kaggle_action="EliminateProposalAction"),
              EventKind("kill", kaggle=("WerewolfNightEliminationElectedDataEntry", "vote_result")))
    Night = Night
    State = State

    def done(self, game: Any) -> bool:
        return len(game.tonight(self.name).proposals) >= len(game.living(self.name))

    def victim(self, game: Any) -> str | None:
        """The wolves' target tonight: the plurality of proposals; a tie goes by ``wolf_tie`` (the latest
        proposal among the tied, nobody, or a draw among the tied)."""
        n = game.tonight(self.name)
        if n.settled:
            return n.victim
        if not n.proposals:
            return None
        counts = Counter(t for _, t in n.proposals)
        top = max(counts.values())
        tied = [t for _, t in n.proposals if counts[t] == top]
        if len(set(tied)) == 1 or game.preset.wolf_tie == "last_proposal":
            return tied[-1]
        if game.preset.wolf_tie == "none":
            return None
        return game.draw("wolf_tie", sorted(set(tied), key=game.seats.index), f"{game.seed}:wolf_tie:{game.day}")

    def order(self, game: Any) -> list[str]:
        """The order of a sequential wolf vote tonight (``wolf_order``), settled once a night: ``fixed`` seat
        order; ``rotate`` from the first living wolf at or after the cursor (which then moves past it); ``random``
        from a seat drawn among all (Kaggle's pivot), the living wolves in seat order round the table from it."""
        n, seats = game.tonight(self.name), game.seats
        if n.order is None:
            wolves = game.living(self.name)
            start = 0
            if game.preset.wolf_order == "rotate":
                state = game.state_of(self.name)
                start = next(i % len(seats) for i in range(state.cursor, state.cursor + len(seats))
                             if seats[i % len(seats)] in wolves)
                state.cursor = (start + 1) % len(seats)
            elif game.preset.wolf_order == "random":
                start = seats.index(game.draw("wolf_start", seats, f"{game.seed}:wolves:{game.day}"))
            n.order = [s for s in seats[start:] + seats[:start] if s in wolves]
        return n.order

    def night_asks(self, game: Any) -> list[Ask]:
        if self.done(game):
            return []
        wolves = game.living(self.name)
        prey = tuple(s for s in game.alive if game.roles[s] != self.name)
        if game.preset.wolf_vote == "simultaneous":  # every wolf at once, none seeing another's choice
            held = game.tonight(self.name).held
            return [Ask(w, "hunt", prey) for w in wolves if w not in held]
        return [Ask(self.order(game)[len(game.tonight(self.name).proposals)], "hunt", prey)]

    def act(self, game: Any, seat: str, action: str, target: str | None, fallback: bool) -> None:
        n = game.tonight(self.name)
        if game.preset.wolf_vote == "simultaneous":  # the proposals are shown together, in seat order
            n.held[seat] = (target, fallback)
            if len(n.held) < len(game.living(self.name)):
                return
            cast = [(w, *n.held[w]) for w in sorted(n.held, key=game.seats.index)]
        else:
            cast = [(seat, target, fallback)]
        for wolf, prey, fell in cast:
            n.proposals.append((wolf, prey))
            game.emit("hunt_proposal", wolf, prey, f"{wolf} proposes to kill {prey}.", WOLVES, fell)
        if self.done(game):
            victim = self.victim(game)
            n.victim, n.settled = victim, True
            if victim is None:  # wolf_tie: none
                game.emit("announcement", None, None,
                          "The werewolves' votes are tied: nobody is attacked tonight.", WOLVES)
                return
            game.emit("kill", None, victim, f"The werewolves chose to kill {victim}.", WOLVES)
            for role in game.roles_in_play():
                role.after_hunt(game, victim)

    def night_kills(self, game: Any) -> list[Kill]:
        victim = self.victim(game)
        return [Kill(victim, "werewolves", shieldable=True)] if victim is not None else []

    def observe(self, game: Any, seat: str, ask: Ask) -> dict[str, Any]:
        return {"teammates": [s for s in game.seats if game.roles[s] == self.name and s != seat],
                "proposals": ([list(p) for p in game.tonight(self.name).proposals] if game.phase == "night"
                              else [])}

    def private_lines(self, game: Any, seat: str, visible: list[Any]) -> list[str]:
        kills = [e for e in visible if e.kind == "kill" and e.day < game.day or (e.kind == "kill" and
                                                                                  game.phase != "night")]
        shown = kills[-PRIVATE_NIGHTS:]
        lines = [f"({len(kills) - len(shown)} earlier nights' attacks not shown)"] if len(kills) > len(shown) else []
        return lines + [f"Night {e.day}: the werewolves attacked {e.target}"
                        f" ({'died' if game.deaths.get(e.target) == (e.day, 'werewolves') else 'survived'})."
                        for e in shown]


ROLE = Werewolf()
