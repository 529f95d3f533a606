"""``simultaneous`` (Kaggle's SimultaneousMajority): every living seat votes at once; the ballots are shown
together, in seat order, once every vote is in."""

from __future__ import annotations

from toolkit.werewolf.engine.votes.base import DayVote


class Simultaneous(DayVote):
    name = "simultaneous"
    summary = "every living seat votes at once; the ballots are shown together, in seat order"
    kaggle = "SimultaneousMajority"


VOTES = (Simultaneous(),)
