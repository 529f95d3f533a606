"""Failures judged by the error policy, alike on both sides: an ``eliminate_after`` nightfall that removes seats
of both sides and so decides the game gives no winner (it gave the village the win with nobody alive); a model that
fails the decision a ``forfeit`` ends the game on has lost, and that game is its measurement, not a degraded one
(every forfeit game was marked degraded, so ratings left the failing model out altogether)."""

import asyncio

from toolkit.werewolf import GameConfig, load_preset
from toolkit.werewolf.engine.rules import Game, side_of
from toolkit.werewolf.game import play_game


def test_every_seat_removed_at_once_is_no_win_for_anyone():
    game = Game(load_preset("classic7"), seed=3)
    game.disqualify({seat: "failed" for seat in game.seats})
    assert (game.winner, game.alive) == ("draw", [])
    assert "both sides" in game.win_reason


def test_one_sides_seats_removed_still_decide_the_game():
    game = Game(load_preset("classic7"), seed=3)
    wolves = [s for s, r in game.roles.items() if side_of(r) == "werewolves"]
    assert wolves
    game.disqualify({seat: "failed" for seat in wolves})
    assert game.winner == "village"


def test_a_forfeit_is_the_failing_models_loss_not_a_degraded_game():
    """The failing model on one side, the other side's answers usable: its loss, rated. (A game where no decision
    got a usable answer, every seat on chaos:1.0, is degraded: tests/werewolf/test_endpoint_failures.py.)"""
    result = asyncio.run(play_game(GameConfig(seed=2, model="heuristic", side_models={"werewolves": "chaos:1.0"},
                                              error_policy="forfeit")))
    assert result.win_reason.startswith("forfeit") and result.winner == "village"
    assert result.degraded is False
    every = asyncio.run(play_game(GameConfig(seed=2, model="chaos:1.0", error_policy="forfeit")))
    assert every.winner == "draw" and every.degraded is True  # no model made this result
