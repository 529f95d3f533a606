"""Concurrency that fits the endpoint (toolkit.llm.gate): a limit per endpoint shared by every game of a process,
halved on a 429 (with Retry-After holding every new request) and raised again by answers; a spec's
?max_connections=N; the endpoints table and line (what the gate did while a run was open). Against the loopback server
with a provider limit (real HTTP)."""

import asyncio
import time
from typing import Any

import pytest

from toolkit.llm import Request, get_model
from toolkit.llm.gate import EndpointGate, gate
from toolkit.testing.loopback_server import FakeOpenAIServer


def test_additive_increase_multiplicative_decrease():
    async def run():
        g = EndpointGate(16)
        g.rate_limited(0.01)  # with a Retry-After (without one: one probe at a time, the test below)
        assert g.limit == 8 and g.throttled == 1
        g.rate_limited(0.5)
        assert g.limit == 4 and g.resume_at > time.time() + 0.4
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
        async with g.slot():
            pass
        return time.monotonic() - started

    assert asyncio.run(run()) >= 0.28


def test_429s_without_retry_after_back_off_exponentially_with_jitter_bounded_until_an_answer():
    """No Retry-After: each round trip that meets a 429 doubles the hold on new requests (0.5 s, 1 s, 2 s, ...,
    at most 30 s, a random half of it taken off); an answer ends it. On the code before, nothing held them
    (760 requests in 90 s from one game)."""
    from toolkit.llm import limits as L

    limits, now = L.Limits(), 1000.0
    s = L.fresh(limits, now)
    holds = []
    for i in range(10):
        now += 100
        L.rate_limited(s, limits, now, now - 0.01, None)  # a request sent after the last cut
        holds.append(s.resume_at - now)
        L.rate_limited(s, limits, now, now - 0.01, None)  # the same round trip: no second doubling
        assert s.resume_at - now == holds[-1]
    for i, hold in enumerate(holds):
        full = min(30.0, 0.5 * 2 ** i)
        assert full / 2 <= hold <= full, (i, holds)
    L.answered(s, limits, now)
    now += 100
    L.rate_limited(s, limits, now, now - 0.01, None)
    assert 0.25 <= s.resume_at - now <= 0.5  # afresh after an answer
    L.rate_limited(s, limits, now + 100, now + 99, 0)  # Retry-After: 0 ("now", said every time) is none
    assert now + 100.5 <= s.resume_at <= now + 101
    L.rate_limited(s, limits, now + 200, now + 199, 3.0)  # a Retry-After is honoured as it is
    assert s.resume_at == now + 203


@pytest.mark.slow
def test_an_endpoint_refusing_everything_without_retry_after_is_not_hammered():
    """20 calls at once against an endpoint that answers 429 (Retry-After: 0) to everything, for 4 s: the
    endpoint sees the first 20 and then a few probes (on the code before: each call retried on its own, ~100)."""
    with FakeOpenAIServer() as server:
        async def run():
            model = get_model(f"openai:429@{server.base_url}", max_attempts=100, max_total_wait_s=600)
            asks = [asyncio.ensure_future(model.generate(Request(messages=[{"role": "user", "content": str(i)}])))
                    for i in range(20)]
            await asyncio.sleep(4)
            for a in asks:
                a.cancel()
            await asyncio.gather(*asks, return_exceptions=True)

        asyncio.run(run())
    assert 20 <= len(server.log) <= 30, len(server.log)


@pytest.mark.slow
def test_the_gate_grows_past_its_start_while_the_endpoint_answers_without_a_429():
    """300 requests at once to an endpoint with no limit: the gate starts at 64 and grows (on 51c499d 64 was the
    most, whatever the endpoint allowed). Two seconds an answer, so that even a client starved of CPU (a busy
    machine) sends more than 64 before the first answers come back."""
    with FakeOpenAIServer(latency=2.0) as server:
        async def run():
            model = get_model(f"openai:ok@{server.base_url}")
            calls = await asyncio.gather(*(model.generate(Request(messages=[{"role": "user", "content": str(i)}]))
                                           for i in range(300)))
            return calls, gate(model.base_url, model.config.max_connections).stats()

        calls, stats = asyncio.run(run())
    assert all(c.completion is not None for c in calls)
    assert server.rejected == 0 and server.max_active > 64 and stats["limit"] > 64 and stats["peak"] > 64


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_run_writes_its_endpoints_gate_figures(tmp_path):
    """The endpoints table: what the gate did while the run was open (peak in flight, the limit it settled on and
    its lowest, 429s, time waited), checked against what the server counted."""
    from toolkit.record.load import load
    from toolkit.record.run_log import Run

    with FakeOpenAIServer(latency=0.05, capacity=4, retry_after=0.2) as server:
        spec = f"openai:ok@{server.base_url}"

        async def run():
            model = get_model(spec, max_connections=32, backoff_initial_s=0.01, max_attempts=30, max_total_wait_s=60)
            await asyncio.gather(*(model.generate(Request(messages=[{"role": "user", "content": str(i)}]))
                                   for i in range(60)))

        with Run(tmp_path / "a", "gated"):
            asyncio.run(run())
        with Run(tmp_path / "b", "idle"):  # opened after: none of the first run's figures
            pass
    (row,) = load(tmp_path / "a").endpoints.to_dict("records")
    assert row["endpoint"] == server.base_url and row["max_connections"] == 32
    assert row["rate_limited"] == server.rejected >= 1
    assert row["requests"] == len(server.requests)  # every request, the rejected ones included
    assert server.max_active <= row["peak_in_flight"] <= 32
    assert row["lowest_limit"] <= row["limit"] <= 32 and row["lowest_limit"] < 32
    assert row["waited_s"] > 0  # requests held for a slot and for the Retry-After
    assert load(tmp_path / "b").endpoints.empty


def test_the_time_a_retry_after_held_a_call_is_counted_as_waited():
    """A 429 with ``Retry-After: 3600`` (capped at 0.3 s here, 60 s by default) holds the call that long before it
    asks again: that time is in the endpoints row's ``waited_s``, counted once. On the code before, the call's own
    wait was not counted, and its re-ask found the gate open: 0.0 (review s18, ``Retry-After: 3600``)."""
    from toolkit.llm.gate import watch

    with FakeOpenAIServer() as server:
        server.queue("429:3600", "ok")
        model = get_model(f"openai:queue@{server.base_url}", retry_after_cap_s=0.3)
        w = watch()  # what a run writes to its endpoints table (test_a_run_writes_its_endpoints_gate_figures)

        async def timed() -> tuple[Any, float]:
            t0 = time.monotonic()
            call = await model.generate(Request())
            return call, time.monotonic() - t0

        try:
            call, wall = asyncio.run(timed())
        finally:
            w.close()
    assert call.completion is not None and [a.error_kind for a in call.attempts] == ["rate_limit"]
    (row,) = w.rows()
    assert row["requests"] == 2 and row["rate_limited"] == 1
    # the 0.3 s, counted once: never more than the call lasted (twice would be 0.6 s against a call of 0.3 s and
    # two loopback requests; a loaded machine that overruns the sleep makes the call longer too, so no fixed bound)
    assert 0.28 <= row["waited_s"] <= wall


@pytest.mark.slow
def test_play_shows_the_endpoint_s_figures_in_one_line(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from toolkit.record.load import load

    with FakeOpenAIServer(latency=0.02, capacity=2, retry_after=0.1) as server:
        out = subprocess.run([sys.executable, "-m", "toolkit", "play", "--quiet", "--model",
                              f"openai:ok@{server.base_url}?max_connections=6", "--out", str(tmp_path)],
                             cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    (row,) = load(tmp_path).endpoints.to_dict("records")
    assert row["rate_limited"] == server.rejected >= 1 and row["requests"] == len(server.requests)
    lines = [line for line in out.stdout.splitlines() if line.startswith("endpoints: ")]
    assert lines == [f"endpoints: {server.base_url} peak {row['peak_in_flight']} in flight of 6 allowed, limit "
                     f"settled at {row['limit']} (lowest {row['lowest_limit']}), {row['rate_limited']} 429"
                     f"{'s' * (row['rate_limited'] != 1)}, {row['waited_s']:.1f} s waited over {row['requests']} "
                     "requests"]


@pytest.mark.slow
def test_a_study_s_line_sums_its_runs_figures_per_endpoint(tmp_path):
    """sweep and tournament end with one line over every run of the study: the highest peak, the last run's
    limit and the lowest one, the 429s, seconds waited and requests summed."""
    from toolkit.cli.common import endpoints_line
    from toolkit.record.rows import EndpointRow
    from toolkit.record.run_log import Run

    assert endpoints_line(tmp_path) is None  # no runs yet
    for cell, (peak, limit, lowest, limited, waited, requests) in enumerate([(9, 16, 8, 2, 1.25, 100),
                                                                            (5, 32, 16, 1, 0.5, 40)]):
        with Run(tmp_path / f"cell{cell}", "cell") as run:
            run.write(EndpointRow(run_id=run.run_id, endpoint="http://127.0.0.1:9/v1", max_connections=64,
                                  limit=limit, lowest_limit=lowest, peak_in_flight=peak, requests=requests,
                                  rate_limited=limited, waited_s=waited))
    assert endpoints_line(tmp_path) == ("endpoints: http://127.0.0.1:9/v1 peak 9 in flight of 64 allowed, limit "
                                        "settled at 32 (lowest 8), 3 429s, 1.8 s waited over 140 requests")
    with Run(tmp_path / "offline", "cell"):  # a run that asked no endpoint adds nothing
        pass
    assert endpoints_line(tmp_path / "offline") is None


def test_the_x_ratelimit_headers_openai_sends_are_read():
    """OpenAI's x-ratelimit-* headers, as it writes them, into limits.Told; a value that does not parse is left
    unsaid (before: the headers were not read at all)."""
    from toolkit.llm.limits import Told
    from toolkit.llm.openai_backend import _told

    said = _told({"x-ratelimit-limit-requests": "600", "x-ratelimit-remaining-requests": "599",
                  "x-ratelimit-reset-requests": "6m0s", "x-ratelimit-limit-tokens": "150000",
                  "x-ratelimit-remaining-tokens": "149984", "x-ratelimit-reset-tokens": "20ms"})
    assert said == Told(600, 599, 150000, 149984)  # the -reset-* headers are not kept (limits.Told)
    assert _told({"x-ratelimit-limit-requests": "lots", "x-ratelimit-remaining-requests": "-1"}) == Told()
    assert _told({"content-type": "application/json"}) is None


def test_a_told_rate_is_kept_to_as_a_stated_one_and_a_remaining_count_lowers_the_bucket():
    """An endpoint that says 600 requests a minute, with no limit in the spec: the gate keeps to 600 a minute from
    then on, exactly as with ?rpm=600; a remaining count below the bucket lowers it; a fixed gate learns nothing."""
    from toolkit.llm import limits as L

    now, told = 1000.0, L.Told(limit_requests=600, remaining_requests=599)
    learned, stated = L.fresh(L.Limits(), now), L.fresh(L.Limits(rpm=600), now)
    assert told.news(learned, L.Limits())
    L.told(learned, L.Limits(), now, *told)
    assert learned.rpm_told == 600 and not told.news(learned, L.Limits())  # nothing new the second time
    for s, limits in ((learned, L.Limits()), (stated, L.Limits(rpm=600))):
        starts = [L.rate_wait(s, limits, now, 0) == 0 and (L.take(s, 0) or True) for _ in range(10)]
        assert sum(starts) == 5  # half a second's burst, then a wait
        assert 0.09 < L.rate_wait(s, limits, now, 0) < 0.11  # one request every 1/9.7 s
    L.told(learned, L.Limits(), now + 1, 600, 0)  # the endpoint has none left: the bucket has none either
    assert learned.requests == 0
    fixed = L.fresh(L.Limits(adaptive=False), now)
    assert not told.news(fixed, L.Limits(adaptive=False))
    L.told(fixed, L.Limits(adaptive=False), now, *told)
    assert fixed.rpm_told == 0 and L.rate_wait(fixed, L.Limits(adaptive=False), now, 0) == 0


def test_two_models_on_one_endpoint_are_kept_to_the_lower_rate_either_says():
    """OpenAI says its x-ratelimit-* figures per model; the gate is per endpoint. Two models on one base URL,
    answering in turn (500 and 10,000 requests a minute): the gate keeps to 500 whichever answered last, as it
    keeps to the stricter of two stated rates. Before, the rate flipped with every answer (diff read s18, L2):
    10,000 after the second model's."""
    from toolkit.llm import limits as L

    now, s, limits = 1000.0, L.fresh(L.Limits(), 1000.0), L.Limits()
    for told in (L.Told(limit_requests=500), L.Told(limit_requests=10000), L.Told(limit_requests=500)):
        if told.news(s, limits):
            L.told(s, limits, now, *told)
        assert L.rates(s, limits) == (500, None)
    assert not L.Told(limit_requests=10000).news(s, limits)  # the endpoint's store is not asked again
    L.told(s, limits, now, None, None, 90000)
    L.told(s, limits, now, None, None, 2000000)
    assert L.rates(s, limits) == (500, 90000)


def test_a_429_cuts_the_window_to_half_of_what_was_in_flight():
    """24 requests in flight when the endpoint refuses: the window goes to 12, not to half of 64 (32, above what
    was sent: the next round trip would meet the same limit)."""
    from toolkit.llm import limits as L

    s = L.fresh(L.Limits(), 1000.0)
    s.in_flight = 24
    L.rate_limited(s, L.Limits(), 1000.0, 999.9, 1.0)
    assert s.limit == 12


@pytest.mark.slow
def test_an_endpoint_saying_its_rpm_in_headers_is_kept_to_without_a_limit_in_the_spec():
    """The loopback endpoint allows 1200 requests a minute and says so in x-ratelimit-* headers, as OpenAI does; no
    rpm in the spec. After one answer, 40 requests at once: the gate paces them at the rate it was told (one
    429 at most). Before, the headers were not read: the 40 went at once and about 20 met a 429."""
    with FakeOpenAIServer(rpm=1200, ratelimit_headers=True) as server:
        async def run():
            model = get_model(f"openai:ok@{server.base_url}", backoff_initial_s=0.05, max_attempts=40)
            await model.generate(Request())
            return await asyncio.gather(*(model.generate(Request(messages=[{"role": "user", "content": str(i)}]))
                                          for i in range(40)))

        calls = asyncio.run(run())
    assert all(c.completion is not None for c in calls)
    assert server.accepted == 41 and server.rejected <= 1


def test_a_tokens_a_minute_limit_told_by_the_endpoint_is_corrected_by_each_answers_usage():
    """A request is charged its estimate when sent and corrected by its usage when answered, whether the tpm was
    given in the spec or told by the endpoint's x-ratelimit-limit-tokens (session 18's diff read: a told limit kept
    every request at its estimate)."""
    from toolkit.llm import limits as L

    for limits, told in ((L.Limits(tpm=10_000), 0.0), (L.Limits(), 10_000.0)):
        s = L.State(window=4, ssthresh=64, tpm_told=told, tokens=5_000)
        L.answered(s, limits, None, estimated=1_000, used=200)
        assert s.tokens == 5_800, (limits, told)


def test_a_request_cancelled_while_a_blocking_store_answers_gives_its_slot_back():
    """A request cancelled while the gate asks a blocking store (a Dask scheduler's, one round trip from a
    thread) for a slot: the slot the store grants it anyway is given back. Before, it stayed taken until the
    process's client closed (diff read s18, L6). The store is this process's MemoryStore made as slow as a
    round trip to a busy scheduler (0.3 s), so that the cancel lands while it answers."""
    from toolkit.llm.gate import MemoryStore
    from toolkit.llm.limits import Limits

    class SlowStore(MemoryStore):
        blocking = True

        def enter(self, limits, tokens, now):
            time.sleep(0.3)
            return super().enter(limits, tokens, now)

    store = SlowStore(Limits(4))

    async def main() -> None:
        g = EndpointGate(4, store=store)
        asking = asyncio.create_task(g.acquire())
        await asyncio.sleep(0.1)
        asking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asking
        await asyncio.sleep(0.4)  # the store's answer has come

    asyncio.run(main())
    assert store.state.in_flight == 0


def test_the_loopback_servers_ratelimit_headers_are_read_under_its_lock():
    """The headers say the bucket as it was while the server's lock was held: a request that takes from it the
    moment the lock is let go changes nothing said. Before, the remaining count was read after the lock was let go
    (diff read s18, L9): 9 left said beside a reset computed from 10. A request's thread is played by the lock's
    release."""
    server = FakeOpenAIServer(rpm=600, ratelimit_headers=True)  # 10 a second, a bucket of 10
    try:
        real = server.lock

        class Released:
            def __enter__(self):
                return real.__enter__()

            def __exit__(self, *exc):
                real.__exit__(*exc)
                with real:
                    server.rate_wait()  # another request takes one at once

        server.lock = Released()
        said = server.told()
    finally:
        server.httpd.server_close()
    assert said["x-ratelimit-remaining-requests"] == "10" and said["x-ratelimit-reset-requests"] == "0ms"
