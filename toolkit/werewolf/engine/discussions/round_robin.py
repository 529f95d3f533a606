"""``round_robin`` (Kaggle's RoundRobinDiscussion): one speaker at a time, each hears the earlier ones;
``speech_rounds`` rounds in the day's order. The order is the preset's ``speech_order``: ``fixed`` (seat order
every day), ``rotate`` (each day opens one seat later than the day before) or ``random`` (from a seat drawn
each day, as Kaggle's pivot)."""

from __future__ import annotations

from toolkit.werewolf.engine.discussions.base import Discussion, announce_order


class RoundRobin(Discussion):
    name = "round_robin"
    summary = "one speaker at a time, each hears the earlier ones"
    kaggle = "RoundRobinDiscussion"

    def order(self, game) -> list[str]:
        first = game.talk.get("first_speaker")
        if game.preset.speech_order == "rotate" and first is not None:
            # each day opens one seat later than the day before (every living seat speaks, so starting after
            # the day's last speaker would wrap round to the same first seat every day)
            return game.around(game.seats.index(first) + 1)
        if game.preset.speech_order == "random":  # a seat drawn among all (as Kaggle's pivot): the first living
            drawn = game.draw("speech_start", game.seats, f"{game.seed}:speech:{game.day}")
            return game.around(game.seats.index(drawn))
        return game.around(0)

    def open(self, game) -> None:
        order = self.order(game)
        game.talk["first_speaker"] = order[0] if order else None
        game.speech_queue = order * game.preset.speech_rounds
        n = game.preset.speech_rounds
        announce_order(game, order, f" Each speaks {n} times, in turn." if n > 1 else "")


DISCUSSIONS = (RoundRobin(),)
