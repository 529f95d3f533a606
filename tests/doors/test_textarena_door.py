"""The TextArena door (``toolkit.doors.textarena_env``): registered so ``textarena.make`` finds Werewolf-v0 and a
variant per preset; its reset/get_observation/step/close loop under TextArena's own wrappers gives the events of
``play_games`` seed for seed; a bad move is asked again, then the game's error policy applies; no leak between
episodes. These need the ``rl`` extra (textarena), hence the ``interop`` mark."""

import asyncio
import json

import pytest

from toolkit.werewolf import GameConfig, available_presets, play_games
from toolkit.werewolf.engine.rules import side_of

pytestmark = pytest.mark.interop


@pytest.fixture
def ta():
    textarena = pytest.importorskip("textarena")
    import toolkit.doors.textarena_env  # noqa: F401 (registers the environments)
    return textarena


def drive(env, n, seed, answer):
    env.reset(num_players=n, seed=seed)
    done, seen = False, []
    while not done:
        player_id, observation = env.get_observation()
        seen.append((player_id, observation))
        done, info = env.step(answer(env.table.current))
    return seen


def heuristic(request):
    from toolkit.doors import offline

    return json.dumps(offline.answer("heuristic", request))


def test_every_preset_is_registered_with_textarenas_versions(ta):
    from textarena.envs.registration import ENV_REGISTRY

    assert {"Werewolf-v0", "Werewolf-v0-train", "Werewolf-v0-raw"} <= set(ENV_REGISTRY)
    assert all(f"Werewolf-v0-{p}" in ENV_REGISTRY for p in available_presets())
    with pytest.raises(ValueError, match="seats 7 players, not 6"):
        ta.make("Werewolf-v0").reset(num_players=6, seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("env_id,preset", [("Werewolf-v0", "classic7"), ("Werewolf-v0-kaggle8-train", "kaggle8"),
                                           *((f"Werewolf-v0-{p}", p) for p in available_presets())])
def test_a_textarena_game_has_the_events_of_play_games_seed_for_seed(ta, env_id, preset):
    """Every shipped preset's variant (and the default and a -train version), through TextArena's wrappers (one
    prompt per turn, as text), every move the heuristic player's answer: the same events as play_games; rewards by
    side in close()."""
    env = ta.make(env_id)
    n = len(GameConfig(preset=preset).resolved_preset().seats)
    seeds = range(2)
    played = asyncio.run(play_games([GameConfig(preset=preset, seed=s) for s in seeds]))
    for seed, result in zip(seeds, played):
        seen = drive(env, n, seed, heuristic)
        assert env.game.events == result.events, (env_id, seed)
        assert all(isinstance(obs, str) and "JSON" in obs for _, obs in seen)
        rewards, info = env.close()
        won = {pid: side_of(role) == result.winner for pid, role in enumerate(result.roles.values())}
        assert rewards == {pid: (1.0 if w else -1.0) for pid, w in won.items()} or result.winner == "draw"
        assert {info[pid]["role"] for pid in range(n)} == set(result.roles.values())


def test_textarenas_own_move_forms_are_taken(ta):
    """``[Player3]``/``[3]`` (both Player3, the name in the prompts) for a target, plain text for a speech."""
    from toolkit.doors.actions import from_text

    view = {"action": "vote", "choices": ["Player2", "Player3"], "can_pass": False}
    seats = [f"Player{i}" for i in range(1, 8)]
    assert from_text("I vote [Player3].", view, seats) == {"target": "Player3"}
    assert from_text("[3]", view, seats) == from_text("[player 3]", view, seats) == {"target": "Player3"}
    assert from_text("[0]", view, seats) == {"target": "Player0"}  # no seat: check() and the game refuse it
    assert from_text("Player3 is a wolf", {"action": "speak"}, seats) == {"speech": "Player3 is a wolf"}
    assert from_text('{"target": "Player2"}', view, seats) == '{"target": "Player2"}'


def test_a_bad_move_is_asked_again_then_the_error_policy_applies(ta):
    """TextArena's rule: the player is told and asked again; a second bad move is a failed decision: under
    eliminate_after:1 the seat is removed at the next nightfall, and the game still ends."""
    from toolkit.doors.textarena_env import WerewolfEnv

    env = WerewolfEnv("classic7", error_policy="eliminate_after:1")
    env.reset(num_players=7, seed=0)
    pid, _ = env.get_observation()
    env.step("no idea")
    again, observation = env.get_observation()
    assert again == pid and "no idea" in observation[0][1]
    env.step("still no idea")
    while not env.state.done:
        env.step(heuristic(env.table.current))
    seat = env.seats[pid]
    assert any(e.kind == "disqualification" and e.target == seat for e in env.game.events) or seat in env.game.deaths
    rewards, info = env.close()
    assert info[pid]["invalid_move"] is True


def test_reset_reuses_the_environment_without_leaking(ta):
    env = ta.make("Werewolf-v0-raw")
    env.reset(num_players=7, seed=11)
    for _ in range(5):
        env.step("[0]")
    first = drive(env, 7, 3, heuristic)
    again = drive(env, 7, 3, heuristic)
    fresh = drive(ta.make("Werewolf-v0-raw"), 7, 3, heuristic)
    assert first == again == fresh


def test_a_textarena_game_is_recorded_like_any_other(ta, tmp_path):
    """Into a Run: load() reads its games, players and calls; its events rows are play_games' rows."""
    from toolkit.doors.textarena_env import WerewolfEnv
    from toolkit.record import Run, load

    with Run(tmp_path / "door", "door") as run:
        env = WerewolfEnv(config=GameConfig(preset="kaggle7", model="door"), run=run)
        drive(env, 7, 5, heuristic)
        env.close()
    with Run(tmp_path / "own", "own") as own:
        asyncio.run(play_games([GameConfig(preset="kaggle7", seed=5)], own))
    tables = load(run.folder)
    assert tables.games["seed"].tolist() == [5] and set(tables.players["spec"]) == {"door"}
    assert len(tables.calls) > 0 and set(tables.calls["spec"]) == {"door"}

    def rows(folder):
        return load(folder).events.drop(columns=["game_id"]).sort_values("seq").reset_index(drop=True)

    assert rows(run.folder).equals(rows(own.folder))


def test_a_bracketed_number_that_names_no_seat_is_an_invalid_move(ta):
    """``[99]`` where the decision allows passing is refused and asked again with the error, never taken as a pass
    (the old code turned it into "no target" and went on)."""
    env = ta.make("Werewolf-v0-raw")
    env.reset(num_players=7, seed=3)
    pid, _ = env.get_observation()
    request = env.table.current
    assert request.observation["can_pass"] and request.observation["action"] != "vote"
    env.step("[99]")
    again, observation = env.get_observation()
    assert again == pid and env.table.current.seat == request.seat and "Player99" in observation[0][1]
    assert any(m["role"] == "assistant" for m in env.table.current.messages)  # the re-ask, with the bad answer
    env.close()


def test_a_dropped_textarena_environment_ends_its_game_thread(ta):
    import gc
    import threading

    env = ta.make("Werewolf-v0-raw")
    env.reset(num_players=7, seed=4322)
    name = "werewolf-door-g4322-door"
    assert name in [t.name for t in threading.enumerate()]
    del env
    gc.collect()
    assert name not in [t.name for t in threading.enumerate()]


def test_a_huge_bad_answer_is_echoed_clipped_and_the_end_reads_through_the_wrapper(ta):
    """A 1 MB bad answer comes back in the re-ask clipped to its first 200 characters and its length; after the end,
    get_observation through the default wrapper gives one closing message (the old code: the whole megabyte in
    the observation; an IndexError in SingleTurnObservationWrapper)."""
    env = ta.make("Werewolf-v0")
    env.reset(num_players=7, seed=3)
    _, before = env.get_observation()
    env.step("x" * 1_000_000)
    _, again = env.get_observation()
    assert "(1000000 characters)" in again and len(again) < len(before) + 2000
    done = False
    while not done:
        done, _ = env.step(heuristic(env.table.current))
    assert "over" in str(env.get_observation()[1])
    env.close()
