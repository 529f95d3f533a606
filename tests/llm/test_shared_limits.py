"""One limit per endpoint for every process of a study (toolkit.llm.shared_limits): real worker processes
(``python -c``), each with its own gate, against the loopback server enforcing a concurrency limit or a
requests-per-minute limit with 429s (real HTTP). On 51c499d every process had its own limit: these fail there."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toolkit.testing.loopback_server import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
WORKER = """
import asyncio, json, sys
from toolkit.llm import Request, get_model

async def main(spec, n, warm):
    # one call elsewhere first: a cold process takes seconds (on a busy machine) between its first request's slot
    # and its sending, and its first requests would reach the endpoint bunched with the next ones
    await get_model(warm).generate(Request())
    model = get_model(spec, backoff_initial_s=0.05, max_attempts=40, max_total_wait_s=120)
    print("asking", flush=True)
    calls = await asyncio.gather(*(model.generate(Request(messages=[{"role": "user", "content": str(i)}]))
                                   for i in range(n)))
    print(json.dumps({"answered": sum(c.completion is not None for c in calls),
                      "retried": sum(len(c.attempts) for c in calls)}))

asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
"""


@pytest.fixture(scope="module")
def warm():
    with FakeOpenAIServer() as server:
        yield f"openai:ok@{server.base_url}"


def workers(spec: str, n: int, count: int, limits: Path, warm: str) -> list[subprocess.Popen]:
    env = {**os.environ, "TOOLKIT_SHARED_LIMITS": str(limits), "PYTHONPATH": str(ROOT)}
    return [subprocess.Popen([sys.executable, "-c", WORKER, spec, str(n), warm], env=env, cwd=ROOT,
                             stdout=subprocess.PIPE, text=True) for _ in range(count)]


def results(procs: list[subprocess.Popen]) -> list[dict]:
    return [json.loads(p.communicate(timeout=120)[0].splitlines()[-1]) for p in procs]


@pytest.mark.slow
def test_four_workers_keep_to_one_concurrency_limit(tmp_path, warm):
    with FakeOpenAIServer(latency=0.1, capacity=4, retry_after=0.2) as server:
        done = results(workers(f"openai:ok@{server.base_url}?max_connections=4", 12, 4, tmp_path / "limits", warm))
    assert [d["answered"] for d in done] == [12] * 4
    assert server.rejected == 0 and server.max_active == 4  # four processes, four in flight at most, never a 429
    assert sum(d["retried"] for d in done) == 0


@pytest.mark.slow
def test_four_workers_keep_to_one_requests_per_minute_limit(tmp_path, warm):
    with FakeOpenAIServer(rpm=600) as server:  # 10 a second, at most 10 at once
        started = time.monotonic()
        done = results(workers(f"openai:ok@{server.base_url}?rpm=600", 10, 4, tmp_path / "limits", warm))
        took = time.monotonic() - started
    assert [d["answered"] for d in done] == [10] * 4
    # a few 429s at most, from requests that reached the server bunched after leaving apart (four processes on a
    # busy machine); each process on its own would have sent its 10 at once: 30 or more 429s
    assert server.rejected <= 4 and server.accepted == 40
    assert took >= 2.5  # 40 requests at 10 a second after a burst of 10: the rate was kept, not overrun


@pytest.mark.slow
def test_a_worker_killed_holding_slots_releases_them(tmp_path, warm):
    """A worker holds both slots of the endpoint (its requests hang) and is killed with SIGKILL: another
    worker's requests wait while it lives and go as soon as it is dead."""
    with FakeOpenAIServer() as server:
        (holder,) = workers(f"openai:hang@{server.base_url}?max_connections=2", 2, 1, tmp_path / "limits", warm)
        deadline = time.monotonic() + 60
        while len(server.log) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(server.log) == 2
        (other,) = workers(f"openai:ok@{server.base_url}?max_connections=2", 2, 1, tmp_path / "limits", warm)
        assert other.stdout.readline().strip() == "asking"
        waited = time.monotonic() + 3
        while len(server.log) == 2 and time.monotonic() < waited:
            time.sleep(0.05)
        assert len(server.log) == 2  # its requests wait for a slot
        holder.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        (done,) = results([other])
        freed = time.monotonic() - killed
    assert done == {"answered": 2, "retried": 0} and freed < 15  # at once (seconds on a machine this busy)
    assert [behaviour for _, behaviour in server.log] == ["hang", "hang", "ok", "ok"]


@pytest.mark.slow
def test_four_workers_learn_an_endpoints_limits_from_its_headers_with_few_429s(tmp_path, warm):
    """No limit in the spec; the endpoint allows 6 in flight and 1200 requests a minute, and says the rpm in its
    x-ratelimit-* headers as OpenAI does. Four workers send 12 requests each at once: the study's window starts
    at 4 (limits.SHARED_START) and grows from the answers, the rpm is kept to once an answer has told it; a few
    429s at most (2-3 expected: slow start reaches 7-8 in flight against 6 in the first round trips; up to 8 on a
    loaded machine, where the workers' requests bunch). Before, the study's window started at 64 and the headers
    were not read: each worker's first 12 went at once (38 429s on main before a1bec18)."""
    with FakeOpenAIServer(latency=0.1, capacity=6, rpm=1200, retry_after=0.2, ratelimit_headers=True) as server:
        done = results(workers(f"openai:ok@{server.base_url}", 12, 4, tmp_path / "limits", warm))
    assert [d["answered"] for d in done] == [12] * 4
    assert server.accepted == 48 and server.rejected <= 8
