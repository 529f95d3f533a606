"""Replay and fork (toolkit.werewolf.replay): a logged game re-runs exactly from its recorded answers, under
any preset and with reflections; a fork replays up to an event and hands every later call to another model;
the replayed run records the same game; lookups fail clearly. Real games, real result folders (tmp_path)."""

from __future__ import annotations

import asyncio
import math

import pytest

from toolkit.llm import Request, Sampling, get_model
from toolkit.record.run_log import Run
from toolkit.record.load import load
from toolkit.werewolf.game import GameConfig, SeatConfig, play_games
from toolkit.werewolf.engine.preset import load_preset
from toolkit.werewolf.replay import EVENT_FIELDS, ForkBackend, event_tuple, recorded_game, replay_game
from toolkit.werewolf.engine.rules import Event


def record(folder, configs):
    with Run(folder, "orig") as run:
        return asyncio.run(play_games(configs, run, keep_results=True))


def replay(folder, game_id, out=None, **kw):
    if out is None:
        return asyncio.run(replay_game(folder, game_id, **kw))
    with Run(out, "replay") as run:
        return asyncio.run(replay_game(folder, game_id, run, **kw))


def test_a_replay_records_the_same_game_under_another_id(tmp_path):
    (original,) = record(tmp_path / "a", [GameConfig(seed=11, model="random", preset="standard9")])
    result, recorded = replay(tmp_path / "a", original.game_id, out=tmp_path / "b")
    assert result.game_id == f"{original.game_id}-replay"
    assert [event_tuple(e) for e in result.events] == recorded == [event_tuple(e) for e in original.events]
    assert (result.winner, result.roles, result.days) == (original.winner, original.roles, original.days)
    a, b = load(tmp_path / "a"), load(tmp_path / "b")
    cols = ["seat", "role", "survived", "death_day", "death_cause"]
    assert a.players[cols].sort_values("seat").equals(b.players[cols].sort_values("seat"))
    # the same answers were given to the same questions, in the same order
    ordered = [c.sort_values("seq")[["replay_key", "response_text"]].reset_index(drop=True) for c in (a.calls, b.calls)]
    assert ordered[0].equals(ordered[1])
    ga, gb = a.games.iloc[0], b.games.iloc[0]
    assert (gb["preset"], gb["seed"], gb["winner"], gb["n_calls"]) == (ga["preset"], ga["seed"], ga["winner"],
                                                                       ga["n_calls"])


def test_the_recorded_config_restores_preset_flags_roles_and_cadence(tmp_path):
    preset = load_preset("classic7").model_copy(update={"vote_tie": "random", "last_words": True, "max_days": 4})
    (original,) = record(tmp_path, [GameConfig(seed=3, preset=preset, reflection=True, reflect="per_phase")])
    config, events = recorded_game(tmp_path, original.game_id)
    # the rules, not the preset's named models (each seat's spec is recorded with the seat)
    assert config["preset"] == preset.model_dump(exclude={"models"}) and config["roles"] == original.roles
    assert config["reflect"] == "per_phase" and all(s["reflection"] for s in config["seats"].values())
    assert [e[0] for e in events] == list(range(len(original.events)))
    result, recorded = replay(tmp_path, original.game_id)
    assert [event_tuple(e) for e in result.events] == recorded


def test_fork_at_zero_with_the_same_deterministic_player_is_the_same_game(tmp_path):
    (original,) = record(tmp_path, [GameConfig(seed=7, model="heuristic")])
    forked, recorded = replay(tmp_path, original.game_id, fork_at=0, model="heuristic")
    assert forked.game_id == f"{original.game_id}-fork0"
    assert [event_tuple(e) for e in forked.events] == recorded


def test_fork_after_the_last_event_is_a_plain_replay(tmp_path):
    (original,) = record(tmp_path, [GameConfig(seed=5, model="random")])
    forked, recorded = replay(tmp_path, original.game_id, fork_at=len(original.events) + 1, model="heuristic")
    assert [event_tuple(e) for e in forked.events] == recorded


def test_a_fork_hands_every_call_after_the_fork_point_to_the_new_model(tmp_path):
    (original,) = record(tmp_path / "a", [GameConfig(seed=5, model="random")])
    fork_at = 20
    forked, recorded = replay(tmp_path / "a", original.game_id, out=tmp_path / "b", fork_at=fork_at,
                              model="heuristic")
    assert [event_tuple(e) for e in forked.events[:fork_at]] == recorded[:fork_at]
    assert [event_tuple(e) for e in forked.events] != recorded  # heuristic players play differently from random
    calls = load(tmp_path / "b").calls.sort_values("seq")
    models = list(calls["model"])
    switch = models.index("heuristic")
    assert switch > 0 and all(m.startswith("replay:") for m in models[:switch])
    assert all(m == "heuristic" for m in models[switch:])
    assert set(calls["spec"]) == {f"replay:{tmp_path / 'a'}+heuristic"}
    assert forked.winner in ("village", "werewolves", "draw")


def test_fork_backend_switches_model_name_freeness_and_answers():
    before, after = get_model("random").backend, get_model("heuristic").backend
    state = {"switched": False}
    fork = ForkBackend(before, after, lambda: state["switched"])
    obs = {"game": "werewolf", "action": "speak", "seat": "Player1", "role": "Villager", "phase": "day_speech",
           "day": 1, "alive": ["Player1", "Player2"], "claims": [], "checks": {}}
    request = Request(observation=obs, sampling=Sampling(seed=1), replay_key="k",
                      schema={"type": "object", "properties": {"speech": {"type": "string"}}, "required": ["speech"]})
    assert fork.model == "random" and fork.free is True
    first = asyncio.run(fork.complete(request))
    state["switched"] = True
    assert fork.model == "heuristic"
    second = asyncio.run(fork.complete(request))
    assert (first.model, second.model) == ("random", "heuristic")
    assert second.text == asyncio.run(after.complete(request)).text != first.text


def test_an_unknown_game_id_names_games_that_exist(tmp_path):
    (original,) = record(tmp_path, [GameConfig(seed=1, max_days=1)])
    with pytest.raises(ValueError, match=f"no game 'nope' in .*{original.game_id}"):
        recorded_game(tmp_path, "nope")


def test_event_tuple_reads_events_and_table_rows_alike():
    event = Event(3, 1, "night", "kill", None, "Player3", "The werewolves chose to kill Player3.", "werewolves")
    row = {"seq": 3, "day": 1, "phase": "night", "kind": "kill", "actor": math.nan, "target": "Player3",
           "text": "The werewolves chose to kill Player3.", "visibility": "werewolves", "fallback": False}
    assert event_tuple(event) == event_tuple(row) == tuple(row[k] if k != "actor" else None for k in EVENT_FIELDS)


def test_a_replay_keeps_each_seats_strategy(tmp_path):
    """A seat's strategy changes its prompts; a replay or a fork (a counterfactual of one variable) must keep it."""
    seats = {"Player1": SeatConfig(spec="heuristic", strategy="honest")}
    (original,) = record(tmp_path / "a", [GameConfig(seed=2, seats=seats, max_days=2)])
    replay(tmp_path / "a", original.game_id, out=tmp_path / "b")
    players = load(tmp_path / "b").players.set_index("seat")
    assert players.loc["Player1", "strategy"] == "honest"


@pytest.mark.parametrize("discussion", ["round_robin", "parallel", "bid_turn", "bid_round"])
@pytest.mark.slow
def test_every_discussion_protocol_replays_exactly_and_forks_at_zero_into_the_same_game(tmp_path, discussion):
    """Replay and fork for each discussion protocol (the bids of a bidding discussion are calls too)."""
    preset = load_preset("kaggle7").model_copy(update={"discussion": discussion, "speech_turns": 4,
                                                       "bid_tie": "urgency", "speech_rounds": 2})
    (original,) = record(tmp_path / "a", [GameConfig(seed=4, model="random", preset=preset)])
    assert any(e.kind == "bid" for e in original.events) == discussion.startswith("bid")
    result, recorded = replay(tmp_path / "a", original.game_id, out=tmp_path / "b")
    assert [event_tuple(e) for e in result.events] == recorded == [event_tuple(e) for e in original.events]
    (heuristic,) = record(tmp_path / "c", [GameConfig(seed=4, model="heuristic", preset=preset)])
    forked, recorded = replay(tmp_path / "c", heuristic.game_id, fork_at=0, model="heuristic")
    assert [event_tuple(e) for e in forked.events] == recorded
