"""Bidding discussions (Kaggle's TurnByTurnBiddingDiscussion and RoundByRoundBiddingDiscussion): every living
seat bids an urgency of 0 to 4 (the decision ``bid``, private to its bidder), and the bids decide who speaks.
The outcome is shown to all, or to nobody (the preset's ``bid_result: private``).

- ``bid_turn``: one speech per bidding; the highest bid speaks. A tie goes by the preset's ``bid_tie``: ``name``
  (Kaggle's SimpleBiddingProtocol: the first by name, A–Z) or ``urgency`` (its UrgencyBiddingProtocol: a seat
  named in the last speech of the game, then the one who has spoken least, then seat order).
- ``bid_round``: each round's speaking order is by bid, highest first, a tie by name (A–Z) whatever ``bid_tie``
  says (Kaggle sorts the round by bid and player id).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

from toolkit.werewolf.engine.discussions.base import Discussion, rounds
from toolkit.werewolf.engine.roles.base import MODERATOR, PUBLIC, Ask, IllegalMove

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


class Bidding(Discussion):
    """Both bidding protocols: the talk waits for every living seat's bid, then speaks as the bids say, and
    bids again while ``limit`` speeches (``bid_turn``) or rounds (``bid_round``) remain."""

    decisions = ("bid",)
    limit_of = "speech_rounds"

    def open(self, game) -> None:  # nobody's turn yet: the bids decide
        game.speech_queue = []
        game.talk.update(bidding=True, bids={}, done=0)
        game.emit("announcement", None, None, f"Day {game.day}: the living players are {', '.join(game.alive)}. "
                  f"{self.how(getattr(game.preset, self.limit_of))}", PUBLIC)

    def how(self, n: int) -> str:
        raise NotImplementedError

    def asks(self, game) -> list[Ask]:
        if game.talk["bidding"]:  # every living seat bids at once
            return [Ask(s, "bid") for s in game.alive if s not in game.talk["bids"]]
        return super().asks(game)

    def speak(self, game, seat: str, text: str, fallback: bool) -> None:
        super().speak(game, seat, text, fallback)
        if not game.speech_queue:  # a turn's speech, or a round's last one: bid again while some remain
            game.talk["done"] += 1
            game.talk["bidding"] = game.talk["done"] < getattr(game.preset, self.limit_of)

    def decide(self, game, seat: str, action: str, value, fallback: bool) -> None:
        """One seat's bid (private: the bidder alone sees it); once every living seat has bid, the outcome."""
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_BID:
            raise IllegalMove(f"{seat} must bid a whole number from 0 to {MAX_BID}, not {value!r}")
        game.talk["bids"][seat] = value
        game.emit("bid", seat, None, f"{seat} bids {value}.", seat, fallback)
        if len(game.talk["bids"]) == len(game.alive):
            bids = game.talk["bids"]
            game.talk.update(bids={}, bidding=False)
            self.outcome(game, bids, PUBLIC if game.preset.bid_result == "public" else MODERATOR)

    def outcome(self, game, bids: dict[str, int], shown: str) -> None:
        raise NotImplementedError


class BidTurn(Bidding):
    name = "bid_turn"
    summary = ("every living seat bids 0-4 for each speech, the highest speaks; at most `speech_turns` speeches; "
               "everyone at 0 ends the talk")
    kaggle = "TurnByTurnBiddingDiscussion"
    limit_of = "speech_turns"

    def how(self, n: int) -> str:
        return f"Everyone bids for each speech, at most {n}."

    def outcome(self, game, bids: dict[str, int], shown: str) -> None:
        if not any(bids.values()):
            game.emit("announcement", None, None, "Everyone bid 0: the talk ends.", PUBLIC)
            return
        said = [e for e in game.events if e.kind == "speech" and e.phase == "speech"]
        named = mentioned(said[-1].text, game.seats) if said else []
        winner = turn_winner(bids, game.preset.bid_tie, game.seats, named, Counter(e.actor for e in said))
        overview = ", ".join(f"{s}: {bids[s]}" for s in game.alive)
        game.emit("announcement", None, winner, f"{winner} wins the bid and speaks next (bids: {overview}).", shown,
                  about="bids", seats=(winner,))
        game.speech_queue = [winner]


class BidRound(Bidding):
    name = "bid_round"
    summary = "`speech_rounds` rounds, each round's order by bid, highest first, a tie by name A–Z"
    kaggle = "RoundByRoundBiddingDiscussion"

    def how(self, n: int) -> str:
        return f"{rounds(n)}; everyone bids at the start of each for its speaking order."

    def outcome(self, game, bids: dict[str, int], shown: str) -> None:
        game.speech_queue = round_order(bids)
        order = ", ".join(f"{s} ({bids[s]})" for s in game.speech_queue)
        game.emit("announcement", None, None, f"Round {game.talk['done'] + 1} speaking order, by bid: {order}.",
                  shown, about="bids", seats=tuple(game.speech_queue))


DISCUSSIONS = (BidTurn(), BidRound())
