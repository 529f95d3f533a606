"""The OpenAI-compatible backend over real HTTP against the loopback test server."""

import asyncio
import time

import pytest
from pydantic import BaseModel

from tests.conftest import FAST
from toolkit.actions import Action, CallContext, with_choices
from toolkit.llm import LLMError, Request, get_backend
from toolkit.llm import openai_backend
from toolkit.record import Run
from toolkit.results import load


class Pick(BaseModel):
    target: str


PICK = with_choices(Pick, "target", ("Player1", "Player2", "Player3"))


def req(text="hi", schema=True):
    return Request(messages=[{"role": "user", "content": text}],
                   schema=PICK.model_json_schema() if schema else None)


def backend(server, model="ok", **options):
    return get_backend(f"openai:{model}@{server.base_url}", **{**FAST, **options})


async def test_structured_answer_with_real_usage(server):
    c = await backend(server).complete(req())
    assert PICK.model_validate_json(c.text).target in ("Player1", "Player2", "Player3")
    assert c.attempts == 1 and not c.usage_estimated and c.prompt_tokens >= 1
    sent = server.requests[-1]
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"]["properties"]["target"]["enum"] == [
        "Player1", "Player2", "Player3"]


async def test_missing_usage_is_estimated_and_flagged(server):
    c = await backend(server, "nousage").complete(req("x" * 400))
    assert c.usage_estimated and c.prompt_tokens == 100


@pytest.mark.parametrize("fault", ["500", "malformed", "reset"])
async def test_transient_faults_are_retried_then_succeed(server, fault):
    server.queue(fault, fault, "ok")
    c = await backend(server, "queue").complete(req())
    assert c.attempts == 3
    assert [b for _, b in server.log] == [fault, fault, "ok"]


async def test_429_honours_retry_after(server):
    server.queue("429:1", "ok")
    t0 = time.perf_counter()
    c = await backend(server, "queue").complete(req())
    assert c.attempts == 2
    assert time.perf_counter() - t0 >= 0.95  # waited the server's Retry-After, not the 5 ms backoff


async def test_timeout_is_retried_and_then_reported(server):
    t0 = time.perf_counter()
    with pytest.raises(LLMError) as err:
        await backend(server, "hang", timeout_s=0.3, max_attempts=2).complete(req())
    assert err.value.attempts == 2 and "timed out" in str(err.value)
    assert time.perf_counter() - t0 < 3


@pytest.mark.parametrize("status", ["400", "401", "404"])
async def test_client_errors_are_not_retried_and_name_model_and_endpoint(server, status):
    with pytest.raises(LLMError) as err:
        await backend(server, status).complete(req())
    assert err.value.attempts == 1 and len(server.log) == 1
    assert status in str(err.value) and server.base_url in str(err.value) and status in str(err.value)


async def test_schema_rejected_falls_back_to_prompt_once_and_remembers(server):
    openai_backend._SCHEMA_IN_PROMPT.discard(server.base_url)
    b = backend(server, "noschema")
    c = await b.complete(req())
    await b.complete(req())
    first, retry, later = server.requests
    assert "response_format" in first and "response_format" not in retry and "response_format" not in later
    assert "JSON schema" in retry["messages"][0]["content"]
    assert c.text == "ok"


async def test_concurrency_cap_per_endpoint(server):
    b = backend(server, "slow:0.1", max_connections=2)
    await asyncio.gather(*(b.complete(req()) for _ in range(6)))
    assert server.max_active == 2


async def test_cost_from_price_table_and_null_for_unknown_models(server):
    known = await get_backend(f"openai:gpt-4o-mini@{server.base_url}", **FAST).complete(req("y" * 4000))
    assert known.cost_usd == pytest.approx((1000 * 0.15 + known.completion_tokens * 0.60) / 1e6)
    unknown = await backend(server, "some-unpriced-model").complete(req())
    assert unknown.cost_usd is None


async def test_response_cache_costs_no_second_call(server, tmp_path):
    b = backend(server, cache_dir=str(tmp_path))
    first = await b.complete(req("same"))
    again = await backend(server, cache_dir=str(tmp_path)).complete(req("same"))
    assert len(server.requests) == 1 and again.cache_hit and again.text == first.text
    await b.complete(req("different"))
    assert len(server.requests) == 2


async def test_thirty_percent_faults_every_call_completes_once(server, tmp_path):
    """200 structured calls, 30% of requests failing (429/500/hang/reset/malformed): all complete,
    every fault is retried, and the calls table has exactly one row per call with its attempts."""
    b = backend(server, "faults:0.3", timeout_s=0.5, max_attempts=10, max_connections=16)
    action = Action("pick", "reask.j2", PICK)  # any template: the prompt is not the point here
    with Run(tmp_path, "faults") as run:
        ctx = CallContext(run=run, game_id="g")
        results = await asyncio.gather(*(
            action.run(b, {"error": f"call {i}"}, fallback=lambda: PICK(target="Player1"), ctx=ctx)
            for i in range(200)))
    assert not any(r.fallback for r in results)
    calls = load(tmp_path).calls
    assert len(calls) == 200 and calls["seq"].is_unique and calls["ok"].all()
    faults = sum(1 for _, b in server.log if b != "ok")
    assert faults > 30  # about 30% of the requests that reached the server failed ...
    assert len(server.log) - faults == 200  # ... each call got exactly one good answer, no duplicates ...
    # ... after retrying every fault (an attempt may also die on a stale connection before the server sees it)
    assert int(calls["attempts"].sum()) >= len(server.log) and calls["attempts"].max() > 1
