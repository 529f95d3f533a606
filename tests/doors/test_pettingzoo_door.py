"""The PettingZoo door (``toolkit.doors.pettingzoo_env``): PettingZoo's own API test, the same events as
``play_games`` seed for seed with offline players choosing through the door, a door's games recorded like any
other, bad actions refused (or handed to the game's rule), and episodes that do not leak into each other.
These need the ``rl`` extra (pettingzoo, gymnasium), hence the ``interop`` mark."""

import asyncio
import warnings

import numpy as np
import pytest

from toolkit.record import Run, load
from toolkit.werewolf import GameConfig, available_presets, play_games

pytestmark = pytest.mark.interop


@pytest.fixture
def door():
    pytest.importorskip("pettingzoo")
    from toolkit.doors import pettingzoo_env
    return pettingzoo_env


def drive(env, seed, spec="heuristic"):
    """One episode, every decision answered by ``spec``'s offline player from the door's own request."""
    from toolkit.doors import offline

    env.reset(seed=seed)
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        env.step(None if terminated or truncated else offline.answer(spec, info["request"]))
    return list(env.game.events)


def test_pettingzoo_api_test_passes(door):
    from pettingzoo.test import api_test

    env = door.WerewolfAEC("classic7")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its advice (agent names like player_0, Box spaces) is not a failure
        api_test(env, num_cycles=300)
    env.close()


def test_pettingzoo_seed_test_passes(door):
    """Two environments reset with the same seed give the same observations, rewards and infos (the old code's
    game id had a random suffix, in ``infos[agent]["request"]``: "Incorrect info.")."""
    from pettingzoo.test import seed_test

    seed_test(lambda: door.WerewolfAEC("classic7"), num_cycles=300)


def test_the_same_seed_twice_into_one_run_gives_two_games(door, tmp_path):
    """A seeded game's id is deterministic (``g5-door``), and a second game of the same seed in the same Run gets
    its own (``g5-door2``): load() reads both games, none of their rows dropped as duplicates."""
    with Run(tmp_path, "door") as run:
        env = door.WerewolfAEC(GameConfig(side_models={"werewolves": "door"}), run=run, actions_through=("hunt",))
        ids = []
        for _ in range(2):
            env.reset(seed=5)
            for agent in env.agent_iter():
                obs, _, terminated, _, info = env.last()
                ids.append(info.get("game_id") or info["request"].game_id)
                env.step(None if terminated else int(np.flatnonzero(obs["action_mask"])[0]))
        env.close()
    assert dict.fromkeys(ids) == dict.fromkeys(["g5-door", "g5-door2"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tables = load(run.folder)
    assert sorted(tables.games["game_id"]) == ["g5-door", "g5-door2"]
    per_game = tables.events.groupby("game_id").size()
    assert per_game["g5-door"] == per_game["g5-door2"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("preset", available_presets())
def test_a_door_game_has_the_events_of_play_games_seed_for_seed(door, preset):
    """Every shipped preset, six seeds each with heuristic players and one each with random and mixed ones: every
    decision taken through the door by the offline player of the same spec gives the same events as
    ``play_games`` (the old code has no door: this fails there on the import)."""
    env = door.WerewolfAEC(GameConfig(preset=preset, model="door"))
    for spec, seeds in [("heuristic", range(6)), ("random", range(100, 101)), ("mixed", range(200, 201))]:
        played = asyncio.run(play_games([GameConfig(preset=preset, seed=s, model=spec) for s in seeds]))
        for seed, result in zip(seeds, played):
            assert drive(env, seed, spec) == result.events, (preset, spec, seed)
    env.close()


def event_rows(folder):
    events = load(folder).events.drop(columns=["game_id"])
    return events.sort_values(["seq"], kind="stable").reset_index(drop=True)


def test_a_door_game_is_recorded_like_any_other(door, tmp_path):
    """Into a Run: its events rows equal play_games' rows, and load(), the report and an export read it."""
    from toolkit.analysis.report import write_report
    from toolkit.export import kaggle

    with Run(tmp_path / "door", "door") as run:
        env = door.WerewolfAEC(GameConfig(preset="kaggle7", model="door"), run=run)
        drive(env, 5)
        env.close()
    with Run(tmp_path / "own", "own") as own:
        asyncio.run(play_games([GameConfig(preset="kaggle7", seed=5)], own))
    tables = load(run.folder)
    assert len(tables.games) == 1 and tables.games["seed"].tolist() == [5]
    assert set(tables.players["spec"]) == {"door"} and len(tables.calls) > 0
    assert event_rows(run.folder).equals(event_rows(own.folder))
    assert any(p.suffix == ".md" for p in write_report(run.folder, tmp_path / "report"))
    assert kaggle.write(tables, tmp_path / "kaggle")


def test_a_masked_action_is_refused_and_changes_nothing(door):
    from toolkit.doors.actions import IllegalAction

    env = door.WerewolfAEC("classic7")
    env.reset(seed=1)
    agent, obs = env.agent_selection, env.observe(env.agent_selection)
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    events = len(env.game.events)
    with pytest.raises(IllegalAction, match="the mask allows"):
        env.step(illegal)
    with pytest.raises(IllegalAction, match="cannot answer"):
        env.step({"target": "Nobody"})
    with pytest.raises(IllegalAction, match="index of the action space"):
        env.step(3.5)
    assert env.agent_selection == agent and len(env.game.events) == events
    env.step(int(np.flatnonzero(obs["action_mask"])[0]))  # a legal one goes on
    assert env.agent_selection != agent or len(env.game.events) >= events
    env.close()


def test_under_the_rules_a_bad_action_is_asked_again_then_falls_back(door):
    """invalid="rules": the same agent is asked again with the error in its prompt, then the seeded legal
    fallback is taken (the event says fallback) and the game goes on to its end."""
    env = door.WerewolfAEC("classic7", invalid="rules")
    env.reset(seed=2)
    agent = env.agent_selection
    env.step({"target": "Nobody"})
    assert env.agent_selection == agent and "Nobody" in env.infos[agent]["prompt"]
    env.step({"target": "Nobody"})
    for a in env.agent_iter():
        obs, _, terminated, truncated, _ = env.last()
        env.step(None if terminated else int(np.flatnonzero(obs["action_mask"])[0]))
    assert env.game.over and env.game.events[0].day == 1
    assert [e.actor for e in env.game.events if e.fallback] == [agent]
    env.close()


def test_reset_mid_game_leaks_nothing_into_the_next_episode(door):
    env = door.WerewolfAEC("classic7")
    fresh = drive(door.WerewolfAEC("classic7"), 4)
    env.reset(seed=9)
    for _ in range(10):  # part of a game, then a reset
        obs = env.observe(env.agent_selection)
        env.step(int(np.flatnonzero(obs["action_mask"])[-1]))
    assert drive(env, 4) == fresh
    assert drive(env, 4) == fresh  # and again after a finished one
    env.close()


def test_only_the_door_seats_and_decisions_reach_the_agents(door):
    """The wolves of each deal through the door, only their night target; the rest played inside by heuristic
    players. Rewards by side at the end."""
    env = door.WerewolfAEC(GameConfig(side_models={"werewolves": "door"}), actions_through=("hunt",))
    env.reset(seed=3)
    wolves = [s for s, r in env.game.roles.items() if r == "Werewolf"]
    assert env.agents == wolves
    rewards = {}
    for agent in env.agent_iter():
        obs, reward, terminated, _, info = env.last()
        if terminated:
            rewards[agent] = reward
        else:
            assert info["view"]["action"] == "hunt"
        env.step(None if terminated else int(np.flatnonzero(obs["action_mask"])[0]))
    won = env.game.winner == "werewolves"
    assert rewards == {w: (1.0 if won else -1.0) for w in wolves}
    env.close()


def test_the_seers_checks_land_in_the_vector_blocks_of_their_true_side(door):
    """Only the Seer's checks go through the door, and it checks a wolf when it can. At every later
    check, the ``checked_wolf`` block holds exactly the checked wolves (by the deal) and ``checked_good`` the rest
    (the old code compared the Seer's "werewolf" with "werewolves": a checked wolf landed in checked_good)."""
    from toolkit.doors import features

    env = door.WerewolfAEC(GameConfig(preset="classic7", model="door"), actions_through=("verify",))
    where = features.layout(env.seats, env.role_names)
    env.reset(seed=0)
    wolves = {s for s, r in env.game.roles.items() if r == "Werewolf"}
    seen = []
    for agent in env.agent_iter():
        obs, _, terminated, _, info = env.last()
        if terminated:
            env.step(None)
            continue
        checks = info["view"]["checks"]
        block = {name: {env.seats[i] for i in np.flatnonzero(obs["observation"][start:start + n])}
                 for name, (start, n) in where.items() if name in ("checked_wolf", "checked_good")}
        assert block == {"checked_wolf": set(checks) & wolves, "checked_good": set(checks) - wolves}
        seen.append(block)
        env.step({"target": min(set(info["view"]["choices"]) & wolves or info["view"]["choices"])})
    env.close()
    assert any(b["checked_wolf"] for b in seen), seen


def test_a_dropped_environment_ends_its_game_thread(door):
    """An environment dropped mid-game without close() stops its game: the thread is gone after a collection (the
    old code left it waiting on the next answer for as long as the process lived)."""
    import gc
    import threading

    env = door.WerewolfAEC("classic7")
    env.reset(seed=4321)
    name = "werewolf-door-g4321-door"
    assert name in [t.name for t in threading.enumerate()]
    del env
    gc.collect()
    assert name not in [t.name for t in threading.enumerate()]


def test_odd_actions_get_short_clear_answers(door):
    """A one-element integer array is an index (a policy's predict() on one observation); a 2 MB answer is refused
    with a message of a few hundred characters, not the answer echoed whole; a step after close() says to reset
    (the old code refused the array, echoed 2 MB, and failed on None.observation)."""
    from toolkit.doors.actions import IllegalAction
    from toolkit.doors.table import DoorClosed

    env = door.WerewolfAEC("classic7")
    env.reset(seed=6)
    agent = env.agent_selection
    with pytest.raises(IllegalAction) as refused:
        env.step({"target": "A" * 2_000_000})
    assert len(str(refused.value)) < 1000 and "2000014 characters" in str(refused.value)
    env.step(np.array(int(np.flatnonzero(env.observe(agent)["action_mask"])[0])))
    assert env.agent_selection != agent  # taken: the night goes on to another seat
    env.close()
    with pytest.raises(DoorClosed, match="reset"):
        env.step(0)
