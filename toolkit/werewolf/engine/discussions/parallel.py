"""``parallel`` (Kaggle's ParallelDiscussion): every living seat is asked at once, ``speech_rounds`` rounds; a
round's speeches are held until the round is in, then shown together in seat order (no speaker-order
advantage)."""

from __future__ import annotations

from toolkit.werewolf.engine.discussions.base import Discussion, announce_order, rounds, say
from toolkit.werewolf.engine.roles.base import Ask


class Parallel(Discussion):
    name = "parallel"
    summary = "every living seat asked at once each round; a round's speeches shown together, in seat order"
    kaggle = "ParallelDiscussion"

    def open(self, game) -> None:
        order = game.around(0)
        game.speech_queue = order * game.preset.speech_rounds
        game.talk.update(round_size=len(order), held={})
        announce_order(game, order, f" All speak at once, {rounds(game.preset.speech_rounds)}; a round's "
                                    "speeches are shown together.")

    def asks(self, game) -> list[Ask]:  # the whole round at once
        held = game.talk["held"]
        return [Ask(s, "speak") for s in game.speech_queue[:game.talk["round_size"]] if s not in held]

    def speak(self, game, seat: str, text: str, fallback: bool) -> None:
        held, size = game.talk["held"], game.talk["round_size"]
        held[seat] = (text, fallback)
        if len(held) == size:  # the round is in: shown together, in seat order
            for s in game.speech_queue[:size]:
                say(game, s, *held[s])
            game.speech_queue, game.talk["held"] = game.speech_queue[size:], {}


DISCUSSIONS = (Parallel(),)
