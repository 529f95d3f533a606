"""Results the export tests read: a real game against the loopback server (reflections and beliefs on) and two
engineer sessions of the offline suite (scripted answers, real commands in the sandbox), in tmp folders; and
Debian's headless Chromium (through Playwright) to open the pages in."""

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from toolkit.record.load import load
from toolkit.record.run_log import Run
from toolkit.testing.loopback_server import FakeOpenAIServer

SESSION_TASKS = ["add_cli_flag", "git_pull_request"]  # quick ones: a python command, git tools


@functools.cache
def example_game() -> str:
    """The committed example's classic7 game of seed 5 with random villagers against mixed wolves, found by what
    it is: its id is drawn afresh each time ``make example`` regenerates the study."""
    from toolkit.analysis.conclusions import side_models
    from toolkit.record.load import games_with_params

    t = load(Path(__file__).resolve().parents[2] / "results" / "examples" / "tables")
    g = games_with_params(t).merge(side_models(t.players), on="game_id")
    (game_id,) = g[(g["seed"] == 5) & (g["preset"] == "classic7") & (g["village_model"] == "random")
                   & (g["wolf_model"] == "mixed")]["game_id"]
    return game_id


def run_apart(coro):
    """``asyncio.run`` in a thread of its own: Playwright's sync API (the ``browser`` fixture) keeps an event loop
    running in the main thread, and a fixture made after it could not start one there."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@pytest.fixture(scope="session")
def game_folder(tmp_path_factory):
    from toolkit.werewolf.game import GameConfig, play_game

    folder = tmp_path_factory.mktemp("game-results")
    with FakeOpenAIServer(seed=1) as server:
        with Run(folder) as run:
            run_apart(play_game(GameConfig(seed=3, model=f"openai:det@{server.base_url}", max_days=3,
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
        run_apart(run_suite("scripted:{task}/good.yaml", run, folder / "workspaces", names=SESSION_TASKS))
    return folder


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium",
                              args=["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking"])
        yield b
        b.close()
