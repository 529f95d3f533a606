"""``sequential`` (Kaggle's SequentialVoting): one voter at a time, each ballot shown at once (the next voter
sees it). The order is the preset's ``vote_order``: ``fixed`` (seat order), ``rotate`` (the first living seat from
a cursor that moves past it each day) or ``random`` (from a seat drawn each day); a revote keeps the day's first
voter."""

from __future__ import annotations

from toolkit.werewolf.engine.votes.base import DayVote, ballot


class Sequential(DayVote):
    name = "sequential"
    summary = "one voter at a time, each ballot shown at once (vote_order: fixed, rotate or random)"
    kaggle = "SequentialVoting"

    def open(self, game, phase: str) -> None:
        state = game.balloting
        game.vote_queue = self.order(game) if phase == "day_vote" else self.order(game, state.get("first"))
        state["first"] = game.vote_queue[0] if game.vote_queue else None

    def order(self, game, first: str | None = None) -> list[str]:
        if first is not None:
            return game.around(game.seats.index(first))
        if game.preset.vote_order == "random":
            return game.around(game.seats.index(game.draw("vote_start", game.seats, f"{game.seed}:vote:{game.day}")))
        if game.preset.vote_order == "rotate":  # the first living seat from the cursor; the cursor moves past it
            order = game.around(game.balloting.get("cursor", 0))
            game.balloting["cursor"] = (game.seats.index(order[0]) + 1) % len(game.seats)
            return order
        return game.around(0)

    def voters(self, game) -> list[str]:
        return game.vote_queue[:1]

    def cast(self, game, seat: str, target: str | None, fallback: bool) -> None:
        game.vote_queue.pop(0)
        ballot(game, seat, target, fallback)

    def reveal(self, game) -> None:  # every ballot was shown as it was cast
        pass


VOTES = (Sequential(),)
