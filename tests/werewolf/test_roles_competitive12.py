"""competitive12 (4 Werewolf, 4 Villager, Guard, Witch, Seer, Hunter) played by the rule-based player in every
seat: every role acts, both sides win some games (the rate and its interval in the message), and the same seed
gives the same game. Information hiding, replay and fork for it are in tests/werewolf/test_game.py with the other
presets.

The games are played through the rules and the observation directly (the heuristic player's ``decide`` on each
seat's real observation, as its backend does, without prompts or tables): 200 games in a few seconds."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest
from toolkit.analysis.intervals import wilson
from toolkit.werewolf.engine.preset import load_preset
from toolkit.werewolf.engine.rules import Game
from toolkit.werewolf.players import heuristic
from toolkit.werewolf.seat.observation import observe

GAMES = 200  # the village wins about 2 in 100 heuristic games here: 200 show it with room (seeds fixed)


def play(seed: int) -> Game:
    game = Game(load_preset("competitive12"), seed)
    while not game.over:
        for ask in game.pending():
            if ask not in game.pending():  # a decision just applied changed what is asked
                continue
            answer = heuristic.decide(observe(game, ask.seat, ask), random.Random(f"{seed}:{len(game.events)}"
                                                                                   f":{ask.seat}"))
            game.apply(ask.seat, ask.action, answer.get("target"), answer.get("speech", ""))
    return game


@pytest.mark.slow
def test_heuristic_games_of_competitive12_use_every_role_and_both_sides_win_some():
    games = [play(seed) for seed in range(GAMES)]
    winners = Counter(g.winner for g in games)
    village = winners["village"]
    low, high = wilson(village, GAMES)
    rate = (f"village {village}/{GAMES} = {village / GAMES:.3f} (95% Wilson {low:.3f}-{high:.3f}), "
            f"werewolves {winners['werewolves']}, draws {winners['draw']}")
    assert village > 0 and winners["werewolves"] > 0, rate
    assert set(winners) <= {"village", "werewolves", "draw"}, rate
    kinds = Counter(e.kind for g in games for e in g.events)
    # every role's decision is taken by the heuristic player: hunt, protect, check, save, poison, shoot
    for kind in ("hunt_proposal", "protect", "check", "save", "poison", "shot"):
        assert kinds[kind] > 0, (kind, rate)
    shots = [(g, e) for g in games for e in g.events if e.kind == "shot"]
    hunters_dead = [g for g in games if "Hunter" in {g.roles[s] for s in g.deaths}
                    and g.deaths[g.seat_of("Hunter")][1] != "poison"]
    assert len(shots) == len(hunters_dead)  # every Hunter eliminated other than by poison shot, once
    hits = sum(g.roles[e.target] == "Werewolf" for g, e in shots)
    assert hits / len(shots) > 4 / 11, (hits, len(shots))  # its suspicion beats a random shot's share of wolves


def test_the_same_seed_plays_the_same_competitive12_game():
    a, b = play(7), play(7)
    assert a.events == b.events and a.roles == b.roles and a.deaths == b.deaths
    assert play(8).events != a.events


@pytest.mark.slow
def test_the_report_measures_the_hunters_shot_and_keeps_every_role(tmp_path):
    """Recorded competitive12 games: the night-actions table has the shots (k of n on a wolf, with chance), key-role
    survival lists the Hunter, and a preset without a Hunter gets no shot row."""
    from toolkit.analysis.metrics import key_role_survival, night_actions, votes
    from toolkit.record.load import load
    from toolkit.record.run_log import Run
    from toolkit.werewolf.game import GameConfig, play_games

    with Run(tmp_path / "c12", experiment="c12") as run:
        results = asyncio.run(play_games([GameConfig(preset="competitive12", seed=s) for s in range(4)], run,
                                         keep_results=True))
    t = load(tmp_path / "c12")
    shots = [(r, e) for r in results for e in r.events if e.kind == "shot"]
    row = night_actions(t.events, t.players, None, t.games).set_index("metric").loc["hunter_shot_on_wolf"]
    assert row["n"] == len(shots) > 0 and row["k"] == sum(r.roles[e.target] == "Werewolf" for r, e in shots)
    assert 0 < row["chance"] < 1
    assert set(key_role_survival(t.players)["role"]) == {"Guard", "Witch", "Seer", "Hunter"}
    # the living the vote metrics count (their chance) know a shot seat is dead: every living seat votes in a
    # first round, so the voters of a day's first round are the living
    v = votes(t.events, t.players)
    first = v[v["round"] == "first"]
    voters = first.groupby(["game_id", "day"])["actor"].nunique()
    assert (first.groupby(["game_id", "day"])["alive"].first() == voters).all()
    with Run(tmp_path / "c7", experiment="c7") as run:
        asyncio.run(play_games([GameConfig(preset="classic7", seed=0)], run))
    t7 = load(tmp_path / "c7")
    assert "hunter_shot_on_wolf" not in set(night_actions(t7.events, t7.players, None, t7.games)["metric"])
