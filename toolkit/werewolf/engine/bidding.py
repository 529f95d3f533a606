"""Bidding discussions (Kaggle's TurnByTurnBiddingDiscussion and RoundByRoundBiddingDiscussion): every living
seat bids an urgency of 0 to 4, and the bids decide who speaks. Pure functions of the bids; ``rules.Game`` asks
for the bids and applies the outcome.

- ``bid_turn``: one speech per bidding; the highest bid speaks. A tie goes by the preset's ``bid_tie``: ``name``
  (Kaggle's SimpleBiddingProtocol: the first by name, A–Z) or ``urgency`` (its UrgencyBiddingProtocol: a seat
  named in the last speech of the game, then the one who has spoken least, then seat order).
- ``bid_round``: each round's speaking order is by bid, highest first, a tie by name (A–Z) whatever ``bid_tie``
  says (Kaggle sorts the round by bid and player id).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

MAX_BID = 4  # both of Kaggle's bidding protocols take 0-4
URGENCY = ("0: I would like to observe and listen for now.",
           "1: I have some general thoughts to share with the group.",
           "2: I have something critical and specific to contribute to this discussion.",
           "3: It is absolutely urgent for me to speak next.",
           "4: I must respond.")  # Kaggle's scale, shown to a bidder


def mentioned(text: str, seats: Iterable[str]) -> list[str]:
    """The seats named in ``text`` as whole words (Kaggle's ``_find_mentioned_players``: longest names first, so
    Player1 is not found inside Player10), in order of first mention."""
    names = sorted(seats, key=len, reverse=True)
    if not text or not names:
        return []
    found = re.findall(r"\b(" + "|".join(re.escape(s) for s in names) + r")\b", text)
    return list(dict.fromkeys(found))


def turn_winner(bids: Mapping[str, int], rule: str, seats: list[str], named: Iterable[str],
                spoken: Mapping[str, int]) -> str:
    """The seat that speaks next: the highest bid; a tie by ``rule`` (``name`` or ``urgency``)."""
    top = max(bids.values())
    tied = sorted(s for s, b in bids.items() if b == top)
    if rule == "name" or len(tied) == 1:
        return tied[0]
    named = set(named)
    tied = [s for s in tied if s in named] or tied
    least = min(spoken.get(s, 0) for s in tied)
    tied = [s for s in tied if spoken.get(s, 0) == least]
    return min(tied, key=seats.index)


def round_order(bids: Mapping[str, int]) -> list[str]:
    """A round's speaking order: by bid, highest first; a tie by name (A–Z)."""
    return [s for s, _ in sorted(bids.items(), key=lambda item: (-item[1], item[0]))]
