"""An engineer session against a server that misbehaves on purpose (each hostile behaviour of the loopback
test server), with native tool calls and without: the session ends by its step limit rather than crashing
or hanging, exactly one ``calls`` row per call, every error one printable line."""

import asyncio

import pytest

from tests.conftest import FAST
from toolkit.agent.loop.role import load_role
from toolkit.agent.loop.session import Session, SessionConfig
from toolkit.llm import get_model
from toolkit.record.load import load
from toolkit.record.run_log import Run

BEHAVIOURS = ["endless", "huge", "drip:0.05", "badcontent", "badtools", "manytools", "strusage", "negusage", "escape"]
CAPS = {**FAST, "timeout_s": 0.3, "max_attempts": 2, "max_response_bytes": 256 * 1024, "max_tool_calls": 50}


@pytest.mark.parametrize("native", [True, False], ids=["native-tools", "json-commands"])
@pytest.mark.parametrize("behaviour", BEHAVIOURS)
@pytest.mark.slow
def test_an_engineer_session_against_a_hostile_endpoint_ends_recorded(tmp_path, server, behaviour, native):
    model = get_model(f"openai:{behaviour}@{server.base_url}", **CAPS)
    with Run(tmp_path / "res") as run:
        session = Session(SessionConfig(load_role("engineer"), "say hi", tmp_path / "ws", model, run=run, max_steps=2,
                          native_tools=native, environment="local", budget_usd=None))
        result = asyncio.run(session.run())
    results = load(tmp_path / "res")
    assert result.ended_by == "max_steps", result  # every step's call failed, none raised
    calls = results.calls
    assert len(calls) == session.log.calls >= 2 and calls["call_id"].is_unique and not calls["ok"].any()
    assert all("\n" not in e and "\x1b" not in e and "Traceback" not in e for e in calls["error"])
    assert results.calls["cost_usd"].isna().all()  # a refused answer costs nothing recorded, never negative
