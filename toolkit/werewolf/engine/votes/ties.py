"""The tie rules of the day's vote (a preset's ``vote_tie``): ``none`` (a tie eliminates nobody; Kaggle's
no_elected), ``revote`` (the tied vote again among themselves, once; a tie again eliminates nobody) and ``random``
(one of the tied drawn at random, as Kaggle's random tie_break; with no ballot counted, one of the candidates)."""

from __future__ import annotations

from toolkit.werewolf.engine.votes.base import REVOTE, TieRule


class Nobody(TieRule):
    name = "none"
    summary = "a tie eliminates nobody"
    kaggle = "no_elected"

    def settle(self, game, leaders, counted):
        return None


class Revote(TieRule):
    name = "revote"
    summary = "the tied are voted on again, once; a second tie eliminates nobody"

    def settle(self, game, leaders, counted):
        return REVOTE if game.phase == "day_vote" and counted else None


class Draw(TieRule):
    name = "random"
    summary = "one of the tied is drawn at random (every candidate, when nobody's ballot counted)"
    kaggle = "random"

    def settle(self, game, leaders, counted):
        return game.draw("vote_tie", list(leaders), f"{game.seed}:tie:{game.day}")


TIES = (Nobody(), Revote(), Draw())
