"""A server that misbehaves on purpose (toolkit.testing.loopback_server's hostile behaviours), through the
model wrapper over real HTTP: every answer that breaks the chat completion schema or a cap is a failed
attempt with its kind, the call ends (no hang past the deadline, no exception), and its error is one
printable line."""

import asyncio

import pytest

from tests.conftest import FAST
from toolkit.llm import Request, get_model
from toolkit.llm.model import ModelConfig

HOSTILE = {"endless": "too_large", "huge": "too_large", "drip:0.05": "timeout", "badcontent": "malformed",
           "badtools": "malformed", "manytools": "too_many_tool_calls", "strusage": "malformed",
           "negusage": "malformed", "escape": "http_error"}
# Small caps so each case is quick; a deadline a loaded machine still meets for the endless body's cap; the
# drip (a byte every 50 ms: its answer would take ~20 s) never idles long enough for the transport's idle
# timeout, so only the deadline can end it.
CAPS = {**FAST, "timeout_s": 2.0, "max_attempts": 2, "max_response_bytes": 256 * 1024, "max_tool_calls": 50}


def printable_line(text):
    return "\n" not in text and "\x1b" not in text and "\x07" not in text


@pytest.mark.parametrize("behaviour", list(HOSTILE))
@pytest.mark.slow
async def test_each_hostile_answer_is_a_failed_attempt_of_its_kind(server, behaviour):
    m = get_model(f"openai:{behaviour}@{server.base_url}", **CAPS)
    call = await m.generate(Request(messages=[{"role": "user", "content": "hi"}]))
    assert call.completion is None and call.error
    kinds = {a.error_kind for a in call.attempts}
    assert kinds == {HOSTILE[behaviour]}, call.attempts
    assert len(call.attempts) == (1 if behaviour == "escape" else 2)  # an HTTP 400 is final, the rest retried
    assert printable_line(call.error) and all(printable_line(a.error) for a in call.attempts)
    row = call.row("r")
    # a 200 whose body is no answer but has a sound usage block was billed: its tokens are the call's (review s19,
    # 4); nothing else of a refused answer is counted (an unpriced model: no cost either way)
    billed = behaviour in ("badcontent", "badtools", "manytools")
    assert (row["prompt_tokens"] == 2 * 1) if billed else row["prompt_tokens"] is None, row["prompt_tokens"]
    assert row["cost_usd"] is None


async def test_the_escape_text_is_kept_visible_but_inert(server):
    call = await get_model(f"openai:escape@{server.base_url}", **CAPS).generate(Request(messages=[]))
    assert "All checks passed" in call.error and "\\x1b[2J" in call.error and "\x1b" not in call.error


async def test_a_body_over_the_cap_is_not_read_past_it(server):
    """The endless body is abandoned at the cap: the server sees its client hang up (the request ends)."""
    m = get_model(f"openai:endless@{server.base_url}", **{**CAPS, "max_attempts": 1})
    call = await m.generate(Request(messages=[]))
    assert "larger than 262144 bytes" in call.error
    for _ in range(100):  # the server's handler returns once its write fails
        if server.active == 0:
            break
        await asyncio.sleep(0.02)
    assert server.active == 0


@pytest.mark.parametrize("var,value", [("TOOLKIT_MAX_CONNECTIONS", "0"), ("TOOLKIT_MAX_CONNECTIONS", "-1"),
                                       ("TOOLKIT_TIMEOUT_S", "0"), ("TOOLKIT_TIMEOUT_S", "-1"),
                                       ("TOOLKIT_TIMEOUT_S", "nan"), ("TOOLKIT_TIMEOUT_S", "inf"),
                                       ("TOOLKIT_MAX_ATTEMPTS", "0"), ("TOOLKIT_MAX_RESPONSE_BYTES", "10"),
                                       ("TOOLKIT_MAX_TOOL_CALLS", "0"), ("TOOLKIT_MAX_CONNECTIONS", "abc")])
def test_settings_out_of_range_are_refused_naming_the_variable(monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError, match=var):
        ModelConfig.from_env()


def test_the_caps_have_safe_defaults():
    c = ModelConfig()
    assert c.timeout_s == 60 and c.max_response_bytes == 8 * 2**20 and c.max_tool_calls == 64
