"""The rule options of docs/werewolf.md (the rules card), each played by direct ``Game.apply()`` calls with fixed
roles and checked against the card's sentence for it; and for each option, the text a seat is shown (the
rules paragraph, the action's prompt) says what the engine does. Kaggle's names for each option are in the card.

Seats in the 7-seat Kaggle-style games below: Player1-2 Werewolf, Player3 Seer, Player4 Doctor, Player5-7
Villager."""

from __future__ import annotations

import pytest

from toolkit.prompting.structured_call import render
from toolkit.werewolf.engine.preset import load_preset
from toolkit.werewolf.engine.rules import Game, IllegalMove
from toolkit.werewolf.seat.observation import observe

K7 = {"Player1": "Werewolf", "Player2": "Werewolf", "Player3": "Seer", "Player4": "Doctor",
      "Player5": "Villager", "Player6": "Villager", "Player7": "Villager"}


def game(draws=None, seed=1, **flags):
    preset = load_preset("kaggle7").model_copy(update=flags)
    return Game(preset, seed, dict(K7), draws)


def rules_text(**flags) -> str:
    preset = load_preset("kaggle7").model_copy(update=flags)
    return render("werewolf/rules.j2", preset={**preset.model_dump(), "n_players": preset.n_players})


def ask_of(g, action, seat=None):
    return next(a for a in g.pending() if a.action == action and (seat is None or a.seat == seat))


def prompt(g, ask) -> str:
    preset = {**g.preset.model_dump(), "n_players": g.preset.n_players}
    return render(f"werewolf/{ask.action}.j2", obs=observe(g, ask.seat, ask), preset=preset,
                  rules=render("werewolf/rules.j2", preset=preset), reflection=False, experiences=[],
                  strategy="default")


def night(g, hunts, heal=None, verify="Player5"):
    """The night: the Doctor heals ``heal`` (None passes), the Seer checks ``verify``, the wolves propose
    ``hunts`` in seat order."""
    g.apply("Player4", "protect", heal) if "Player4" in g.alive else None
    g.apply("Player3", "verify", verify) if "Player3" in g.alive else None
    for wolf, target in zip(g.living("Werewolf"), hunts):
        g.apply(wolf, "hunt", target)


def talk(g):
    while g.phase == "day_speech":
        g.apply(g.pending()[0].seat, "speak", text="Hello.")


def vote(g, votes):
    while g.phase in ("day_vote", "day_revote") and not g.over:
        for ask in g.pending():
            g.apply(ask.seat, "vote", votes[ask.seat])


# ---------------------------------------------------------------- wolf_tie
def test_wolf_tie_none_a_split_vote_attacks_nobody_and_the_wolves_are_told():
    g = game(wolf_tie="none")
    night(g, ["Player5", "Player6"])
    assert g.alive == list(K7) and g.phase == "day_speech"
    told = [e for e in g.events if e.text.startswith("The werewolves' votes are tied")]
    assert len(told) == 1 and told[0].visibility == "werewolves"
    assert "if their votes are split, nobody is attacked" in rules_text(wolf_tie="none")


def test_wolf_tie_random_draws_among_the_tied_from_the_seed_or_the_given_draw():
    picked = set()
    for seed in range(12):  # both of the tied come up over seeds: a draw, not a fixed rule
        g = game(seed=seed, wolf_tie="random")
        night(g, ["Player5", "Player6"])
        assert g.deaths == {g.drawn["wolf_tie:1"]: (1, "werewolves")}
        picked |= set(g.deaths)
    assert picked == {"Player5", "Player6"}
    for given in ("Player5", "Player6"):
        g = game({"wolf_tie:1": given}, wolf_tie="random")
        night(g, ["Player5", "Player6"])
        assert g.deaths == {given: (1, "werewolves")}
    assert "the victim is drawn at random among the most voted" in rules_text(wolf_tie="random")


def test_wolf_tie_last_proposal_is_the_old_rule_and_a_draw_not_among_the_tied_is_refused():
    g = game(wolf_tie="last_proposal")
    night(g, ["Player5", "Player6"])
    assert g.deaths == {"Player6": (1, "werewolves")} and g.drawn == {}
    g = game({"wolf_tie:1": "Player7"}, wolf_tie="random")
    with pytest.raises(IllegalMove, match="draw wolf_tie:1: Player7 is not one of"):
        night(g, ["Player5", "Player6"])


def test_the_hunt_prompt_says_how_a_tie_goes():
    for tie, words in (("none", "a tie kills nobody"), ("random", "a tie is drawn at random among the tied"),
                       ("last_proposal", "a tie goes to the latest proposal")):
        g = game(wolf_tie=tie)
        g.apply("Player1", "hunt", "Player5")
        assert words in prompt(g, ask_of(g, "hunt", "Player2"))


# ---------------------------------------------------------------- the Doctor
def test_the_doctor_heals_one_player_who_survives_the_attack():
    g = game()
    night(g, ["Player5", "Player5"], heal="Player5")
    assert g.alive == list(K7)
    assert "the Doctor heals one player, who survives the attack" in rules_text()


@pytest.mark.parametrize("self_save", [False, True])
def test_doctor_self_save_decides_whether_the_doctor_may_heal_themselves(self_save):
    g = game(doctor_self_save=self_save)
    assert ("Player4" in ask_of(g, "protect").choices) is self_save
    assert ("never themselves" in rules_text(doctor_self_save=self_save)) is not self_save
    words = "you may heal yourself" if self_save else "not yourself"
    assert words in prompt(g, ask_of(g, "protect"))


@pytest.mark.parametrize("consecutive", [False, True])
def test_doctor_consecutive_saves_decides_whether_last_nights_patient_may_be_healed_again(consecutive):
    g = game(doctor_consecutive_saves=consecutive, vote_tie="none", day_vote="simultaneous")
    night(g, ["Player6", "Player6"], heal="Player5")
    talk(g)
    votes = {s: ("Player2" if s != "Player2" else "Player1") for s in K7}
    vote(g, votes | {"Player1": "Player3", "Player3": "Player1"})
    assert g.phase == "night" and g.day == 2
    assert ("Player5" in ask_of(g, "protect").choices) is consecutive
    text = rules_text(doctor_consecutive_saves=consecutive)
    assert ("nor the same one two nights running" in text) is not consecutive
    # a night without a heal frees the patient again (Kaggle forgets after a skipped night)
    g = game(doctor_consecutive_saves=False)
    night(g, ["Player6", "Player6"], heal=None)
    assert g.state_of("Doctor").last_protected is None


# ---------------------------------------------------------------- seer_learns
@pytest.mark.parametrize("learns, text", [("side", "Player5 is good."), ("role", "Player5 is Villager (village).")])
def test_seer_learns_the_side_or_the_role(learns, text):
    g = game(seer_learns=learns)
    g.apply("Player3", "verify", "Player5")
    (check,) = [e for e in g.events if e.kind == "check"]
    assert check.text == text and check.visibility == "Player3"
    g.apply("Player4", "protect", None)
    assert ("learns one player's role" in rules_text(seer_learns=learns)) is (learns == "role")
    v = game(seer_learns=learns)
    assert ("You will learn privately their role." in prompt(v, ask_of(v, "verify"))) is (learns == "role")


def test_a_role_check_is_shown_to_the_seer_as_the_role():
    g = game(seer_learns="role")
    night(g, ["Player6", "Player6"], verify="Player1")
    talk_ask = g.pending()[0]
    while talk_ask.seat != "Player3":
        g.apply(talk_ask.seat, "speak", text="Hi.")
        talk_ask = g.pending()[0]
    assert "Player1 is Werewolf (werewolves)" in prompt(g, talk_ask)


# ---------------------------------------------------------------- speech_rounds, speech_order
def test_speech_rounds_every_living_player_speaks_that_many_times_in_the_same_order():
    g = game(speech_rounds=2)
    night(g, ["Player7", "Player7"])
    order = []
    while g.phase == "day_speech":
        seat = g.pending()[0].seat
        order.append(seat)
        g.apply(seat, "speak", text="Hi.")
    living = ["Player1", "Player2", "Player3", "Player4", "Player5", "Player6"]
    assert order == living + living
    assert "everyone speaks 2 times, in turn" in rules_text(speech_rounds=2)
    assert "Each speaks 2 times, in turn. Speaking order: Player1" in " ".join(e.text for e in g.events)


def test_speech_order_random_opens_at_the_drawn_seat_or_the_first_living_after_it():
    g = game({"speech_start:1": "Player6"}, speech_order="random")
    night(g, ["Player6", "Player6"])
    # Player6 died: the order opens at the first living seat after it
    assert [a.seat for a in g.pending()] == ["Player7"]
    assert g.speech_queue == ["Player7", "Player1", "Player2", "Player3", "Player4", "Player5"]
    assert "(from a seat drawn at random each day)" in rules_text(speech_order="random")
    assert "(in seat order every day)" in rules_text(speech_order="fixed")


# ---------------------------------------------------------------- day_vote, vote_order
def test_sequential_votes_are_asked_one_at_a_time_and_each_is_public_at_once():
    g = game(day_vote="sequential", vote_order="fixed", vote_tie="none")
    night(g, ["Player7", "Player7"])
    talk(g)
    asked = []
    while g.phase == "day_vote":
        (ask,) = g.pending()
        asked.append(ask.seat)
        g.apply(ask.seat, "vote", "Player1" if ask.seat != "Player1" else "Player2")
        assert g.events[-1].kind == "vote" or g.over or g.phase != "day_vote"
    assert asked == ["Player1", "Player2", "Player3", "Player4", "Player5", "Player6"]
    assert [e.actor for e in g.events if e.kind == "vote"] == asked  # once each, in the order cast
    assert "then votes one at a time, each vote shown at once (in seat order)" in rules_text(vote_order="fixed")


def test_a_sequential_voter_sees_the_votes_cast_before_theirs():
    g = game(day_vote="sequential", vote_order="fixed")
    night(g, ["Player7", "Player7"])
    talk(g)
    g.apply("Player1", "vote", "Player5")
    text = prompt(g, ask_of(g, "vote"))
    assert "Player1" in text and "Votes are cast one at a time and each is shown at once" in text
    simultaneous = game(day_vote="simultaneous")
    night(simultaneous, ["Player7", "Player7"])
    talk(simultaneous)
    assert "Votes are revealed when everyone has voted." in prompt(simultaneous, ask_of(simultaneous, "vote"))


def test_vote_order_rotate_moves_the_first_voter_one_living_seat_on_each_day_and_random_takes_the_draw():
    g = game(day_vote="sequential", vote_order="rotate", vote_tie="none")
    night(g, ["Player7", "Player7"])
    talk(g)
    firsts = [g.pending()[0].seat]
    vote(g, {"Player1": "Player6", "Player2": "Player6", "Player3": "Player5", "Player4": "Player5",
             "Player5": "Player6", "Player6": "Player5"})  # 3-3: nobody out
    night(g, ["Player3", "Player3"])
    talk(g)
    firsts.append(g.pending()[0].seat)
    assert firsts == ["Player1", "Player2"]
    r = game({"vote_start:1": "Player4"}, day_vote="sequential", vote_order="random")
    night(r, ["Player7", "Player7"])
    talk(r)
    assert r.vote_queue == ["Player4", "Player5", "Player6", "Player1", "Player2", "Player3"]


# ---------------------------------------------------------------- vote_tie random from a draw
def test_vote_tie_random_takes_the_given_draw():
    for given in ("Player5", "Player6"):
        g = game({"vote_tie:1": given}, vote_tie="random", day_vote="simultaneous")
        night(g, ["Player7", "Player7"])
        talk(g)
        vote(g, {"Player1": "Player5", "Player2": "Player5", "Player3": "Player6", "Player4": "Player6",
                 "Player5": "Player6", "Player6": "Player5"})  # 3-3
        assert g.deaths[given] == (1, "vote")


# ---------------------------------------------------------------- reveal levels in the rules text
def test_the_rules_text_says_what_a_death_announces():
    assert "A player killed at night is announced with their role." in rules_text(night_reveal="role")
    assert "A player eliminated by vote is announced with their side." in rules_text(exile_reveal="team")
    quiet = rules_text(night_reveal="no_reveal", exile_reveal="no_reveal")
    assert "announced with" not in quiet


def test_the_kaggle_presets_read_as_the_card_says():
    k7, k8 = load_preset("kaggle7"), load_preset("kaggle8")
    assert dict(k7.roles) == {"Werewolf": 2, "Villager": 3, "Seer": 1, "Doctor": 1}
    assert dict(k8.roles) == {"Werewolf": 2, "Villager": 4, "Seer": 1, "Doctor": 1}
    assert (k7.wolf_tie, k7.vote_tie, k7.vote_order, k7.speech_rounds) == ("random", "random", "random", 1)
    assert (k8.wolf_tie, k8.vote_tie, k8.vote_order, k8.speech_rounds) == ("none", "none", "rotate", 2)
    assert (k8.doctor_self_save, k8.doctor_consecutive_saves) == (False, False)
    assert all(p.win_rule == "parity" and p.night_reveal == p.exile_reveal == "role" == p.seer_learns for p in (k7, k8))
    assert all(p.vote_abstain and p.self_vote and p.discussion == "round_robin" for p in (k7, k8))


# ---------------------------------------------------------------- discussion: parallel
def test_parallel_discussion_asks_every_living_seat_at_once_and_shows_the_round_together():
    g = game(discussion="parallel", speech_rounds=2)
    night(g, ["Player7", "Player7"])
    living = ["Player1", "Player2", "Player3", "Player4", "Player5", "Player6"]
    for rnd in (1, 2):
        asks = g.pending()
        assert [a.seat for a in asks] == living and all(a.action == "speak" for a in asks)
        before = len(g.events)
        for ask in reversed(asks):  # answered in any order
            assert not any(e.kind == "speech" and e.day == 1 and e.seq >= before for e in g.events)
            g.apply(ask.seat, "speak", text=f"{ask.seat} round {rnd}.")
        shown = [e for e in g.events[before:] if e.kind == "speech"]
        assert [e.actor for e in shown] == living  # together, in seat order, once the round is in
    assert g.phase == "day_vote"
    assert "everyone speaks at the same time, 2 rounds, each round's speeches shown together" in \
        rules_text(discussion="parallel", speech_rounds=2)
    assert "All speak at once, 2 rounds" in " ".join(e.text for e in g.events)


def test_a_parallel_speaker_does_not_hear_this_rounds_earlier_answers():
    g = game(discussion="parallel")
    night(g, ["Player7", "Player7"])
    g.apply("Player1", "speak", text="I secretly know Player2 is the wolf.")
    ask = next(a for a in g.pending() if a.seat == "Player2")
    assert "secretly know" not in prompt(g, ask)


# ---------------------------------------------------------------- wolf_vote: simultaneous
def test_simultaneous_wolves_are_asked_together_and_see_no_proposal_until_all_are_in():
    g = game(wolf_vote="simultaneous", wolf_tie="last_proposal")
    g.apply("Player4", "protect", None)
    g.apply("Player3", "verify", "Player5")
    asks = [a for a in g.pending() if a.action == "hunt"]
    assert [a.seat for a in asks] == ["Player1", "Player2"]
    g.apply("Player2", "hunt", "Player6")  # the later seat answers first
    assert not any(e.kind == "hunt_proposal" for e in g.events)
    assert "Proposals so far" not in prompt(g, ask_of(g, "hunt", "Player1"))
    g.apply("Player1", "hunt", "Player5")
    assert [(e.actor, e.target) for e in g.events if e.kind == "hunt_proposal"] == [("Player1", "Player5"),
                                                                                   ("Player2", "Player6")]
    assert g.deaths == {"Player6": (1, "werewolves")}  # a tie: the later proposal in seat order
    assert "(voting at the same time, none seeing another's vote)" in rules_text(wolf_vote="simultaneous")
    assert "none seeing another's vote" not in rules_text(wolf_vote="sequential")


# ---------------------------------------------------------------- wolf_order
def test_wolf_order_rotate_moves_the_first_wolf_one_seat_on_each_night_and_random_takes_the_draw():
    g = game(wolf_order="rotate", vote_tie="none", day_vote="simultaneous")
    g.apply("Player4", "protect", None)
    g.apply("Player3", "verify", "Player5")
    firsts = [ask_of(g, "hunt").seat]
    for _ in range(2):
        a = ask_of(g, "hunt")
        g.apply(a.seat, "hunt", "Player7")
    talk(g)
    vote(g, {"Player1": "Player6", "Player2": "Player6", "Player3": "Player5", "Player4": "Player5",
             "Player5": "Player6", "Player6": "Player5"})  # 3-3: nobody out
    g.apply("Player4", "protect", None)
    g.apply("Player3", "verify", "Player6")
    firsts.append(ask_of(g, "hunt").seat)
    assert firsts == ["Player1", "Player2"]
    assert "the first wolf moving one seat on each night" in rules_text(wolf_order="rotate")
    r = game({"wolf_start:1": "Player2"}, wolf_order="random")
    r.apply("Player4", "protect", None)
    assert ask_of(r, "hunt").seat == "Player2"
    assert "from a seat drawn at random each night" in rules_text(wolf_order="random")


# ---------------------------------------------------------------- vote_abstain, self_vote
def test_vote_abstain_an_abstention_is_public_and_not_counted():
    """The card: a voter may abstain (so does one who gives no answer), and abstentions are not counted."""
    g = game(day_vote="simultaneous", vote_tie="none", vote_abstain=True, self_vote=False)
    night(g, ["Player7", "Player7"])
    talk(g)
    ask = ask_of(g, "vote", "Player1")
    assert ask.can_pass and "Player1" not in ask.choices
    vote(g, {"Player1": None, "Player2": None, "Player3": None, "Player4": "Player5", "Player5": "Player6",
             "Player6": "Player5"})  # 2 votes for Player5, 1 for Player6, 3 abstentions
    assert g.deaths == {"Player7": (1, "werewolves"), "Player5": (1, "vote")}
    assert [e.text for e in g.events if e.kind == "vote"][:3] == [
        "Player1 abstains.", "Player2 abstains.", "Player3 abstains."]
    assert "Votes: Player5: 2, Player6: 1. Player5 (Villager) is eliminated." in [e.text for e in g.events]
    text = rules_text(vote_abstain=True, vote_tie="none")
    assert ("a voter may abstain (so does one who gives no answer), and abstentions are not counted: if every "
            "voter abstains, nobody is eliminated") in text
    assert "may abstain" not in rules_text(vote_abstain=False)


def test_vote_abstain_without_it_a_voter_must_name_a_target():
    g = game(day_vote="simultaneous", vote_abstain=False, self_vote=False)
    night(g, ["Player7", "Player7"])
    talk(g)
    assert not ask_of(g, "vote", "Player1").can_pass
    with pytest.raises(IllegalMove):
        g.apply("Player1", "vote", None)


@pytest.mark.parametrize("tie, drawn", [("none", None), ("random", "Player3"), ("revote", None)])
def test_every_voter_abstaining_eliminates_nobody_or_a_living_player_drawn_at_random(tie, drawn):
    """Kaggle's rule: with no vote counted, tie_break random draws among every candidate; no_elected exiles
    nobody (and a revote has nothing to revote among)."""
    g = game({"vote_tie:1": "Player3"}, day_vote="sequential", vote_order="fixed", vote_tie=tie, vote_abstain=True)
    night(g, ["Player7", "Player7"])
    talk(g)
    vote(g, {s: None for s in g.alive})
    out = {s for s, (d, cause) in g.deaths.items() if cause == "vote"}
    assert out == ({drawn} if drawn else set())
    if not drawn:
        assert "Every voter abstained: nobody is eliminated." in [e.text for e in g.events]
        assert g.phase == "night" and g.day == 2
        record = prompt(g, ask_of(g, "hunt"))
        assert "- Day 1 vote: abstained: Player1, Player2, Player3, Player4, Player5, Player6 ⇒ nobody eliminated." \
            in record
    assert ("if every voter abstains, one of the living is eliminated at random" in rules_text(vote_tie="random",
                                                                                               vote_abstain=True))


def test_self_vote_a_voter_may_vote_for_themselves_and_it_counts():
    g = game(day_vote="simultaneous", vote_tie="none", self_vote=True)
    night(g, ["Player7", "Player7"])
    talk(g)
    assert "Player5" in ask_of(g, "vote", "Player5").choices
    vote(g, {"Player1": "Player5", "Player2": "Player6", "Player3": "Player6", "Player4": "Player5",
             "Player5": "Player5", "Player6": "Player1"})
    assert g.deaths["Player5"] == (1, "vote")
    assert "a voter may vote for themselves" in rules_text(self_vote=True)
    assert "for themselves" not in rules_text(self_vote=False)
    h = game(day_vote="simultaneous", self_vote=True, vote_abstain=True)
    night(h, ["Player7", "Player7"])
    talk(h)
    shown = prompt(h, ask_of(h, "vote", "Player5"))
    assert "You may vote for yourself." in shown and "You may abstain (target null)" in shown
    strict = game(day_vote="simultaneous", self_vote=False, vote_abstain=False)
    night(strict, ["Player7", "Player7"])
    talk(strict)
    assert "Player5" not in ask_of(strict, "vote", "Player5").choices
    shown = prompt(strict, ask_of(strict, "vote", "Player5"))
    assert "for yourself" not in shown and "abstain" not in shown


def test_the_heuristic_player_neither_votes_for_itself_nor_abstains():
    import asyncio

    from toolkit.werewolf.game import GameConfig, play_game

    for seed in range(3):
        result = asyncio.run(play_game(GameConfig(preset="kaggle7", seed=seed, model="heuristic")))
        votes = [e for e in result.events if e.kind == "vote"]
        assert votes and all(e.target is not None and e.target != e.actor for e in votes)


# ---------------------------------------------------------------- discussion: bid_turn, bid_round
def bids(g, amounts):
    """Every pending bid, ``amounts[seat]`` each (0 where not given)."""
    for ask in g.pending():
        assert ask.action == "bid"
        g.apply(ask.seat, "bid", bid=amounts.get(ask.seat, 0))


def day_one(**flags):
    g = game(**flags)
    night(g, ["Player7", "Player7"])
    return g


def test_bid_turn_everyone_bids_at_once_and_the_highest_bid_speaks_next():
    """The card: the players bid (0 to 4) for each speech, the highest bid speaks next."""
    g = day_one(discussion="bid_turn", speech_turns=2)
    assert {a.seat for a in g.pending()} == set(g.alive) and {a.action for a in g.pending()} == {"bid"}
    bids(g, {"Player5": 3, "Player2": 1})
    assert [(a.seat, a.action) for a in g.pending()] == [("Player5", "speak")]
    g.apply("Player5", "speak", text="I suspect Player2.")
    bids(g, {"Player2": 4, "Player6": 2})
    assert [(a.seat, a.action) for a in g.pending()] == [("Player2", "speak")]
    g.apply("Player2", "speak", text="Not me.")
    assert g.phase == "day_vote"  # speech_turns: 2 speeches at most
    assert "the players bid (0 to 4) for each speech, at most 2 speeches: the highest bid speaks next" in \
        rules_text(discussion="bid_turn", speech_turns=2)


def test_bid_turn_a_tie_goes_to_the_first_by_name():
    g = day_one(discussion="bid_turn", bid_tie="name")
    bids(g, {"Player6": 2, "Player3": 2, "Player5": 1})
    assert g.pending()[0].seat == "Player3"
    assert "a tie goes to the first by name, A–Z" in rules_text(discussion="bid_turn", bid_tie="name")


def test_by_name_is_a_to_z_on_the_names_so_player10_comes_before_player2():
    from toolkit.werewolf.engine.discussions import bidding

    assert bidding.turn_winner({"Player2": 3, "Player10": 3}, "name", ["Player2", "Player10"], [], {}) == "Player10"
    assert bidding.round_order({"Player2": 1, "Player10": 1, "Player3": 4}) == ["Player3", "Player10", "Player2"]
    assert bidding.mentioned("Ask Player10, then Player1.", ["Player1", "Player10"]) == ["Player10", "Player1"]
    assert bidding.mentioned("Player12 spoke", ["Player1"]) == []


def test_bid_turn_urgency_a_tie_goes_to_one_named_in_the_last_speech_then_the_least_spoken_then_seat_order():
    g = day_one(discussion="bid_turn", bid_tie="urgency", speech_turns=4)
    bids(g, {"Player3": 2, "Player6": 2})  # nobody named yet, nobody has spoken: seat order
    assert g.pending()[0].seat == "Player3"
    g.apply("Player3", "speak", text="Player6 and Player5 are quiet.")
    bids(g, {"Player3": 4, "Player5": 4, "Player6": 4})  # named last: Player5, Player6; neither has spoken: seat order
    assert g.pending()[0].seat == "Player5"
    g.apply("Player5", "speak", text="Nothing to say.")
    bids(g, {"Player3": 3, "Player5": 3})  # nobody named; Player3 and Player5 spoke once each: seat order
    assert g.pending()[0].seat == "Player3"
    g.apply("Player3", "speak", text="Still Player6.")
    bids(g, {"Player3": 1, "Player5": 1, "Player1": 1})  # not named; Player1 has spoken least
    assert g.pending()[0].seat == "Player1"
    text = rules_text(discussion="bid_turn", bid_tie="urgency")
    assert "a tie goes to a player named in the last speech, then to the one who has spoken least, then by seat order" \
        in text


def test_bid_turn_everyone_bidding_0_ends_the_talk():
    g = day_one(discussion="bid_turn")
    bids(g, {})
    assert g.phase == "day_vote" and "Everyone bid 0: the talk ends." in [e.text for e in g.events]
    assert not any(e.kind == "speech" and e.day == 1 for e in g.events)
    assert "if everyone bids 0 the talk ends" in rules_text(discussion="bid_turn")


def test_bid_round_each_round_speaks_in_the_order_bid_for_at_its_start():
    """The card: everyone speaks once in each round, in an order bid for at its start (highest first, a tie by
    name)."""
    g = day_one(discussion="bid_round", speech_rounds=2)
    bids(g, {"Player6": 4, "Player2": 2, "Player5": 2})
    order = []
    while g.pending()[0].action == "speak":
        order.append(g.pending()[0].seat)
        g.apply(order[-1], "speak", text="Hello.")
    assert order == ["Player6", "Player2", "Player5", "Player1", "Player3", "Player4"]
    bids(g, {"Player1": 1})
    second = []
    while g.phase == "day_speech":
        second.append(g.pending()[0].seat)
        g.apply(second[-1], "speak", text="Again.")
    assert second == ["Player1", "Player2", "Player3", "Player4", "Player5", "Player6"]
    assert any(e.text == "Round 1 speaking order, by bid: Player6 (4), Player2 (2), Player5 (2), Player1 (0), "
               "Player3 (0), Player4 (0)." for e in g.events)
    assert ("everyone speaks once in each of 2 rounds, in an order bid for at its start (0 to 4, highest first, a "
            "tie by name, A–Z") in rules_text(discussion="bid_round", speech_rounds=2)


@pytest.mark.parametrize("discussion", ["bid_turn", "bid_round"])
def test_a_bid_is_seen_by_its_bidder_alone_and_the_result_by_all_or_by_nobody(discussion):
    for shown in ("public", "private"):
        g = day_one(discussion=discussion, bid_result=shown)
        bids(g, {"Player5": 3, "Player6": 1})
        own = [e for e in g.events if e.kind == "bid"]
        assert len(own) == 6 and all(e.visibility == e.actor for e in own)
        result = next(e for e in g.events if "wins the bid" in e.text or "speaking order, by bid" in e.text)
        assert result.visibility == ("public" if shown == "public" else "moderator")
        speaker = g.pending()[0]
        text = prompt(g, speaker)
        assert "Player6 bids 1." not in text  # another seat's bid
        assert ("bids: Player1: 0" in text or "by bid: Player5 (3)" in text) == (shown == "public")
        rules = rules_text(discussion=discussion, bid_result=shown)
        assert "a bid is seen by its bidder alone" in rules
        assert ("shown once everyone has bid" in rules) == (shown == "public")


def test_the_bid_prompt_says_what_the_bid_does():
    g = day_one(discussion="bid_turn", bid_tie="urgency", speech_turns=3)
    bids(g, {"Player3": 2})
    g.apply("Player3", "speak", text="Player6 is odd.")
    text = prompt(g, ask_of(g, "bid", "Player5"))
    assert "bid for the next speech (1 of at most 3 spoken today)" in text
    assert "a tie goes to a player named in the last speech (Player6)" in text
    assert "4: I must respond." in text and '"bid", a whole number from 0 to 4' in text
    r = day_one(discussion="bid_round", speech_rounds=2)
    assert "bid for your place in round 1 of 2" in prompt(r, ask_of(r, "bid", "Player5"))


def test_a_bid_outside_0_to_4_is_refused():
    g = day_one(discussion="bid_turn")
    for bad in (5, -1, None, 2.5, True):
        with pytest.raises(IllegalMove):
            g.apply("Player5", "bid", bid=bad)
    assert not any(e.kind == "bid" for e in g.events)
