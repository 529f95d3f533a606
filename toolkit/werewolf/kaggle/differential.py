"""A Kaggle game's decisions played through this engine with the matching preset, and the two outcomes compared:
eliminations (seat, day, night or day), winner and final day. ``Divergence`` says where they part."""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass

from toolkit.werewolf.engine.rules import Game, IllegalMove
from toolkit.werewolf.kaggle.replay import KaggleGame


class Divergence(AssertionError):
    """The engines part: this engine asks for a decision the Kaggle game has not, or the outcomes differ."""


@dataclass(frozen=True)
class Outcome:
    eliminations: dict[str, tuple[int, str]]  # seat → (day, "night" | "day")
    winner: str | None
    final_day: int | None


def play(kg: KaggleGame) -> Game:
    """This engine, fed the Kaggle game's decisions in the order its rules ask for them."""
    game = Game(kg.preset, 0, dict(kg.roles), kg.draws)
    queues: dict[tuple[int, str, str], deque] = defaultdict(deque)
    for d in kg.decisions:
        queues[(d.day, d.action, d.seat)].append(d)
    while not game.over:
        asks = game.pending()
        if not asks:
            raise Divergence(f"day {game.day} {game.phase}: the engine waits for nothing but the game is not over")
        for ask in asks:
            queue = queues.get((game.day, ask.action, ask.seat))
            if not queue:
                raise Divergence(f"day {game.day} {game.phase}: the engine asks {ask.seat} to {ask.action}; "
                                 "the Kaggle game has no such decision left")
            d = queue.popleft()
            try:
                game.apply(ask.seat, ask.action, d.target, d.text, bid=d.bid)
            except IllegalMove as err:
                raise Divergence(f"day {game.day}: Kaggle's {d} is illegal here: {err}") from err
    left = [d for q in queues.values() for d in q]
    if left:
        raise Divergence(f"the game ended with {len(left)} Kaggle decisions unplayed, first {left[0]}")
    return game


def outcome(game: Game) -> Outcome:
    return Outcome({s: (d, "day" if cause == "vote" else "night") for s, (d, cause) in game.deaths.items()},
                   game.winner, game.day)


def compare(kg: KaggleGame) -> Game:
    """Plays ``kg`` here; raises ``Divergence`` naming the first difference of the outcomes."""
    game = play(kg)
    mine, theirs = outcome(game), Outcome(kg.eliminations, kg.winner, kg.final_day)
    if mine.eliminations != theirs.eliminations:
        raise Divergence(f"eliminations differ: here {mine.eliminations}, Kaggle {theirs.eliminations}")
    if (mine.winner, mine.final_day) != (theirs.winner, theirs.final_day):
        raise Divergence(f"winner/final day differ: here {mine.winner} day {mine.final_day}, "
                         f"Kaggle {theirs.winner} day {theirs.final_day}")
    return game
