"""A discrete action stands for the same kind of answer at every decision (``toolkit.doors.actions``; numpy only,
so these run in the fast tier): a bid slot at a vote is a bid the vote refuses, never a pass (session 18's RL
review: index 8 at Player7's protect read ``{"target": null}``, a legal pass under ``invalid="rules"``)."""

import pytest

from toolkit.doors import actions

SEATS = [f"Player{i}" for i in range(1, 8)]
ROLES = ("Werewolf", "Villager", "Seer", "Guard")


def view(action, can_pass=True):
    return {"seat": "Player7", "action": action, "choices": SEATS[:6], "can_pass": can_pass,
            "alive": SEATS, "roles": ROLES}


def test_a_bid_slot_at_a_targeted_decision_is_a_bid_the_decision_refuses():
    protect = view("protect")
    assert actions.from_index(7, protect, SEATS) == {"target": None}  # n: the pass, legal here
    assert not actions.mask(protect, SEATS)[8]
    answer = actions.from_index(8, protect, SEATS)
    assert answer == {"bid": 0}
    with pytest.raises(actions.IllegalAction, match="protect"):
        actions.check(answer, protect, ROLES)


def test_a_seat_at_a_bid_is_an_answer_the_bid_refuses_and_every_slot_maps_back():
    bid = view("bid")
    assert actions.from_index(2, bid, SEATS) == {"target": "Player3"}
    with pytest.raises(actions.IllegalAction):
        actions.check(actions.from_index(2, bid, SEATS), bid, ROLES)
    for index in range(8, 13):
        assert actions.index_of(actions.from_index(index, bid, SEATS), bid, SEATS) == index
    for index in range(8):  # seats and the pass at a targeted decision, and the canned speeches
        for decision in ("vote", "speak"):
            assert actions.index_of(actions.from_index(index, view(decision), SEATS), view(decision), SEATS) == index
