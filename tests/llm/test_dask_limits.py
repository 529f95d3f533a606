"""One limit per endpoint for the workers of a Dask cluster, kept by its scheduler with Dask's own primitives
(toolkit.llm.dask_limits): a real LocalCluster (a scheduler and worker processes), real HTTP to the loopback
server enforcing a concurrency limit with 429s. Each worker plays in a working folder of its own, as workers on
machines that share no folder do. Before dask_limits a scheduler's address in TOOLKIT_SHARED_LIMITS was taken for
a folder (relative to each worker's working folder: one per worker), so each worker kept its own limit: both
tests fail there (429s and 8 in flight; the other worker's requests go while the holder lives).

The store's own behaviour against a scheduler alone (``dask scheduler``, toolkit.testing.dask_cluster): a stopped
a study's block closes its client, a dead address is refused
before a game starts."""

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from toolkit.llm.shared_limits import ENV, shared
from toolkit.testing.loopback_server import FakeOpenAIServer

pytest.importorskip("dask.distributed")


def play(spec: str, n: int, where: str, folder: str, start_at: float = 0.0) -> dict:
    """On a worker: ``n`` calls at once to ``spec`` from ``start_at`` (``time.time()``) on, its limits shared
    through ``where``."""
    import asyncio

    from toolkit.llm import Request, get_model

    os.makedirs(folder, exist_ok=True)
    os.chdir(folder)  # a working folder of its own: no folder shared with the other workers
    os.environ["TOOLKIT_SHARED_LIMITS"] = where

    async def main() -> dict:
        model = get_model(spec, backoff_initial_s=0.05, max_attempts=40, max_total_wait_s=120)
        await asyncio.sleep(max(0.0, start_at - time.time()))  # both workers at once
        began = time.time()
        calls = await asyncio.gather(*(model.generate(Request(messages=[{"role": "user", "content": str(i)}]))
                                       for i in range(n)))
        return {"answered": sum(c.completion is not None for c in calls),
                "retried": sum(len(c.attempts) for c in calls), "during": (began, time.time())}

    return asyncio.run(main())


def warm_up(address: str) -> None:
    """On each worker: what ``play`` imports, and this process's client of the scheduler (made on first use)."""
    import toolkit.llm  # noqa: F401
    from toolkit.llm.dask_limits import client

    client(address)


@pytest.fixture(scope="module")
def cluster():
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as local, \
            Client(local) as client:
        yield client


@pytest.mark.slow
def test_two_dask_workers_keep_to_one_concurrency_limit_through_the_scheduler(tmp_path, cluster):
    address = cluster.scheduler.address
    cluster.run(warm_up, address)  # imports and connection done before the clock starts: the two workers' calls overlap
    with FakeOpenAIServer(latency=0.2, capacity=4, retry_after=0.2) as server:
        spec, start_at = f"openai:ok@{server.base_url}?max_connections=4", time.time() + 3
        futures = [cluster.submit(play, spec, 20, address, str(tmp_path / f"w{i}"), start_at, pure=False,
                                  workers=[w]) for i, w in enumerate(cluster.scheduler_info()["workers"])]
        done = cluster.gather(futures)
    assert [d["answered"] for d in done] == [20, 20]
    assert max(d["during"][0] for d in done) < min(d["during"][1] for d in done)  # both played at once
    assert server.rejected == 0 and server.max_active == 4  # two workers, four in flight at most, never a 429
    assert sum(d["retried"] for d in done) == 0


@pytest.mark.slow
def test_a_killed_dask_worker_gives_its_slots_back(tmp_path, cluster):
    """A worker holds both slots (its requests hang) and is killed with SIGKILL: the other worker's requests
    wait while it lives and go once the scheduler has dropped its client (at once: its connection closed)."""
    address = cluster.scheduler.address
    holder, other = list(cluster.scheduler_info()["workers"])
    with FakeOpenAIServer() as server:
        hung = cluster.submit(play, f"openai:hang@{server.base_url}?max_connections=2", 2, address,
                              str(tmp_path / "a"), pure=False, workers=[holder], allow_other_workers=False)
        deadline = time.monotonic() + 60
        while len(server.log) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(server.log) == 2
        waiting = cluster.submit(play, f"openai:ok@{server.base_url}?max_connections=2", 2, address,
                                 str(tmp_path / "b"), pure=False, workers=[other])
        time.sleep(4)  # the holder keeps its slots while it lives
        assert len(server.log) == 2 and not waiting.done()  # its requests wait for a slot
        pid = cluster.run(os.getpid, workers=[holder])[holder]
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        done = waiting.result(timeout=60)
        freed = time.monotonic() - killed
        hung.cancel()
    assert (done["answered"], done["retried"]) == (2, 0) and freed < 20
    assert [behaviour for _, behaviour in server.log] == ["hang", "hang", "ok", "ok"]


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    from toolkit.testing.dask_cluster import dask_cluster

    with dask_cluster(0, tmp_path_factory.mktemp("scheduler")) as started:
        yield started


@pytest.mark.slow
def test_a_stopped_scheduler_does_not_hold_up_the_games_event_loop(scheduler):
    """The scheduler is stopped (SIGSTOP) for 2 s while a request asks the gate for a slot: the request waits
    for it, the loop's other work goes on (a task ticking every 10 ms). Before, the store's round trips ran on the
    loop itself: it stood still for the whole stop (2.69 s measured in session 17 for a 1.5 s stop)."""
    from toolkit.llm.gate import gate

    pid = scheduler.scheduler.pid

    async def main() -> tuple[float, float]:
        g = gate("http://127.0.0.1:9/stopped", max_connections=4)
        ticket = await g.acquire()  # connected: the client and the figures are there
        g.release(ticket)
        await asyncio.sleep(0.5)
        gaps, ticking = [], True

        async def tick() -> None:
            last = time.monotonic()
            while ticking:
                await asyncio.sleep(0.01)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0.1)
        os.kill(pid, signal.SIGSTOP)
        threading.Timer(2.0, os.kill, (pid, signal.SIGCONT)).start()  # not on the loop: it may stand still
        started = time.monotonic()
        ticket = await g.acquire()
        waited = time.monotonic() - started
        g.release(ticket)
        ticking = False
        await ticker
        return waited, max(gaps)

    try:
        with shared(scheduler.address):
            waited, gap = asyncio.run(main())
    finally:
        os.kill(pid, signal.SIGCONT)
    assert waited > 1.5  # the request did wait for the stopped scheduler
    assert gap < 1.0  # the loop did not (a loaded 2-core machine may hold a 10 ms tick up, not for 2 s)


@pytest.mark.slow
def test_a_studys_block_closes_its_client_of_the_scheduler(scheduler):
    """A process that lives on (a Dask worker, a notebook) keeps no client of a study's scheduler once the
    study's block ends; before, the client stayed connected for the process's life."""
    from distributed import Client

    from toolkit.llm.gate import gate

    async def one_request() -> None:
        g = gate("http://127.0.0.1:9/closed", max_connections=4)
        g.release(await g.acquire())

    with Client(scheduler.address, set_as_default=False) as watcher:
        def clients() -> set:
            return set(watcher.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.clients)))

        before = clients()
        with shared(scheduler.address):
            asyncio.run(one_request())
            during = clients()
        deadline = time.monotonic() + 10
        while clients() != before and time.monotonic() < deadline:
            time.sleep(0.1)
        after = clients()
    assert len(during - before) == 1  # the store's client
    assert after == before


@contextlib.contextmanager
def refusing_port():
    """A port of 127.0.0.1 bound and not listening for the block's time: connections to it are refused, and no
    other process can take it meanwhile (a port closed before the probe could be)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


@pytest.mark.slow
def test_a_dead_scheduler_address_is_refused_before_a_game(tmp_path):
    """TOOLKIT_SHARED_LIMITS naming a scheduler that is not there: one line on stderr, exit 2, nothing written.
    Before, the command went on (a heuristic game needs no endpoint: exit 0; a model's game failed when it first
    asked the gate, and the process hung at exit closing its client)."""
    with refusing_port() as port:
        address = f"tcp://127.0.0.1:{port}"
        done = subprocess.run([sys.executable, "-m", "toolkit", "play", "--quiet", "--out", str(tmp_path / "out")],
                              env={**os.environ, ENV: address}, capture_output=True, text=True, timeout=180)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and f"TOOLKIT_SHARED_LIMITS={address}" in lines[0]
    assert "no Dask scheduler answers there" in lines[0]
    assert not (tmp_path / "out").exists()


def test_a_probe_that_fails_unexpectedly_is_not_taken_for_an_answer(monkeypatch):
    """``reachable``: a probe that raises something other than a connection error (a bug, a RuntimeError of
    distributed's) raises it in the caller; on the code before (diff read s17 F9) it ended the probe's thread with
    a traceback and the address was taken as reachable. A test double: a real scheduler cannot be made to fail
    so on demand. A closed port is still ``Unreachable``."""
    import distributed.comm

    from toolkit.llm.dask_limits import Unreachable, reachable

    with refusing_port() as port, pytest.raises(Unreachable):
        reachable(f"tcp://127.0.0.1:{port}", timeout=0.3)

    async def broken(address, timeout=None):
        raise RuntimeError("the probe broke")

    monkeypatch.setattr(distributed.comm, "connect", broken)
    with pytest.raises(RuntimeError, match="the probe broke"):
        reachable(f"tcp://127.0.0.1:{port}", timeout=2)


@pytest.mark.slow
def test_what_an_endpoint_says_of_its_limits_is_kept_on_the_scheduler(scheduler):
    """An answer's x-ratelimit-* headers and a 429, through a gate whose figures are on the scheduler: the
    scheduler's figures keep the rpm said and the cut window, and the request's slot is given back (its plugin
    applies each change in one round trip)."""
    from distributed import Client

    from toolkit.llm.gate import gate
    from toolkit.llm.limits import State, Told
    from toolkit.llm.shared_limits import digest

    endpoint = "http://127.0.0.1:9/told"

    async def main() -> None:
        g = gate(endpoint, max_connections=8)
        ticket = await g.acquire()
        g.answered(ticket, None, Told(limit_requests=600, remaining_requests=599))
        g.rate_limited(1.0, ticket)
        g.release(ticket)

    with shared(scheduler.address):
        asyncio.run(main())  # the block's end waits for the queued round trips
    with Client(scheduler.address, set_as_default=False) as watcher:
        s = State.unpack(watcher.get_metadata(["toolkit-limits", digest(endpoint)]))
    assert s.rpm_told == 600 and s.rate_limited == 1 and s.in_flight == 0 and s.limit == 1


class FakeScheduler:
    """A test double of what ``OnScheduler`` uses of a Dask scheduler (its metadata and handlers): the figures an
    older toolkit left on a long-lived scheduler cannot be put on a real one started here by other means."""

    def __init__(self):
        self.metadata, self.handlers = {}, {}

    def get_metadata(self, keys, default=None):
        return self.metadata.get(tuple(keys), default)

    def set_metadata(self, keys, value):
        self.metadata[tuple(keys)] = value


def on_scheduler():
    from toolkit.llm.limits_on_scheduler import OnScheduler

    plugin, scheduler = OnScheduler(), FakeScheduler()
    asyncio.run(plugin.start(scheduler))
    return plugin, scheduler


def test_figures_an_older_toolkit_left_on_the_scheduler_are_started_afresh():
    """A scheduler that outlived an upgrade holds the endpoint's figures packed by the toolkit before a1bec18
    (96 bytes, "<10d2q"): requests are granted and the figures are rewritten in today's size. Before, every
    request's enter raised struct.error (diff read s18, M4)."""
    import struct

    from toolkit.llm.limits import State

    plugin, scheduler = on_scheduler()
    key = ("toolkit-limits", "e")
    scheduler.metadata[key] = struct.pack("<10d2q", *([1.0] * 10), 0, 0)
    limits = [8, None, None, True]
    assert plugin.enter("e", "c1", limits, 0, time.time())["granted"]
    assert len(scheduler.metadata[key]) == State.FORMAT.size
    scheduler.metadata[key] = b"\0" * 96
    assert plugin.leave("e", "c1") is None  # nothing of today's to keep
    scheduler.metadata[key] = b"\0" * 96
    plugin.held["e"] = {"c2": 1}
    plugin.remove_client(scheduler, "c2")
    assert plugin.held["e"] == {}


def test_a_429s_cut_is_in_the_endpoints_table_at_once_with_a_dask_store():
    """The endpoints table's lowest limit after a 429, the figures kept by the scheduler's plugin: the cut window
    (4 in flight -> 2). Before, DaskStore.update returned the figures from before the change, so the table kept
    the limit the 429 had just cut (diff read s18, L1). The plugin runs in this process on a test double of the
    scheduler, each round trip 20 ms (the real round trips are the slow tests above)."""
    from types import SimpleNamespace

    from toolkit.llm.dask_limits import DaskStore
    from toolkit.llm.gate import EndpointGate, watch
    from toolkit.llm.limits import Limits

    plugin, _ = on_scheduler()
    store = DaskStore("tcp://127.0.0.1:9", "e", Limits(64))
    store.client = SimpleNamespace(id="c1")

    def call(handler, **kw):  # one round trip: milliseconds on a real scheduler
        time.sleep(0.02)
        return getattr(plugin, handler)(name="e", **kw)

    store._call = call

    async def main() -> list:
        g = EndpointGate(64, endpoint="http://e/v1", store=store)
        seen = watch()
        try:
            tickets = [await g.acquire() for _ in range(4)]  # a shared store's first window
            g.rate_limited(1.0, tickets[0])
            for t in tickets:
                g.release(t)
            return seen.rows()
        finally:
            seen.close()

    rows = asyncio.run(main())
    store.close()
    assert rows[0]["rate_limited"] == 1 and rows[0]["lowest_limit"] == 2
