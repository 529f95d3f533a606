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
microseconds).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Iterator

from toolkit.llm import limits as L
from toolkit.llm.limits import Limits, State, Ticket

POLL_S = 0.05  # a process waiting for a slot looks again this often
_CLIENTS: dict[tuple[int, str], Any] = {}  # (pid, address) → this process's client of that scheduler


def is_address(where: str) -> bool:
    """Whether ``TOOLKIT_SHARED_LIMITS`` names a Dask scheduler (``tcp://…``, ``tls://…``) rather than a folder."""
    return "://" in where


def client(address: str) -> Any:
    """This process's own client of the scheduler at ``address`` (made once; never the default client, so the
    notebook's own Dask code is not redirected)."""
    import os

    from distributed import Client

    key = (os.getpid(), address)
    if key not in _CLIENTS:
        _CLIENTS[key] = Client(address, set_as_default=False, timeout=30)
    return _CLIENTS[key]


class DaskStore:
    """An endpoint's figures on a Dask scheduler (see the module's docstring); the gate's store interface."""

    poll_s = POLL_S

    def __init__(self, address: str, name: str, limits: Limits):
        from distributed import Lock, Semaphore

        c = self.client = client(address)
        self.key = ["toolkit-limits", name]
        self.lock = Lock(f"toolkit-limits-{name}", scheduler_rpc=c.scheduler, loop=c.loop)
        self.slots = Semaphore(limits.max_connections, f"toolkit-slots-{name}", scheduler_rpc=c.scheduler,
                               loop=c.loop)
        self.last = L.fresh(limits, time.time())
        self._thread = threading.Lock()  # a Semaphore object's leases are this process's: threads take turns

    @contextlib.contextmanager
    def _state(self, limits: Limits, now: float) -> Iterator[State]:
        with self._thread:
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
