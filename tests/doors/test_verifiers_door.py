"""The verifiers door (``toolkit.doors.verifiers_env``): a verifiers v1 episode is one werewolf game, one agent per
seat, each agent's model the loopback server (real HTTP through verifiers' own interception server; no network, no
API key). Seed for seed, a game whose agents answer what the heuristic player answers has play_games' events;
frozen and offline seats are untrainable; each agent's trace carries its side's reward. These need verifiers (the
``rl`` extra), hence the ``interop`` mark."""

import asyncio
import json

import pytest

from toolkit.werewolf import GameConfig, available_presets, play_games
from toolkit.werewolf.engine.rules import side_of

pytestmark = pytest.mark.interop  # and slow, each: importing verifiers takes seconds


@pytest.fixture
def door():
    pytest.importorskip("verifiers")
    from toolkit.doors import verifiers_env
    return verifiers_env


def heuristic_env(door, server):
    """The door's environment whose agents' model (the loopback server's ``say``) answers each decision with what
    the toolkit's heuristic player answers to the same request: the test chooses, the answer still travels as an
    agent's turn through verifiers' interception and the server."""
    from toolkit.doors import offline

    class HeuristicAnswers(door.WerewolfEnv):
        async def ask(self, interaction, request):
            server.say(json.dumps(offline.answer("heuristic", request)))
            return await super().ask(interaction, request)

    return HeuristicAnswers


def play(env, tasks, server, model="say"):
    """The episodes of ``tasks``, one after another, inside one ``serving()`` (one recorded Run)."""
    import verifiers.v1 as vf

    ctx = vf.ModelContext(model=model, client=vf.EvalClientConfig(base_url=server.base_url,
                                                                   api_key_var="TOOLKIT_TEST_NO_KEY"))

    async def go():
        async with env.serving():
            return [await env.run_episode(task, ctx) for task in tasks]

    return asyncio.run(go())


def config(door, preset="classic7", seed=0, **fields):
    return door.WerewolfEnvConfig(taskset={"id": door.TASKSET_ID, "preset": preset, "seed": seed}, **fields)


@pytest.mark.slow
def test_the_taskset_is_one_game_per_seed_of_a_preset(door):
    env = door.WerewolfEnv(config(door, "kaggle8", seed=40))
    tasks = list(env.taskset.take(3))
    assert [t.data.info for t in tasks] == [{"preset": "kaggle8", "seed": s} for s in (40, 41, 42)]
    with pytest.raises(ValueError, match="no preset 'nope'"):
        next(iter(door.WerewolfEnv(config(door, "nope")).taskset))
    with pytest.raises(ValueError, match="not a seat: 'player2'"):
        config(door, frozen=["player2"])
    with pytest.raises(ValueError, match="Player3: unknown model spec 'heuristc'.*did you mean 'heuristic'"):
        config(door, players={"Player3": "heuristc"})  # said at once, not in every episode's errors (review s18)


def event_rows(folder, game_id=None):
    from toolkit.record import load

    events = load(folder).events
    events = events[events["game_id"] == game_id] if game_id else events
    return events.drop(columns=["game_id"]).sort_values("seq", kind="stable").reset_index(drop=True)


def door_calls(folder, game_id, seat):
    """The calls rows of ``seat``'s decisions that went through the door (a reflection is answered inside)."""
    from toolkit.record import load

    calls = load(folder).calls
    return calls[(calls["game_id"] == game_id) & (calls["seat"] == seat) & (calls["spec"] == "door")]


@pytest.mark.slow
@pytest.mark.parametrize("preset", available_presets())
def test_a_verifiers_game_has_the_events_of_play_games_seed_for_seed(door, server, preset, tmp_path):
    """Every shipped preset, two seeds: the game played by verifiers agents (Player1 offline, heuristic; the
    others' agents answering as the heuristic player) writes play_games' events rows into the Run of its
    ``record`` folder; every other seat's agent left one trace, its reward its side's, the frozen one untrainable
    (the old code has no verifiers door: this fails there on the import)."""
    from toolkit.record import Run

    seeds = (0, 1)
    with Run(tmp_path / "own", "own") as own:
        played = asyncio.run(play_games([GameConfig(preset=preset, seed=s) for s in seeds], own))
    env = heuristic_env(door, server)(config(door, preset, players={"Player1": "heuristic"}, frozen=["Player2"],
                                             record=str(tmp_path / "door")))
    episodes = play(env, env.taskset.take(len(seeds)), server)
    (door_run,) = (tmp_path / "door").iterdir()
    for seed, result, episode in zip(seeds, played, episodes):
        assert episode.ok, episode.errors
        seats = list(result.roles)
        by_seat = {t.info["seat"]: t for t in episode.traces}
        assert set(by_seat) == set(seats) - {"Player1"}
        for seat, trace in by_seat.items():
            assert trace.agent.name == seat.lower() and trace.agent.trainable == (seat != "Player2")
            won = side_of(result.roles[seat]) == result.winner
            assert trace.rewards["win"].score == (1.0 if won else -1.0) or result.winner == "draw"
            assert trace.info["role"] == result.roles[seat]
            # one turn per decision the seat was asked (a seat killed before its first decision has none)
            assert trace.num_turns == len(door_calls(door_run, trace.info["game_id"], seat)), (preset, seed, seat)
        game_id = by_seat["Player2"].info["game_id"]
        assert event_rows(door_run, game_id).equals(event_rows(own.folder, result.game_id)), (preset, seed)


@pytest.mark.slow
def test_a_reply_the_game_cannot_read_is_asked_again_then_falls_back(door, server, tmp_path):
    """Every agent's model answers ``ok`` (the loopback server's plain text, not an answer of the decision's
    schema): each decision is a turn, its re-ask (the error, as the next user turn) a second, then the seeded legal
    fallback. The game ends as a game, each seat's trace scored, nothing raised (the old code has no door)."""
    from toolkit.record import load

    env = door.WerewolfEnv(config(door, "classic7", seed=5, record=str(tmp_path / "door")))
    (episode,) = play(env, env.taskset.take(1), server, model="ok")
    assert episode.ok, episode.errors
    (run,) = (tmp_path / "door").iterdir()
    (game,) = load(run).games.itertuples()
    assert game.winner in ("village", "werewolves", "draw") and game.n_fallbacks > 0
    for trace in episode.traces:
        calls = door_calls(run, game.game_id, trace.info["seat"])
        decisions = int(calls["fallback"].sum())
        assert not calls["ok"].any() and len(calls) == 2 * decisions == trace.num_turns
        assert trace.rewards["win"].score in (-1.0, 0.0, 1.0)
        if trace.num_turns:  # the re-ask is the next user turn: the reply, then why it could not be used
            nodes = trace.nodes
            assert [n.message.role for n in nodes[:4]] == ["user", "assistant", "user", "assistant"]
            assert nodes[1].message.content == "ok"
            assert nodes[2].message.content.startswith("Your previous answer could not be used")


@pytest.mark.slow
def test_an_agent_whose_endpoint_fails_leaves_its_seat_to_the_fallback(door, server, tmp_path):
    """Every agent's endpoint answers HTTP 401 (the loopback server's ``401``: a refused key, which no client
    retries): verifiers ends each agent's exchange at its first turn and marks the episode not ok; the game is still
    played to its end, every door decision on the seeded legal fallback, without another turn (verifiers refuses a
    turn after the end)."""
    from toolkit.record import load

    env = door.WerewolfEnv(config(door, "classic7", seed=5, record=str(tmp_path / "door")))
    (episode,) = play(env, env.taskset.take(1), server, model="401")
    assert not episode.ok
    (run,) = (tmp_path / "door").iterdir()
    (game,) = load(run).games.itertuples()
    assert game.winner in ("village", "werewolves", "draw")
    assert {t.info["seat"] for t in episode.traces} == set(load(run).players["seat"])
    for trace in episode.traces:
        calls = door_calls(run, game.game_id, trace.info["seat"])
        assert trace.num_turns == 0 and not calls["ok"].any() and len(calls) == 2 * calls["fallback"].sum()
    assert game.n_fallbacks == sum(len(door_calls(run, game.game_id, t.info["seat"])) for t in episode.traces) / 2


@pytest.mark.slow
def test_a_seat_the_preset_does_not_have_is_refused_not_ignored(door, server):
    """Review s18: ``players={"Player9": ...}`` or ``frozen=["Player9"]`` on classic7 (seven seats) was silently
    ignored; the episode now ends in an error that names the seat and the preset."""
    env = door.WerewolfEnv(config(door, "classic7", seed=5, frozen=["Player9"]))
    (episode,) = play(env, env.taskset.take(1), server, model="ok")
    assert not episode.ok and "Player9: not a seat of classic7 (7 seats)" in str(episode.errors)
