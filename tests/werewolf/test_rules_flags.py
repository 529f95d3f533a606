"""Each preset flag changes what it should, and only that: games driven by direct ``Game.apply()`` calls with
fixed roles (Player1-2 wolves, Player3-4 villagers, Player5 Guard, Player6 Witch, Player7 Seer in classic7),
so every expected value below follows from the rules text, not from the engine. Also: preset validation and
loading, and the claims read from speech text."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from toolkit.werewolf.engine.claims import describe, extract
from toolkit.werewolf.engine.preset import Preset, available_presets, load_preset
from toolkit.werewolf.engine.rules import Ask, Game, IllegalMove

ROLES7 = {"Player1": "Werewolf", "Player2": "Werewolf", "Player3": "Villager", "Player4": "Villager",
          "Player5": "Guard", "Player6": "Witch", "Player7": "Seer"}


def new_game(seed=1, roles=ROLES7, **flags):
    preset = load_preset("classic7").model_copy(update=flags)
    return Game(preset, seed, dict(roles))


def night(game, hunt, protect=None, save=None, poison=None, verify=None):
    """Plays the current night with these choices (None passes where passing is allowed)."""
    day = game.day
    assert game.phase == "night"
    while game.phase == "night" and game.day == day and not game.over:
        ask = game.pending()[0]
        target = {"hunt": hunt, "protect": protect, "save": save, "poison": poison,
                  "verify": verify if verify is not None else ask.choices[0]}[ask.action]
        game.apply(ask.seat, ask.action, target)


def ring(game):
    """Every voter votes for the next living candidate after them: one vote each, a tie."""
    cands = list(game.vote_candidates)
    return {s: next(c for c in cands[cands.index(s) + 1:] + cands if c != s) for s in cands}


def day(game, votes=None, revotes=None, words="I have nothing to add."):
    """Speeches, then the votes (seat → target; the ring tie by default), then ``revotes`` (a plan or "ring")
    for a revote if there is one, then last words if asked."""
    speakers = []
    while game.phase == "day_speech":
        ask = game.pending()[0]
        speakers.append(ask.seat)
        game.apply(ask.seat, "speak", text=f"{ask.seat} speaks.")
    for plan in [votes or "ring"] + ([revotes] if revotes is not None else []):
        if game.phase not in ("day_vote", "day_revote"):
            break
        plan = ring(game) if plan == "ring" else plan
        for ask in game.pending():
            game.apply(ask.seat, "vote", plan[ask.seat])
    if game.phase == "last_words":
        game.apply(game.pending()[0].seat, "speak", text=words)
    return speakers


def asks(game):
    return {(a.seat, a.action): a for a in game.pending()}


def events(game, kind):
    return [e for e in game.events if e.kind == kind]


# ---------------------------------------------------------------- guard_no_repeat
@pytest.mark.parametrize("no_repeat", [True, False])
def test_guard_no_repeat_blocks_only_last_nights_target(no_repeat):
    game = new_game(guard_no_repeat=no_repeat)
    night(game, hunt="Player3", protect="Player3")
    assert "Player3" in game.alive  # protected
    day(game)
    protect = asks(game)[("Player5", "protect")]
    assert ("Player3" in protect.choices) is not no_repeat
    assert set(protect.choices) | {"Player3"} == set(game.alive)
    if no_repeat:
        with pytest.raises(IllegalMove, match="cannot protect Player3"):
            game.apply("Player5", "protect", "Player3")
    game.apply("Player5", "protect", None)  # passing tonight ...
    night(game, hunt="Player4")
    day(game)
    assert "Player3" in asks(game)[("Player5", "protect")].choices  # ... frees last night's target


def test_the_guard_may_protect_himself_and_a_protected_victim_survives_alone():
    game = new_game()
    assert "Player5" in asks(game)[("Player5", "protect")].choices
    night(game, hunt="Player5", protect="Player5")
    assert "Player5" in game.alive and "Nobody died last night." in game.events[-2].text + game.events[-1].text


# ---------------------------------------------------------------- witch_one_potion_per_night
@pytest.mark.parametrize("one_potion", [True, False])
def test_one_potion_per_night_withholds_the_poison_after_a_save(one_potion):
    game = new_game(witch_one_potion_per_night=one_potion)
    for seat, action, target in [("Player5", "protect", None), ("Player1", "hunt", "Player3"),
                                 ("Player2", "hunt", "Player3"), ("Player7", "verify", "Player1")]:
        game.apply(seat, action, target)
    assert list(asks(game)) == [("Player6", "save")] and asks(game)[("Player6", "save")].choices == ("Player3",)
    game.apply("Player6", "save", "Player3")
    if one_potion:
        assert game.phase == "day_speech"  # the night ended: no poison ask
    else:
        assert list(asks(game)) == [("Player6", "poison")]
        game.apply("Player6", "poison", "Player1")
    assert "Player3" in game.alive
    assert ("Player1" in game.alive) is one_potion
    assert game.state_of("Witch").antidote is False and game.state_of("Witch").poison is one_potion


def test_one_potion_per_night_still_offers_the_poison_when_the_save_is_passed():
    game = new_game(witch_one_potion_per_night=True)
    night(game, hunt="Player3", save=None, poison="Player2")
    assert [s for s in ROLES7 if s not in game.alive] == ["Player2", "Player3"]
    assert game.deaths == {"Player2": (1, "poison"), "Player3": (1, "werewolves")}
    assert game.state_of("Witch").antidote is True and game.state_of("Witch").poison is False


def test_potions_are_used_once_per_game():
    game = new_game()
    night(game, hunt="Player3", save="Player3", poison=None)
    day(game)
    # night 2: the antidote is gone, so the witch is asked only for the poison
    for seat, action, target in [("Player5", "protect", None), ("Player1", "hunt", "Player4"),
                                 ("Player2", "hunt", "Player4"), ("Player7", "verify", "Player2")]:
        game.apply(seat, action, target)
    assert list(asks(game)) == [("Player6", "poison")]
    game.apply("Player6", "poison", "Player1")
    assert (game.state_of("Witch").antidote, game.state_of("Witch").poison) == (False, False)
    day(game)
    while game.phase == "night":  # night 3: the witch has nothing left, so she is never asked
        assert not any(a.seat == "Player6" for a in game.pending())
        ask = game.pending()[0]
        game.apply(ask.seat, ask.action, None if ask.can_pass else ask.choices[0])
    assert game.day == 3
    assert [e.target for e in events(game, "save")] == ["Player3"]
    assert [e.target for e in events(game, "poison")] == ["Player1"]
    # the witch is told the victim only while she holds the antidote
    told = [e for e in game.events if e.visibility == "Player6" and e.kind == "announcement"]
    assert [e.day for e in told] == [1]


# ---------------------------------------------------------------- witch_no_self_save
@pytest.mark.parametrize("no_self_save", [True, False])
def test_witch_no_self_save(no_self_save):
    game = new_game(witch_no_self_save=no_self_save)
    for seat, action, target in [("Player5", "protect", None), ("Player1", "hunt", "Player6"),
                                 ("Player2", "hunt", "Player6"), ("Player7", "verify", "Player1")]:
        game.apply(seat, action, target)
    # she is told she is the victim either way
    assert any(e.visibility == "Player6" and e.target == "Player6" and e.kind == "announcement" for e in game.events)
    if no_self_save:
        assert list(asks(game)) == [("Player6", "poison")]
        with pytest.raises(IllegalMove):
            game.apply("Player6", "save", "Player6")
        game.apply("Player6", "poison", None)
        assert game.deaths["Player6"] == (1, "werewolves")
    else:
        assert asks(game)[("Player6", "save")].choices == ("Player6",)
        game.apply("Player6", "save", "Player6")
        game.apply("Player6", "poison", None)
        assert "Player6" in game.alive


# ---------------------------------------------------------------- night_reveal, exile_reveal
NAMED = {"no_reveal": {"Player3": "Player3", "Player7": "Player7", "Player2": "Player2"},
         "team": {"Player3": "Player3 (village)", "Player7": "Player7 (village)", "Player2": "Player2 (werewolves)"},
         "role": {"Player3": "Player3 (Villager)", "Player7": "Player7 (Seer)", "Player2": "Player2 (Werewolf)"}}


@pytest.mark.parametrize("night_level", list(NAMED))
@pytest.mark.parametrize("exile_level", list(NAMED))
def test_reveal_levels_name_role_team_or_nothing_in_every_public_death_line(night_level, exile_level):
    """night_reveal names night deaths (wolves' and poison), exile_reveal the day's eliminated, each at its own
    level: nothing, the side, or the role (Kaggle's night_elimination_reveal_level / day_exile_reveal_level)."""
    game = new_game(night_reveal=night_level, exile_reveal=exile_level, last_words=False)
    night(game, hunt="Player3", poison="Player7")
    n = NAMED[night_level]
    dawn = [e for e in game.events if e.phase == "dawn" and e.kind == "announcement"][0]
    assert dawn.text == f"Day 1 dawns. {n['Player3']} and {n['Player7']} died last night."
    assert [e.text for e in events(game, "death")] == [f"{n['Player3']} died.", f"{n['Player7']} died."]
    day(game, votes={s: "Player2" for s in ROLES7} | {"Player2": "Player4"})
    (out,) = events(game, "elimination")
    assert out.target == "Player2"
    assert out.text == f"Votes: Player2: 4, Player4: 1. {NAMED[exile_level]['Player2']} is eliminated."


@pytest.mark.parametrize("old, level", [(True, "role"), (False, "no_reveal")])
def test_the_old_reveal_roles_on_death_flag_reads_as_both_levels(old, level):
    """Presets and recorded games (the games table's preset) written before the two levels still load."""
    preset = Preset(name="x", roles={"Werewolf": 1, "Villager": 2}, reveal_roles_on_death=old)
    assert (preset.night_reveal, preset.exile_reveal) == (level, level)


def test_deaths_are_announced_in_seat_order_whoever_died_first():
    game = new_game()
    night(game, hunt="Player4", poison="Player3")
    assert [e.target for e in events(game, "death")] == ["Player3", "Player4"]
    assert game.deaths == {"Player3": (1, "poison"), "Player4": (1, "werewolves")}


# ---------------------------------------------------------------- speech_order
def test_fixed_speech_order_is_seat_order_among_the_living_every_day():
    game = new_game(speech_order="fixed")
    night(game, hunt="Player3")
    assert day(game) == ["Player1", "Player2", "Player4", "Player5", "Player6", "Player7"]
    night(game, hunt="Player7")
    assert day(game) == ["Player1", "Player2", "Player4", "Player5", "Player6"]
    orders = [e.text.split("Speaking order: ")[1] for e in game.events if "Speaking order" in e.text]
    assert orders == ["Player1, Player2, Player4, Player5, Player6, Player7.",
                      "Player1, Player2, Player4, Player5, Player6."]


def test_rotate_starts_a_later_day_with_a_different_speaker():
    """speech_order: rotate opens each day one seat later (docs/werewolf.md, "Rules and presets"). With nobody
    dead, a rotating order must not open day 2 with the same speaker as day 1, or the flag changes nothing."""
    game = new_game(speech_order="rotate")
    night(game, hunt="Player3", protect="Player3")
    first = day(game)
    night(game, hunt="Player3", save="Player3")
    second = day(game)
    assert len(first) == len(second) == 7
    assert second[0] != first[0]


# ---------------------------------------------------------------- vote_tie
def test_vote_tie_none_eliminates_nobody_and_the_night_follows():
    game = new_game(vote_tie="none")
    night(game, hunt="Player3", protect="Player3")
    day(game)
    assert not events(game, "elimination") and game.alive == list(ROLES7)
    assert any("are tied: nobody is eliminated" in e.text for e in game.events)
    assert (game.day, game.phase) == (2, "night")


def test_vote_tie_revote_is_among_the_leaders_and_a_second_tie_eliminates_nobody():
    game = new_game(vote_tie="revote")
    night(game, hunt="Player3", protect="Player3")
    votes = {"Player1": "Player3", "Player2": "Player3", "Player3": "Player1", "Player4": "Player1",
             "Player5": "Player6", "Player6": "Player7", "Player7": "Player5"}
    day(game, votes=votes)
    assert game.phase == "day_revote" and game.vote_candidates == ("Player1", "Player3")
    pending = asks(game)
    assert len(pending) == 7
    assert pending[("Player1", "vote")].choices == ("Player3",) and pending[("Player3", "vote")].choices == ("Player1",)
    assert pending[("Player5", "vote")].choices == ("Player1", "Player3")
    with pytest.raises(IllegalMove):
        game.apply("Player5", "vote", "Player6")
    tie = {"Player1": "Player3", "Player2": "Player3", "Player4": "Player3",
           "Player3": "Player1", "Player5": "Player1", "Player6": "Player1", "Player7": "Player1"}
    for ask in game.pending():
        game.apply(ask.seat, "vote", tie[ask.seat])
    (out,) = events(game, "elimination")
    assert out.target == "Player1" and out.text.startswith("Votes: Player1: 4, Player3: 3.")


def test_a_tied_revote_eliminates_nobody():
    game = new_game(vote_tie="revote")
    night(game, hunt="Player3", protect="Player3")
    day(game, revotes="ring")  # a seven-way tie, then the same tie again
    assert not events(game, "elimination") and (game.day, game.phase) == (2, "night")
    assert sum("Vote again among them" in e.text for e in game.events) == 1
    assert len(events(game, "vote")) == 14


def test_vote_tie_random_picks_a_leader_by_seed_and_day():
    picked = set()
    for seed in range(12):
        game = new_game(seed=seed, vote_tie="random")
        night(game, hunt="Player3", protect="Player3")
        votes = {"Player1": "Player3", "Player2": "Player3", "Player3": "Player4", "Player4": "Player3",
                 "Player5": "Player4", "Player6": "Player4", "Player7": "Player1"}
        day(game, votes=votes)
        (out,) = events(game, "elimination")
        assert out.target in ("Player3", "Player4")
        picked.add(out.target)
        again = new_game(seed=seed, vote_tie="random")
        night(again, hunt="Player3", protect="Player3")
        day(again, votes=votes)
        assert events(again, "elimination")[0].target == out.target
    assert picked == {"Player3", "Player4"}


# ---------------------------------------------------------------- last_words
@pytest.mark.parametrize("last_words", [True, False])
def test_last_words_only_for_the_player_voted_out(last_words):
    game = new_game(last_words=last_words)
    night(game, hunt="Player3")
    while game.phase == "day_speech":
        game.apply(game.pending()[0].seat, "speak", text="hi")
    for ask in game.pending():
        game.apply(ask.seat, "vote", "Player7" if ask.seat != "Player7" else "Player5")
    if last_words:
        assert game.phase == "last_words" and [(a.seat, a.action) for a in game.pending()] == [("Player7", "speak")]
        with pytest.raises(IllegalMove):
            game.apply("Player5", "speak", text="not my turn")
        game.apply("Player7", "speak", text="Watch\nPlayer1.")
        (words,) = [e for e in game.events if e.phase == "last_words"]
        assert (words.actor, words.kind, words.text) == ("Player7", "speech", "Watch Player1.")
    else:
        assert not any(e.phase == "last_words" for e in game.events)
    assert (game.day, game.phase) == (2, "night")
    # nobody killed at night gets last words
    assert not any(e.actor == "Player3" and e.kind == "speech" for e in game.events)


# ---------------------------------------------------------------- win_rule
@pytest.mark.parametrize("rule", ["side_kill", "parity"])
def test_killing_every_villager_wins_only_under_side_kill(rule):
    game = new_game(win_rule=rule)
    night(game, hunt="Player3")
    day(game, votes={s: "Player4" for s in ROLES7} | {"Player4": "Player5"})
    if rule == "side_kill":
        assert (game.winner, game.win_reason) == ("werewolves", "all villagers are dead")
        assert game.day == 1 and game.pending() == []
    else:
        assert game.winner is None and game.phase == "night"  # 2 wolves against 3 specials


def test_side_kill_also_ends_when_every_special_role_is_dead():
    game = new_game(win_rule="side_kill")
    night(game, hunt="Player5", poison="Player7")  # the witch poisons the seer
    day(game, votes={s: "Player6" for s in ROLES7} | {"Player6": "Player1"})
    assert (game.winner, game.win_reason) == ("werewolves", "all special roles are dead")


def test_parity_ends_when_wolves_match_the_rest():
    game = new_game(win_rule="parity")
    night(game, hunt="Player3", poison="Player4")  # 2 wolves, 3 others
    assert game.winner is None
    day(game, votes={s: "Player5" for s in ROLES7} | {"Player5": "Player1"})
    assert (game.winner, game.win_reason) == ("werewolves", "werewolves are as many as the rest")
    assert game.alive == ["Player1", "Player2", "Player6", "Player7"]


def test_the_village_wins_when_the_last_wolf_dies_at_dawn():
    game = new_game()
    night(game, hunt="Player3", poison="Player1")
    day(game, votes={s: "Player2" for s in ROLES7} | {"Player2": "Player4"})
    assert (game.winner, game.win_reason) == ("village", "all werewolves are dead")
    assert game.events[-1].text == "Game over: village win (all werewolves are dead)."
    with pytest.raises(IllegalMove):
        game.apply("Player3", "speak", text="too late")


# ---------------------------------------------------------------- max_days
@pytest.mark.parametrize("max_days", [1, 2])
def test_max_days_ends_in_a_draw_after_that_many_days(max_days):
    game = new_game(max_days=max_days)
    for _ in range(max_days):
        night(game, hunt="Player3", protect="Player3")
        day(game)
    assert (game.winner, game.win_reason, game.day) == ("draw", f"max_days={max_days} reached", max_days)
    assert not [e for e in game.events if e.text == f"Night {max_days + 1} falls."]


# ---------------------------------------------------------------- night details
def test_wolf_proposals_plurality_and_who_sees_what():
    roles = {f"Player{i}": r for i, r in enumerate(["Werewolf"] * 3 + ["Villager"] * 3 + ["Guard", "Witch", "Seer"],
                                                     1)}
    game = Game(load_preset("standard9"), 1, roles)
    assert [a.seat for a in game.pending() if a.action == "hunt"] == ["Player1"]  # one wolf at a time
    game.apply("Player1", "hunt", "Player4")
    game.apply("Player2", "hunt", "Player5")
    assert not any(a.action in ("save", "poison") for a in game.pending())  # the witch waits for the last wolf
    game.apply("Player3", "hunt", "Player4")
    assert game.victim() == "Player4"
    kill = events(game, "kill")[0]
    assert kill.target == "Player4" and kill.visibility == "werewolves"
    assert kill.visible_to("Player2", "Werewolf") and not kill.visible_to("Player4", "Villager")
    game.apply("Player9", "verify", "Player2")
    check = events(game, "check")[0]
    assert check.text == "Player2 is werewolf." and check.visibility == "Player9" and game.state_of("Seer").checks == {
        "Player2": "werewolf"}
    assert check.visible_to("Player9", "Seer") and not check.visible_to("Player1", "Werewolf")


def test_a_dead_seer_guard_and_witch_are_not_asked_at_night():
    game = new_game()
    night(game, hunt="Player5", poison="Player7")
    day(game)
    assert game.phase == "night" and {(a.seat, a.action) for a in game.pending()} == {("Player1", "hunt")}
    game.apply("Player1", "hunt", "Player3")
    assert {(a.seat, a.action) for a in game.pending()} == {("Player2", "hunt")}
    game.apply("Player2", "hunt", "Player3")
    assert game.pending() == [Ask("Player6", "save", ("Player3",), can_pass=True)]  # her poison is spent
    game.apply("Player6", "save", None)
    assert game.phase == "day_speech" and game.deaths["Player3"] == (2, "werewolves")


def test_fixed_roles_must_match_the_preset():
    preset = load_preset("classic7")
    with pytest.raises(ValueError, match="do not match preset classic7"):
        Game(preset, 1, ROLES7 | {"Player3": "Seer"})
    with pytest.raises(ValueError, match="do not match"):
        Game(preset, 1, {k: v for k, v in ROLES7.items() if k != "Player7"})


# ---------------------------------------------------------------- presets
def test_shipped_presets_load_with_their_documented_flags():
    assert {"classic7", "standard9"} <= set(available_presets())
    classic, standard = load_preset("classic7"), load_preset("standard9")
    assert classic.n_players == 7 and standard.n_players == 9
    assert classic.seats == [f"Player{i}" for i in range(1, 8)]
    assert classic.role_list() == ["Werewolf"] * 2 + ["Villager"] * 2 + ["Guard", "Witch", "Seer"]
    assert (standard.guard_no_repeat, standard.witch_one_potion_per_night, standard.witch_no_self_save,
            standard.vote_tie, standard.last_words, standard.max_days) == (True, True, True, "revote", True, 12)
    assert (classic.vote_tie, classic.last_words, classic.win_rule, classic.max_days) == (
        "none", False, "side_kill", 10)


def test_a_preset_loads_from_a_yaml_path(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text("name: tiny\nroles: {Werewolf: 1, Villager: 2}\nvote_tie: random\nmax_days: 2\n")
    preset = load_preset(str(path))
    assert (preset.name, preset.n_players, preset.vote_tie, preset.max_days) == ("tiny", 3, "random", 2)
    assert preset.role_list() == ["Werewolf", "Villager", "Villager"]
    with pytest.raises(ValueError, match="no preset 'nope'.*classic7"):
        load_preset("nope")


@pytest.mark.parametrize("roles,match", [
    ({"Werewolf": 1, "Villagr": 2}, "unknown role 'Villagr'.*Villager"),
    ({"Werewolf": 1, "Villager": -1, "Seer": 1}, "cannot be negative"),
    ({"Werewolf": 10, "Villager": 21}, "at most 30 seats"),
    ({"Villager": 3}, "at least one Werewolf"),
    ({"Werewolf": 2}, "at least one player on the village side"),
])
def test_bad_role_counts_are_refused_with_a_reason(roles, match):
    with pytest.raises(ValidationError, match=match):
        Preset(name="bad", roles=roles)


def test_unknown_flags_and_bad_flag_values_are_refused():
    with pytest.raises(ValidationError, match="extra"):
        Preset(name="x", roles={"Werewolf": 1, "Villager": 2}, witch_saves_twice=True)
    for field, value in (("vote_tie", "coin"), ("speech_order", "alphabetical"), ("win_rule", "majority"),
                         ("wolf_tie", "first"), ("night_reveal", "side"), ("speech_rounds", 0), ("day_vote", "open"),
                         ("max_days", 0)):
        with pytest.raises(ValidationError, match=field):
            Preset(name="x", roles={"Werewolf": 1, "Villager": 2}, **{field: value})


# ---------------------------------------------------------------- claims
def test_claims_read_roles_accusations_clearances_and_suspicions():
    text = "I am the Seer. Player3 is a werewolf, Player4 is good. I suspect Player5; vote for Player3."
    assert extract("Player2", text) == (
        ("Player2", "role", "Seer"), ("Player2", "accuse", "Player3"), ("Player2", "clear", "Player4"),
        ("Player2", "suspect", "Player5"), ("Player2", "suspect", "Player3"))
    assert extract("Player1", "i am a werewolf. player6 IS THE WOLF") == (
        ("Player1", "role", "Werewolf"), ("Player1", "accuse", "Player6"))


def test_claims_about_oneself_and_non_claims_are_ignored():
    assert extract("Player3", "Player3 is good. I suspect Player3.") == ()
    assert extract("Player1", "I am not sure. Player2 is wolfish. Player12 is innocent.") == (
        ("Player1", "clear", "Player12"),)
    assert extract("Player1", "Vote for Player2. vote for Player2.") == (("Player1", "suspect", "Player2"),)


def test_describe_claims():
    assert [describe(c) for c in [("P1", "role", "Seer"), ("P1", "accuse", "P2"), ("P1", "clear", "P3"),
                                  ("P1", "suspect", "P4")]] == [
        "P1 claimed Seer", "P1 called P2 a werewolf", "P1 called P3 good", "P1 suspected P4"]
