"""What the day's vote is to the engine. ``rules.Game`` opens a vote among its candidates (the living, or the
tied of a revote), asks the voters the preset's ``DayVote`` names, takes each ballot, and once every ballot is in
counts them (an abstention is not counted); a single leader is eliminated, and a tie goes to the preset's
``TieRule``. In the order a day asks them:

- ``DayVote.open``: a vote opens (``phase`` ``day_vote`` or ``day_revote``; ``game.vote_candidates`` are set): its
  order, if it has one (``game.vote_queue``; its own state across days in ``game.balloting``);
- ``DayVote.voters``: who is asked now (the engine leaves out who has voted);
- ``DayVote.cast``: a ballot is taken (the engine has kept it in ``game.votes``): shown now, or held;
- ``DayVote.reveal``: every ballot is in, before the count: the held ballots are shown;
- ``TieRule.settle``: the leaders are tied (or no ballot counted: every candidate is): who is eliminated, None
  for nobody, or ``REVOTE`` (the tied vote again);
- its prompt file: a day vote's ``prompts/werewolf/votes/<name>.j2`` (``clause()``, its clause of the rules after
  ``then votes``), a tie rule's ``prompts/werewolf/votes/ties/<name>.j2`` (``tie()`` after ``the most votes is
  eliminated,`` and ``all_abstain()`` after ``if every voter abstains,``).

A ballot is a ``vote`` events row (``ballot``). Rules stay pure: no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit.werewolf.engine.roles.base import PUBLIC

if TYPE_CHECKING:
    from toolkit.werewolf.engine.table import Table  # what a protocol reads of a game (rules.Game is one)

REVOTE = object()  # a tie rule's answer: the tied vote again


class DayVote:
    name = ""
    summary = ""  # one line: how the day votes (the docs' table)
    kaggle: str | None = None  # the Kaggle day_voting_protocol it plays (kaggle-environments' name), if any

    def open(self, game: Table, phase: str) -> None:
        """A vote opens among ``game.vote_candidates``; the default has no order."""

    def voters(self, game: Table) -> list[str]:
        """Who is asked now; the default: every living seat at once."""
        return list(game.alive)

    def cast(self, game: Table, seat: str, target: str | None, fallback: bool) -> None:
        """A ballot taken; the default holds it (secret) until ``reveal``."""

    def reveal(self, game: Table) -> None:
        """Every ballot is in; the default shows the held ballots together, in seat order."""
        for voter in sorted(game.votes, key=game.seats.index):
            ballot(game, voter, game.votes[voter], voter in game.vote_fallbacks)

    @property
    def prompt(self) -> str:
        return f"werewolf/votes/{self.name}.j2"

    def __repr__(self) -> str:
        return f"<day vote {self.name}>"


class TieRule:
    name = ""
    summary = ""  # one line: what a tie does (the docs' table)
    kaggle: str | None = None  # the Kaggle tie_break it plays, if any

    def settle(self, game: Table, leaders: tuple[str, ...], counted: bool) -> str | object | None:
        """The seat eliminated among the tied ``leaders``, None for nobody, or ``REVOTE``. ``counted``: some
        ballot was counted (if not, every candidate is a leader)."""
        raise NotImplementedError

    @property
    def prompt(self) -> str:
        return f"werewolf/votes/ties/{self.name}.j2"

    def __repr__(self) -> str:
        return f"<vote tie rule {self.name}>"


def ballot(game: Table, voter: str, target: str | None, fallback: bool) -> None:
    """A ballot made public: a ``vote`` row."""
    text = f"{voter} votes for {target}." if target is not None else f"{voter} abstains."
    game.emit("vote", voter, target, text, PUBLIC, fallback)
