"""Property tests of the rules engine (toolkit.werewolf.engine.rules.Game): random presets, random seeds and random
legal decision sequences, checked against invariants that hold for every game.

Pinned here: dead players are never asked and cannot act; every ask's choices are legal living seats; an
illegal move leaves the state unchanged; event seqs are contiguous; the game ends with exactly one winner and
one game-over line, and the win rule holds then (and never held earlier); deaths match the death/elimination
events; at night the witch acts only after the wolves' kill and everything happens before dawn; each potion is
used at most once; every living player speaks once a day and votes once a round; a Hunter eliminated other than
by poison shoots once, at once, and the win waits for the shot; and the same seed with the same decisions gives
the same events.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.werewolf.players import heuristic
from toolkit.werewolf.seat.observation import observe
from toolkit.werewolf.engine.preset import SPECIAL_ROLES, Preset, load_preset
from toolkit.werewolf.engine.rules import MODERATOR, PUBLIC, WOLVES, Game, IllegalMove
from toolkit.werewolf.engine.speech import clean_speech

SETTINGS = settings(derandomize=True, database=None, deadline=None, max_examples=150)


@st.composite
def presets(draw):
    roles = {"Werewolf": draw(st.integers(1, 3)), "Villager": draw(st.integers(0, 3))}
    for role in SPECIAL_ROLES:
        roles[role] = draw(st.integers(0, 1))
    if sum(roles.values()) - roles["Werewolf"] < 1:
        roles["Villager"] = 1
    return Preset(
        name="prop", roles=roles,
        guard_no_repeat=draw(st.booleans()), witch_one_potion_per_night=draw(st.booleans()),
        witch_no_self_save=draw(st.booleans()),
        night_reveal=draw(st.sampled_from(["no_reveal", "team", "role"])),
        exile_reveal=draw(st.sampled_from(["no_reveal", "team", "role"])),
        doctor_self_save=draw(st.booleans()), doctor_consecutive_saves=draw(st.booleans()),
        seer_learns=draw(st.sampled_from(["side", "role"])),
        wolf_tie=draw(st.sampled_from(["last_proposal", "none", "random"])),
        wolf_vote=draw(st.sampled_from(["sequential", "simultaneous"])),
        wolf_order=draw(st.sampled_from(["fixed", "rotate", "random"])),
        speech_order=draw(st.sampled_from(["rotate", "fixed", "random"])), speech_rounds=draw(st.integers(1, 3)),
        discussion=draw(st.sampled_from(["round_robin", "parallel", "bid_turn", "bid_round"])),
        speech_turns=draw(st.integers(1, 4)), bid_result=draw(st.sampled_from(["public", "private"])),
        bid_tie=draw(st.sampled_from(["name", "urgency"])),
        vote_abstain=draw(st.booleans()), self_vote=draw(st.booleans()),
        day_vote=draw(st.sampled_from(["simultaneous", "sequential"])),
        vote_order=draw(st.sampled_from(["fixed", "rotate", "random"])),
        vote_tie=draw(st.sampled_from(["none", "revote", "random"])), last_words=draw(st.booleans()),
        win_rule=draw(st.sampled_from(["side_kill", "parity"])),
        protect_and_save=draw(st.sampled_from(["survive", "die"])), max_days=draw(st.integers(1, 6)))


def expected_winner(preset: Preset, roles: dict[str, str], alive: list[str]) -> str | None:
    """The win rule, written out from docs/werewolf.md (``win_rule``) independently of Game._check_win."""
    wolves = [s for s in alive if roles[s] == "Werewolf"]
    rest = [s for s in alive if roles[s] != "Werewolf"]
    if not wolves:
        return "village"
    if preset.win_rule == "parity":
        return "werewolves" if len(wolves) >= len(rest) else None
    villagers_gone = preset.roles.get("Villager", 0) > 0 and not any(roles[s] == "Villager" for s in rest)
    specials_gone = (sum(preset.roles.get(r, 0) for r in SPECIAL_ROLES) > 0
                     and not any(roles[s] in SPECIAL_ROLES for s in rest))
    return "werewolves" if villagers_gone or specials_gone else None


def check_asks(game: Game) -> None:
    asks = game.pending()
    assert asks, "a game that is not over always waits for a decision"
    seen = set()
    for ask in asks:
        if game.phase == "last_words":  # the one dead seat that is asked: the player just voted out
            assert ask.action == "speak" and game.deaths[ask.seat] == (game.day, "vote")
        elif ask.action == "shoot":  # the other: a Hunter just eliminated, not by poison, shooting alone
            assert game.phase == "reaction" and len(asks) == 1 and game.roles[ask.seat] == "Hunter"
            day, cause = game.deaths[ask.seat]
            assert day == game.day and cause != "poison" and not ask.can_pass
            assert set(ask.choices) == set(game.alive) and ask.choices
        else:
            assert ask.seat in game.alive, f"dead {ask.seat} asked to {ask.action}"
        assert (ask.seat, ask.action) not in seen
        seen.add((ask.seat, ask.action))
        assert set(ask.choices) <= set(game.alive), (ask, game.alive)
        assert len(set(ask.choices)) == len(ask.choices)
        role = game.roles[ask.seat]
        if ask.action in ("verify", "poison") or ask.action == "vote" and not game.preset.self_vote:
            assert ask.seat not in ask.choices
        if ask.action == "hunt":
            assert role == "Werewolf" and ask.choices
            assert all(game.roles[c] != "Werewolf" for c in ask.choices)
        if ask.action == "protect":
            assert role in ("Guard", "Doctor") and ask.can_pass
            if role == "Guard" and game.preset.guard_no_repeat and game.state_of("Guard").last_protected:
                assert game.state_of("Guard").last_protected not in ask.choices
            if role == "Doctor":
                may_self = game.preset.doctor_self_save and (game.preset.doctor_consecutive_saves
                                                             or game.state_of("Doctor").last_protected != ask.seat)
                assert (ask.seat in ask.choices) == may_self
                if not game.preset.doctor_consecutive_saves and game.state_of("Doctor").last_protected:
                    assert game.state_of("Doctor").last_protected not in ask.choices
        if ask.action in ("save", "poison"):
            assert role == "Witch" and ask.can_pass
        if ask.action == "save":
            assert ask.choices == (game.victim(),) and game.state_of("Witch").antidote
            if game.preset.witch_no_self_save:
                assert ask.choices != (ask.seat,)
        if ask.action == "poison":
            assert game.state_of("Witch").poison
        if ask.action == "verify":
            assert role == "Seer"
        if ask.action == "vote":
            assert game.phase in ("day_vote", "day_revote") and ask.can_pass == game.preset.vote_abstain
            assert len(asks) == 1 or game.preset.day_vote == "simultaneous"
            assert set(ask.choices) == set(game.vote_candidates) - (set() if game.preset.self_vote else {ask.seat})
        if ask.action == "bid":  # every living seat at once, and nothing else meanwhile
            assert game.phase == "day_speech" and game.preset.discussion in ("bid_turn", "bid_round")
            assert {a.seat for a in asks} <= set(game.alive) and {a.action for a in asks} == {"bid"}
        if ask.action == "speak":
            assert game.phase in ("day_speech", "last_words")
            assert len(asks) == 1 or game.preset.discussion == "parallel" and game.phase == "day_speech"


def try_illegal(game: Game, rng: random.Random) -> None:
    """A dead seat acting, an illegal target, a seat acting out of turn: refused, nothing changes."""
    before = (len(game.events), list(game.alive), game.phase, game.day, game.pending())
    dead = [s for s in game.seats if s not in game.alive]
    attempts = []
    if dead:
        seat = rng.choice(dead)
        attempts += [(seat, a, rng.choice(game.seats)) for a in ("vote", "hunt", "speak", "protect")]
    ask = rng.choice(game.pending())
    if ask.action != "speak":
        outside = [s for s in game.seats + ["Player99"] if s not in ask.choices]
        attempts.append((ask.seat, ask.action, rng.choice(outside)))
        if not ask.can_pass:
            attempts.append((ask.seat, ask.action, None))
    attempts.append((ask.seat, "poison" if ask.action != "poison" else "speak", None))
    for seat, action, target in attempts:
        ask = next((a for a in game.pending() if a.seat == seat and a.action == action), None)
        if ask is not None and (action == "speak" or target in ask.choices or (target is None and ask.can_pass)):
            continue  # legal after all (e.g. the eliminated seat's last words)
        with pytest.raises(IllegalMove):
            game.apply(seat, action, target, "x")
        assert (len(game.events), list(game.alive), game.phase, game.day, game.pending()) == before


def play_random(preset: Preset, seed: int, decision_seed: int, probe: bool = True):
    """Plays a game to the end with random legal decisions; returns the game and the decisions taken."""
    game = Game(preset, seed)
    rng = random.Random(decision_seed)
    decisions = []
    steps = 0
    while not game.over:
        check_asks(game)
        # (a Hunter's shot is taken before the win is checked)
        assert (expected_winner(preset, game.roles, game.alive) is None or game.phase == "night" and game.day == 1
                or game.phase == "reaction")
        if probe and rng.random() < 0.2:
            try_illegal(game, rng)
        ask = rng.choice(game.pending())
        bid = None
        if ask.action == "speak":
            target, text = None, rng.choice(["I am the Seer. Player2 is a werewolf.", "Hello\nthere", ""])
        elif ask.action == "bid":
            target, text, bid = None, "", rng.choice([0, 0, 1, 2, 3, 4])
        else:
            options = list(ask.choices) + ([None] if ask.can_pass else [])
            target, text = rng.choice(options), ""
        decisions.append((ask.seat, ask.action, target, text, bid))
        game.apply(ask.seat, ask.action, target, text, bid=bid)
        steps += 1
        assert steps < 2000
    return game, decisions


def replay_decisions(preset, seed, decisions):
    game = Game(preset, seed)
    for seat, action, target, text, bid in decisions:
        game.apply(seat, action, target, text, bid=bid)
    return game


def nights(game: Game):
    """Events grouped by night: from a 'Night N falls' line (or the start) to its dawn announcement."""
    groups, current = [], None
    for e in game.events:
        if e.kind == "announcement" and ("falls" in e.text):
            current = []
            groups.append(current)
        elif current is not None:
            current.append(e)
            if e.phase == "dawn" and e.kind == "announcement":
                current = None
    return groups


@SETTINGS
@given(preset=presets(), seed=st.integers(0, 10_000), decision_seed=st.integers(0, 10_000))
@pytest.mark.slow
def test_random_legal_games_keep_every_invariant(preset, seed, decision_seed):
    game, decisions = play_random(preset, seed, decision_seed)
    events = game.events

    # event seqs are contiguous from 0, days never go back
    assert [e.seq for e in events] == list(range(len(events)))
    assert all(a.day <= b.day for a, b in zip(events, events[1:]))
    assert all(e.visibility in (PUBLIC, WOLVES, MODERATOR) or e.visibility in game.seats for e in events)

    # exactly one winner, one game-over line, and it is the last event
    assert game.over and game.winner in ("village", "werewolves", "draw") and game.pending() == []
    over = [e for e in events if e.text.startswith("Game over")]
    assert len(over) == 1 and over[0] is events[-1] and game.winner in over[0].text

    # the win rule holds at the end; a draw only at max_days with no side winning
    expected = expected_winner(preset, game.roles, game.alive)
    if game.winner == "draw":
        assert expected is None and game.day == preset.max_days
    else:
        assert expected == game.winner

    # deaths: the dead are exactly those with one death/elimination/shot event, on the recorded day and cause
    dead = [s for s in game.seats if s not in game.alive]
    assert set(dead) == set(game.deaths)
    for seat in dead:
        ends = [e for e in events if e.kind in ("death", "elimination", "shot") and e.target == seat]
        assert len(ends) == 1
        day, cause = game.deaths[seat]
        assert ends[0].day == day
        assert (ends[0].kind == "elimination") == (cause == "vote")
        assert (ends[0].kind == "shot") == (cause == "shot")
        # a Hunter eliminated other than by poison shoots once, right after its death; a poisoned one never
        shots = [e for e in events if e.kind == "shot" and e.actor == seat]
        if game.roles[seat] == "Hunter":
            assert len(shots) == (0 if cause == "poison" else 1)
            if shots:
                assert shots[0].seq > ends[0].seq and shots[0].day == day and shots[0].visibility == PUBLIC
                between = events[ends[0].seq + 1:shots[0].seq]
                assert not any(e.kind in ("speech", "vote", "announcement") and e.phase != "dawn"
                               for e in between), between
        else:
            assert not shots
        if cause == "poison":
            assert any(e.kind == "poison" and e.target == seat and e.day == day for e in events)
        if cause == "werewolves":
            assert any(e.kind == "kill" and e.target == seat and e.day == day for e in events)
        # the dead never act again, except an eliminated player's last words
        after = [e for e in events if e.seq > ends[0].seq and e.actor == seat and e.kind != "shot"]
        assert all(e.kind == "speech" and e.phase == "last_words" for e in after), after
        assert len(after) <= (1 if preset.last_words and cause == "vote" else 0)
    assert not any(e.kind == "speech" and e.phase == "last_words" for e in events) or preset.last_words

    # each potion at most once a game; both in one night only when the preset allows it
    assert sum(e.kind == "save" for e in events) <= 1 and sum(e.kind == "poison" for e in events) <= 1
    for night in nights(game):
        kinds = [e.kind for e in night]
        if preset.witch_one_potion_per_night:
            assert not ("save" in kinds and "poison" in kinds)
        # night order: the witch acts after the wolves' kill; dawn closes the night
        if "save" in kinds or "poison" in kinds:
            first_potion = min(i for i, k in enumerate(kinds) if k in ("save", "poison"))
            tied = [e for e in night[:first_potion] if e.text.startswith("The werewolves' votes are tied")]
            assert "kill" in kinds[:first_potion] or (tied and preset.wolf_tie == "none")
        proposals = [e.target for e in night if e.kind == "hunt_proposal"]
        top = [t for t in proposals if Counter(proposals)[t] == max(Counter(proposals).values(), default=0)]
        if "kill" in kinds:
            assert kinds.count("hunt_proposal") >= 1 and kinds.count("kill") == 1
            kill = night[kinds.index("kill")]
            if preset.wolf_tie == "last_proposal" or len(set(top)) == 1:
                assert kill.target == top[-1]
            else:  # a split vote: a draw among the tied (wolf_tie: random); wolf_tie: none kills nobody
                assert preset.wolf_tie == "random" and kill.target in top
        elif proposals:  # the wolves voted and nobody was attacked: only a split vote under wolf_tie: none
            assert preset.wolf_tie == "none" and len(set(top)) > 1
        night_only = {"protect", "heal", "hunt_proposal", "kill", "check", "save", "poison"}
        assert not any(e.kind in night_only and e.phase != "night" for e in events)

    # every living player speaks speech_rounds times a day (bid_turn: at most speech_turns speeches in all, each
    # after a bid of every living seat); every living player votes once a round, for themselves only under
    # self_vote, abstaining only under vote_abstain
    for day in range(1, game.day + 1):
        speakers = [e.actor for e in events if e.kind == "speech" and e.day == day and e.phase == "speech"]
        if preset.discussion == "bid_turn":
            assert len(speakers) <= preset.speech_turns
            day_bids = [e for e in events if e.kind == "bid" and e.day == day]
            assert len(day_bids) >= len(speakers) and all(e.visibility == e.actor for e in day_bids)
        else:
            assert all(n == preset.speech_rounds for n in Counter(speakers).values())
        votes = [e for e in events if e.kind == "vote" and e.day == day]
        assert preset.self_vote or all(v.actor != v.target for v in votes)
        assert preset.vote_abstain or all(v.target is not None for v in votes)

    # determinism: the same seed and the same decisions give the same events
    again = replay_decisions(preset, seed, decisions)
    assert again.events == events and again.roles == game.roles and again.deaths == game.deaths


@settings(derandomize=True, database=None, deadline=None, max_examples=25)
@given(seed=st.integers(0, 100_000))
def test_role_assignment_is_a_seeded_permutation_of_the_preset(seed):
    for name in ("classic7", "standard9"):
        preset = load_preset(name)
        a, b = Game(preset, seed), Game(preset, seed)
        assert a.roles == b.roles
        assert list(a.roles) == preset.seats
        assert Counter(a.roles.values()) == Counter(preset.role_list())


def test_different_seeds_deal_different_roles():
    preset = load_preset("classic7")
    deals = {tuple(Game(preset, s).roles.values()) for s in range(30)}
    assert len(deals) > 10


@SETTINGS
@given(preset=presets(), seed=st.integers(0, 1000), decision_seed=st.integers(0, 1000))
@pytest.mark.slow
def test_a_different_decision_changes_the_record_only_from_that_point(preset, seed, decision_seed):
    """Determinism the other way round: the events before a changed decision are the same."""
    game, decisions = play_random(preset, seed, decision_seed, probe=False)
    rng = random.Random(decision_seed + 1)
    speaks = [i for i, d in enumerate(decisions) if d[1] == "speak"]
    if not speaks:
        return
    i = rng.choice(speaks)
    before = replay_decisions(preset, seed, decisions[:i])
    n = len(before.events)
    seat, action, target, text, _ = decisions[i]
    # the same seats named (an urgency bid tie goes to a seat the last speech named), other words
    new = clean_speech(f"{text} A different speech.")
    before.apply(seat, action, target, new)
    for s, a, t, x, b in decisions[i + 1:]:  # a speech's words change no rule: the rest stays legal
        before.apply(s, a, t, x, bid=b)
    assert before.events[:n] == game.events[:n]
    # the first difference is that speech (at once, or when its parallel round is shown)
    changed = [k for k, (a, b) in enumerate(zip(before.events, game.events)) if a != b]
    assert changed and changed[0] >= n and before.events[changed[0]].text == new


# ---------------------------------------------------------------- the rule-based player on random rule sets
@settings(derandomize=True, database=None, deadline=None, max_examples=30)
@given(preset=presets(), seed=st.integers(0, 10_000))
@pytest.mark.slow
def test_the_heuristic_player_answers_legally_under_any_preset(preset, seed):
    """Every heuristic answer to every ask the rules produce is legal, and its known-role habits hold: the Seer
    never re-checks while an unchecked choice is left, the Witch saves on night 1, and a wolf votes for a
    teammate only when that teammate was called a werewolf (the bus)."""
    game = Game(preset, seed)
    while not game.over:
        for ask in game.pending():
            if not any(a == ask for a in game.pending()):
                continue
            obs = observe(game, ask.seat, ask)
            answer = heuristic.decide(obs, random.Random(f"{seed}:{len(game.events)}:{ask.seat}"))
            if ask.action == "speak":
                assert isinstance(answer["speech"], str) and answer["speech"]
                game.apply(ask.seat, "speak", text=answer["speech"])
                continue
            if ask.action == "bid":
                assert answer["bid"] in range(5)
                game.apply(ask.seat, "bid", bid=answer["bid"])
                continue
            target = answer["target"]
            assert target in ask.choices or (target is None and ask.can_pass), (ask, target)
            if ask.action == "verify":
                unchecked = [c for c in ask.choices if c not in game.state_of("Seer").checks]
                assert not unchecked or target in unchecked
            if ask.action == "save" and game.day == 1:
                assert target == ask.choices[0]
            if ask.action == "vote":
                assert target is not None and target != ask.seat  # the heuristic never abstains nor votes itself
            if ask.action == "vote" and game.roles[ask.seat] == "Werewolf" and game.roles[target] == "Werewolf":
                assert any(kind == "accuse" and value == target for _, kind, value in obs["claims"])
            game.apply(ask.seat, ask.action, target)
    assert game.winner in ("village", "werewolves", "draw")


# ---------------------------------------------------------------- speeches as stored by the rules
@settings(derandomize=True, database=None, deadline=None, max_examples=80)
@given(text=st.text(max_size=900), limit=st.integers(10, 700))
def test_any_speech_is_stored_as_one_clean_capped_line(text, limit):
    cleaned = clean_speech(text, limit)
    assert clean_speech(cleaned, limit) == cleaned  # idempotent
    assert len(cleaned) <= limit and cleaned == cleaned.strip()
    assert not any(ch in cleaned for ch in "\n\r\t\x1b\x00«»\u2028\u2029\u202e\u200b")
    assert "  " not in cleaned
    words = " ".join(text.split())
    if words.isascii() and words.isprintable() and len(words) <= limit:
        assert cleaned == words  # plain text is kept as it was said, spaces collapsed


@settings(derandomize=True, database=None, deadline=None, max_examples=20)
@given(text=st.text(max_size=300))
def test_the_rules_store_exactly_the_cleaned_speech(text):
    game = Game(load_preset("classic7"), 1)
    while game.phase == "night":
        ask = game.pending()[0]
        game.apply(ask.seat, ask.action, None if ask.can_pass else ask.choices[0])
    seat = game.pending()[0].seat
    game.apply(seat, "speak", text=text)
    assert (game.events[-1].kind, game.events[-1].actor, game.events[-1].text) == ("speech", seat, clean_speech(text))


def test_the_heuristic_reads_a_seer_reveal_through_real_observations():
    """One scripted night, then the rule-based players decide from what they observe: the Seer reveals the wolf
    she found, the village votes it out, the other wolf votes for the Seer, and on night 2 the Guard protects
    the Seer, the wolf hunts her and the Witch saves her."""
    roles = {"Player1": "Werewolf", "Player2": "Werewolf", "Player3": "Villager", "Player4": "Villager",
             "Player5": "Guard", "Player6": "Witch", "Player7": "Seer"}
    game = Game(load_preset("classic7"), 1, roles)
    plan = {"protect": None, "hunt": "Player3", "verify": "Player1", "save": None, "poison": None}
    while game.phase == "night":
        ask = game.pending()[0]
        game.apply(ask.seat, ask.action, plan[ask.action])

    def decide(ask):
        return heuristic.decide(observe(game, ask.seat, ask), random.Random(0))

    while game.phase == "day_speech":
        ask = game.pending()[0]
        text = decide(ask)["speech"] if ask.seat == "Player7" else "Hello."
        game.apply(ask.seat, "speak", text=text)
    assert game.events[-1].text == "I am the Seer. Player1 is a werewolf. Vote for Player1."
    votes = {}
    for ask in game.pending():
        votes[ask.seat] = decide(ask)["target"]
    assert votes == {"Player1": "Player7", "Player2": "Player7", "Player4": "Player1", "Player5": "Player1",
                     "Player6": "Player1", "Player7": "Player1"}
    for seat, target in votes.items():
        game.apply(seat, "vote", target)
    assert game.deaths["Player1"] == (1, "vote") and game.phase == "night"
    night = {}
    while game.phase == "night":
        ask = game.pending()[0]
        night[ask.action] = decide(ask)["target"]
        game.apply(ask.seat, ask.action, night[ask.action])
    assert (night["protect"], night["hunt"], night["save"]) == ("Player7", "Player7", "Player7")
    assert "Player7" in game.alive
