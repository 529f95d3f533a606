"""Concurrency that fits the endpoint (toolkit.llm.gate): a limit per endpoint shared by every game of a process,
halved on a 429 (with Retry-After holding every new request) and raised again by answers; a spec's
?max_connections=N. Against the loopback server with a provider limit (real HTTP)."""

import asyncio
import time

from toolkit.llm import Request, get_model
from toolkit.llm.gate import EndpointGate, gate
from toolkit.testing.loopback_server import FakeOpenAIServer


def test_additive_increase_multiplicative_decrease():
    async def run():
        g = EndpointGate(16)
        g.rate_limited(None)
        assert g.limit == 8 and g.throttled == 1
        g.rate_limited(0.5)
        assert g.limit == 4 and g.resume_at > time.monotonic() + 0.4
        for _ in range(4):
            g.answered()
        assert g.limit == 5  # one more after `limit` answers in a row
        fixed = EndpointGate(8, adaptive=False)
        fixed.rate_limited(3.0)
        assert fixed.limit == 8 and fixed.resume_at == 0.0 and fixed.throttled == 1

    asyncio.run(run())


def test_a_retry_after_holds_every_new_request_to_the_endpoint():
    async def run():
        g = EndpointGate(4)
        g.rate_limited(0.3)
        started = time.monotonic()
        async with g:
            pass
        return time.monotonic() - started

    assert asyncio.run(run()) >= 0.28


def test_games_sharing_an_endpoint_back_off_together_and_every_call_answers():
    with FakeOpenAIServer(latency=0.05, capacity=4, retry_after=0.2) as server:
        spec = f"openai:ok@{server.base_url}"

        async def run():
            model = get_model(spec, max_connections=32, backoff_initial_s=0.01, max_attempts=30, max_total_wait_s=60)
            calls = await asyncio.gather(*(model.generate(Request(messages=[{"role": "user", "content": str(i)}]))
                                           for i in range(60)))
            return calls, gate(model.base_url, 32).stats()

        calls, stats = asyncio.run(run())
    assert all(c.completion is not None for c in calls)  # nothing lost to the provider's limit
    assert server.rejected >= 1 and stats["rate_limited"] >= 1 and stats["limit"] < 32
    assert server.max_active <= 4


def test_a_spec_sets_its_endpoint_s_limit(server):
    spec = f"openai:slow:0.1@{server.base_url}?max_connections=2"

    async def run():
        model = get_model(spec)
        assert model.config.max_connections == 2 and "max_connections" not in model.backend.params
        await asyncio.gather(*(model.generate(Request()) for _ in range(8)))

    asyncio.run(run())
    assert server.max_active == 2
    assert all("max_connections" not in body for body in server.requests)  # the wrapper's, never sent
