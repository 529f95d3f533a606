"""Results the export tests read: a real game against the loopback server (reflections and beliefs on) and two
engineer sessions of the offline suite (scripted answers, real commands in the sandbox), in tmp folders."""

import asyncio

import pytest

from toolkit.record.load import load
from toolkit.record.run_log import Run
from toolkit.testing.loopback_server import FakeOpenAIServer

SESSION_TASKS = ["add_cli_flag", "git_pull_request"]  # quick ones: a python command, git tools


@pytest.fixture(scope="session")
def game_folder(tmp_path_factory):
    from toolkit.werewolf.game import GameConfig, play_game

    folder = tmp_path_factory.mktemp("game-results")
    with FakeOpenAIServer(seed=1) as server:
        with Run(folder) as run:
            asyncio.run(play_game(GameConfig(seed=3, model=f"openai:det@{server.base_url}", max_days=3,
                                             reflection=True), run))
    return folder


@pytest.fixture(scope="session")
def game(game_folder):
    results = load(game_folder)
    return results, results.games["game_id"].iloc[0]


@pytest.fixture(scope="session")
def session_folder(tmp_path_factory):
    from toolkit.agent.suite import run_suite

    folder = tmp_path_factory.mktemp("session-results")
    with Run(folder, "engineer-suite") as run:
        asyncio.run(run_suite("scripted:{task}/good.yaml", run, folder / "workspaces", names=SESSION_TASKS))
    return folder
