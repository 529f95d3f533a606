"""The Hunter, tested from the rules text (the Hunter's sentence of the rules paragraph and docs/werewolf.md):
"When the Hunter is eliminated, killed at night or voted out, they shoot another living player, who dies at
once (not when the Witch poisoned them); the shot comes before the win is checked." Played by direct
``Game.apply()`` calls with fixed roles on competitive12 (seats below), and the shot's text as a seat is shown.

Seats: Player1-4 Werewolf, Player5-8 Villager, Player9 Seer, Player10 Witch, Player11 Hunter, Player12 Guard.
"""

from __future__ import annotations

import random

import pytest

from toolkit.prompting.structured_call import render
from toolkit.werewolf.engine.preset import load_preset
from toolkit.werewolf.engine.rules import PUBLIC, Game, IllegalMove
from toolkit.werewolf.players import heuristic
from tests.werewolf.completeness import missing
from toolkit.werewolf.seat.observation import observe

ROLES = {**{f"Player{i}": "Werewolf" for i in range(1, 5)}, **{f"Player{i}": "Villager" for i in range(5, 9)},
         "Player9": "Seer", "Player10": "Witch", "Player11": "Hunter", "Player12": "Guard"}
SENTENCE = ("When the Hunter is eliminated, killed at night or voted out, they shoot another living player, who "
            "dies at once (not when the Witch poisoned them); the shot comes before the win is checked.")


def game(roles=None, **flags) -> Game:
    return Game(load_preset("competitive12").model_copy(update=flags), 1, dict(roles or ROLES))


def night(g, hunt=None, save=None, poison=None, protect=None, verify="Player5"):
    """One night: every wolf proposes ``hunt``; the Witch saves (if offered) and poisons as told."""
    plan = {"hunt": hunt, "save": save, "poison": poison, "protect": protect, "verify": verify}
    while g.phase == "night":
        ask = g.pending()[0]
        target = plan[ask.action]
        if ask.action == "hunt" and target is None:
            target = ask.choices[0]
        if ask.action == "verify" and target not in ask.choices:
            target = ask.choices[0]
        g.apply(ask.seat, ask.action, target)


def talk(g):
    while g.phase == "day_speech":
        g.apply(g.pending()[0].seat, "speak", text="Hello.")


def vote_out(g, seat):
    for ask in g.pending():
        g.apply(ask.seat, "vote", seat if ask.seat != seat else ask.choices[0])


def rules_text(**flags) -> str:
    preset = load_preset("competitive12").model_copy(update=flags)
    return render("werewolf/rules.j2", preset={**preset.model_dump(), "n_players": preset.n_players})


def test_the_rules_paragraph_says_what_the_hunter_does_and_only_when_there_is_one():
    assert SENTENCE in rules_text()
    assert "Hunter" not in rules_text(roles={"Werewolf": 4, "Villager": 5, "Guard": 1, "Witch": 1, "Seer": 1})
    # side_kill's special roles include the Hunter
    assert "all villagers or all special roles (Guard, Witch, Seer, Hunter) are dead" in rules_text()


def test_a_hunter_voted_out_shoots_at_once_and_the_shot_is_a_public_events_row():
    g = game()
    night(g, hunt="Player5")
    talk(g)
    vote_out(g, "Player11")
    assert g.phase == "reaction" and g.deaths["Player11"] == (1, "vote")
    (ask,) = g.pending()
    assert (ask.seat, ask.action, ask.can_pass) == ("Player11", "shoot", False)
    assert set(ask.choices) == set(g.alive) and "Player11" not in ask.choices
    with pytest.raises(IllegalMove):
        g.apply("Player11", "shoot", None)  # the Hunter must shoot: no pass
    g.apply("Player11", "shoot", "Player1")
    shot = g.events[-1] if g.events[-1].kind == "shot" else next(e for e in g.events if e.kind == "shot")
    assert (shot.actor, shot.target, shot.visibility, shot.day) == ("Player11", "Player1", PUBLIC, 1)
    assert shot.text == "The Hunter Player11 shoots Player1."
    assert g.deaths["Player1"] == (1, "shot") and "Player1" not in g.alive
    # then the day goes on as after any exile: last words (competitive12 has them), then the night
    assert g.phase == "last_words" and g.pending()[0].seat == "Player11"
    g.apply("Player11", "speak", text="Bye.")
    assert g.phase == "night" and g.day == 2


def test_a_hunter_killed_at_night_shoots_at_dawn_before_anyone_speaks():
    g = game()
    night(g, hunt="Player11")
    assert g.deaths == {"Player11": (1, "werewolves")} and g.phase == "reaction"
    assert [a.action for a in g.pending()] == ["shoot"]
    assert not any(e.kind == "speech" for e in g.events)
    g.apply("Player11", "shoot", "Player2")
    assert g.deaths["Player2"] == (1, "shot") and g.phase == "day_speech"
    speakers = [g.pending()[0].seat]
    assert "Player2" not in g.speech_queue and "Player11" not in g.speech_queue and speakers[0] in g.alive


def test_a_poisoned_hunter_does_not_shoot():
    g = game()
    night(g, hunt="Player5", save=None, poison="Player11")
    assert g.deaths == {"Player5": (1, "werewolves"), "Player11": (1, "poison")}
    assert g.phase == "day_speech" and [a.action for a in g.pending()] == ["speak"]
    assert not any(e.kind == "shot" for e in g.events)


def test_a_hunter_attacked_and_poisoned_the_same_night_does_not_shoot():
    g = game()
    night(g, hunt="Player11", save=None, poison="Player11")
    assert g.deaths == {"Player11": (1, "poison")} and g.phase == "day_speech"


def test_a_shot_that_kills_the_last_werewolf_ends_the_game_at_once():
    roles = {"Player1": "Werewolf", "Player2": "Villager", "Player3": "Villager", "Player4": "Hunter"}
    g = Game(load_preset("competitive12").model_copy(update={"roles": {"Werewolf": 1, "Villager": 2, "Hunter": 1}}),
             1, roles)
    night(g, hunt="Player2")
    talk(g)
    vote_out(g, "Player4")
    g.apply("Player4", "shoot", "Player1")
    assert g.winner == "village" and g.events[-1].text.startswith("Game over: village win")
    assert g.pending() == [] and not any(e.phase == "last_words" for e in g.events)


def test_the_shot_comes_before_the_win_check_a_death_that_would_give_the_wolves_the_game():
    """The Hunter is the last special role: the exile alone would end the game (side_kill) for the wolves, but
    the shot is taken first and kills the last wolf: the village wins."""
    roles = {"Player1": "Werewolf", "Player2": "Villager", "Player3": "Villager", "Player4": "Hunter"}
    preset = load_preset("competitive12").model_copy(update={"roles": {"Werewolf": 1, "Villager": 2, "Hunter": 1}})
    g = Game(preset, 1, roles)
    night(g, hunt="Player2")
    talk(g)
    vote_out(g, "Player4")
    assert not g.over and g.phase == "reaction"  # not yet the wolves' win
    g.apply("Player4", "shoot", "Player1")
    assert g.winner == "village"
    # shooting a villager instead, the win is then checked: every special role is dead
    g = Game(preset, 1, roles)
    night(g, hunt="Player2")
    talk(g)
    vote_out(g, "Player4")
    g.apply("Player4", "shoot", "Player3")
    assert g.winner == "werewolves" and g.win_reason == "all villagers are dead"


def test_a_hunter_shot_on_the_last_day_counts_before_the_draw():
    g = game(max_days=1)
    night(g, hunt="Player5")
    talk(g)
    vote_out(g, "Player1")  # a wolf out on the last day: no win yet
    assert g.phase == "last_words"
    g = Game(load_preset("competitive12").model_copy(update={"roles": {"Werewolf": 1, "Villager": 2, "Hunter": 1},
                                                           "max_days": 1}),
             1, {"Player1": "Werewolf", "Player2": "Villager", "Player3": "Villager", "Player4": "Hunter"})
    night(g, hunt="Player3")
    talk(g)
    vote_out(g, "Player4")
    g.apply("Player4", "shoot", "Player1")
    assert g.winner == "village"  # the last day's shot won the game; without it the day limit would draw


def test_a_seat_is_shown_the_shot_and_the_hunter_is_asked_with_its_own_prompt():
    g = game()
    night(g, hunt="Player11")
    ask = g.pending()[0]
    preset = {**g.preset.model_dump(), "n_players": g.preset.n_players}
    text = render("werewolf/shoot.j2", obs=observe(g, ask.seat, ask), preset=preset,
                  rules=render("werewolf/rules.j2", preset=preset), reflection="", experiences=[], strategy="default")
    assert "you, the Hunter, have been eliminated. Shoot one other living player now" in text
    assert "How to play as Hunter:" in text and SENTENCE in text
    g.apply("Player11", "shoot", "Player5")
    talk_ask = g.pending()[0]
    shown = render("werewolf/speak.j2", obs=observe(g, talk_ask.seat, talk_ask), preset=preset,
                   rules=render("werewolf/rules.j2", preset=preset), reflection="", experiences=[], strategy="default")
    assert "- Day 1: The Hunter Player11 shoots Player5." in shown
    assert missing(shown, g.events, roles=g.roles, phase=g.phase, shown_name=g.shown_name) == []
    assert missing(shown.replace("- Day 1: The Hunter Player11 shoots Player5.\n", ""), g.events, roles=g.roles,
                   phase=g.phase, shown_name=g.shown_name) == ["day 1: The Hunter Player11 shoots Player5."]


def test_the_heuristic_hunter_shoots_its_most_suspected_seat():
    """Player9 (the Seer) called Player3 a werewolf; the heuristic Hunter, voted out, shoots Player3."""
    g = game()
    night(g, hunt="Player5", verify="Player3")
    while g.phase == "day_speech":
        seat = g.pending()[0].seat
        g.apply(seat, "speak", text="I am the Seer. Player3 is a werewolf." if seat == "Player9" else "Hello.")
    vote_out(g, "Player11")
    ask = g.pending()[0]
    assert heuristic.decide(observe(g, ask.seat, ask), random.Random(0)) == {"target": "Player3"}


def test_a_shot_stays_in_the_record_once_its_day_is_condensed():
    """Day 1: the Hunter is voted out and shoots; then nine quiet days (the Guard protects the victim, the votes
    tie): on day 10 day 1 is condensed, and the shot is still a line of the record."""
    g = game(guard_no_repeat=False, vote_tie="none", last_words=False)
    night(g, hunt="Player5", protect="Player5")
    talk(g)
    vote_out(g, "Player11")
    g.apply("Player11", "shoot", "Player8")
    while g.day < 10:
        night(g, hunt="Player6", protect="Player6")
        talk(g)
        living = [s for s in g.alive]
        for i, ask in enumerate(g.pending()):  # half for one, half for another: a tie
            target = living[0] if i % 2 else living[1]
            g.apply(ask.seat, "vote", target if target != ask.seat else living[2])
    night(g, hunt="Player6", protect="Player6")
    ask = g.pending()[0]
    preset = {**g.preset.model_dump(), "n_players": g.preset.n_players}
    shown = render("werewolf/speak.j2", obs=observe(g, ask.seat, ask), preset=preset,
                   rules=render("werewolf/rules.j2", preset=preset), reflection="", experiences=[], strategy="default")
    assert "(condensed;" in shown and "- Day 1: The Hunter Player11 shoots Player8." in shown
    assert missing(shown, g.events, roles=g.roles, phase=g.phase, shown_name=g.shown_name) == []
