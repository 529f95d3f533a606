"""One limit per endpoint for the processes of a study on a Dask cluster, kept by the cluster's scheduler with
Dask's own coordination primitives (no folder the machines share is needed, and no service of ours to run).

``TOOLKIT_SHARED_LIMITS`` set to a scheduler's address (``tcp://HOST:8786``) makes every gate of the process keep
its endpoint's figures (``toolkit.llm.limits.State``: the learned window, the Retry-After pause, the rpm and tpm
buckets) on that scheduler, as ``shared_limits.FileStore`` keeps them in a file:

- the figures are the scheduler's metadata (``Client.set_metadata``: the packed ``State``), read and written
  under a ``distributed.Lock``, so one process at a time changes them;
- each request in flight holds a lease of a ``distributed.Semaphore`` (as many leases as ``max_connections``);
  a request starts only while the leases held are fewer than the window. A lease is Dask's: its client refreshes
  it, and the scheduler takes back the leases (and the lock) of a process that stops refreshing them (a killed
  worker or kernel) after ``distributed.scheduler.locks.lease-timeout`` (30 s by default).

Each call is a round trip to the scheduler (a few per request: milliseconds on one network), which is small
beside a model call's latency; a study whose workers share a folder may use the folder instead (``FileStore``:
microseconds). The connection is made on first use; a scheduler that does not answer within ``CONNECT_S`` is
one clear error (``Unreachable``), and ``reachable`` says so up front (the CLI refuses such a
``TOOLKIT_SHARED_LIMITS`` before a game starts). ``close_clients`` ends this process's clients (at exit, and when a
study's ``shared_limits.shared`` or ``adopt`` block ends).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import threading
import time
import weakref
from typing import Any, Iterator

from toolkit.llm import limits as L
from toolkit.llm.limits import Limits, State, Ticket

POLL_S = 0.05  # a process waiting for a slot looks again this often
CONNECT_S = 10.0  # a scheduler that has not answered in this long is not there
_CLIENTS: dict[tuple[int, str], Any] = {}  # (pid, address) → this process's client of that scheduler
_STORES: "weakref.WeakSet[DaskStore]" = weakref.WeakSet()  # this process's stores (stopped before their client ends)
_LOCK = threading.Lock()


class Unreachable(ValueError):
    """``TOOLKIT_SHARED_LIMITS`` names a Dask scheduler that does not answer."""

    def __init__(self, address: str, why: object):
        super().__init__(f"TOOLKIT_SHARED_LIMITS={address}: no Dask scheduler answers there within {CONNECT_S:g} s "
                         f"({why}); start it (dask scheduler), or unset TOOLKIT_SHARED_LIMITS")


def is_address(where: str) -> bool:
    """Whether ``TOOLKIT_SHARED_LIMITS`` names a Dask scheduler (``tcp://…``, ``tls://…``) rather than a folder."""
    return "://" in where


def reachable(address: str, timeout: float = CONNECT_S) -> None:
    """Raise ``Unreachable`` unless a Dask scheduler answers at ``address`` within ``timeout`` seconds (one
    connection, opened and closed)."""
    from distributed.comm import connect

    async def probe() -> None:
        comm = await connect(address, timeout=timeout)
        await comm.close()

    failed: list[BaseException] = []

    def run() -> None:  # a loop of its own, also where the caller's loop is running (a game's first request)
        try:
            asyncio.run(probe())
        except BaseException as exc:  # handed to the calling thread (here it would end the thread, unseen)
            failed.append(exc)

    probing = threading.Thread(target=run, daemon=True)
    probing.start()
    probing.join()
    if failed and isinstance(failed[0], (OSError, ValueError, TypeError)):  # refused, no such host, timed out;
        raise Unreachable(address, failed[0])  # a malformed address
    if failed:  # anything else is not an answer either: the caller's error, as it is
        raise failed[0]


def client(address: str) -> Any:
    """This process's own client of the scheduler at ``address`` (made once; never the default client, so the
    notebook's own Dask code is not redirected)."""
    from distributed import Client

    key = (os.getpid(), address)
    with _LOCK:
        if key not in _CLIENTS:
            reachable(address)  # a dead address is one clear error, not a client left retrying at exit
            try:
                _CLIENTS[key] = Client(address, set_as_default=False, timeout=CONNECT_S)
            except OSError as exc:
                raise Unreachable(address, exc) from None
        return _CLIENTS[key]


def close_clients(address: str | None = None) -> None:
    """End this process's clients (of ``address``, or all): first their stores' leases stop being refreshed, then
    each client closes (the scheduler forgets it at once)."""
    for store in list(_STORES):
        if address is None or store.address == address:
            store.close()
    with _LOCK:
        for key in [k for k in _CLIENTS if k[0] == os.getpid() and address in (None, k[1])]:
            with contextlib.suppress(Exception):  # a scheduler gone already: nothing to tell it
                _CLIENTS.pop(key).close(timeout=CONNECT_S)


atexit.register(close_clients)


class DaskStore:
    """An endpoint's figures on a Dask scheduler (see the module's docstring); the gate's store interface."""

    poll_s = POLL_S

    def __init__(self, address: str, name: str, limits: Limits):
        self.address, self.name = address, name
        self.key = ["toolkit-limits", name]
        self.last = L.fresh(limits, time.time())
        self._thread = threading.Lock()  # a Semaphore object's leases are this process's: threads take turns
        self.client: Any = None
        self.lock: Any = None
        self.slots: Any = None
        self._max = limits.max_connections
        _STORES.add(self)

    def _connect(self) -> None:
        """The client, lock and semaphore, made on first use."""
        if self.client is None:
            from distributed import Lock, Semaphore

            c = client(self.address)
            self.lock = Lock(f"toolkit-limits-{self.name}", scheduler_rpc=c.scheduler, loop=c.loop)
            self.slots = Semaphore(self._max, f"toolkit-slots-{self.name}", scheduler_rpc=c.scheduler, loop=c.loop)
            self.client = c

    @contextlib.contextmanager
    def _state(self, limits: Limits, now: float) -> Iterator[State]:
        with self._thread:
            self._connect()
            self.lock.acquire()
            try:
                data = self.client.get_metadata(self.key, default=None)
                s = State.unpack(data) if data else L.fresh(limits, now)  # None: the study's first request
                s.window = min(s.window, limits.max_connections)
                yield s
                self.client.set_metadata(self.key, s.pack())
                self.last = s
            finally:
                self.lock.release()

    def enter(self, limits: Limits, tokens: int, now: float) -> tuple[Ticket | None, float | None]:
        with self._state(limits, now) as s:
            wait = L.rate_wait(s, limits, now, tokens)
            if wait > 0:
                return None, wait
            s.in_flight, s.counted_at = self.slots.get_value(), now  # leases of dead processes: until they expire
            if s.in_flight < s.limit and self.slots.acquire(timeout=0):
                L.take(s, tokens)
                return Ticket(0, now, tokens), 0.0
            s.busy_at = now
            return None, None

    def leave(self, ticket: Ticket) -> None:
        with self._thread:
            self.slots.release()

    def update(self, limits: Limits | None, change: Any) -> State:
        with self._state(limits or Limits(), time.time()) as s:
            change(s)
        return s

    def snapshot(self, limits: Limits) -> State:
        return self.last

    def close(self) -> None:
        """The leases' refreshing stopped (the client itself is ``close_clients``')."""
        if self.slots is not None:
            with contextlib.suppress(Exception):
                self.client.loop.add_callback(self.slots.refresh_callback.stop)
