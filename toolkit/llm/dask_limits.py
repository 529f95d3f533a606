"""One limit per endpoint for the processes of a study on a Dask cluster, kept by the cluster's scheduler (no
folder the machines share is needed, and no service of ours to run).

``TOOLKIT_SHARED_LIMITS`` set to a scheduler's address (``tcp://HOST:8786``) makes every gate of the process keep
its endpoint's figures (``toolkit.llm.limits.State``: the learned window, the Retry-After pause, the rpm and tpm
buckets) on that scheduler, as ``shared_limits.FileStore`` keeps them in a file. The scheduler's side is a Dask
scheduler plugin (``limits_on_scheduler.OnScheduler``, registered by a study's first client,
``Client.register_plugin``) that adds three handlers to the scheduler's own server: ``enter`` (may a request
start?), ``leave`` (it ended) and ``update`` (an answer or a 429 came back, as a ``limits.Change``). Each is one
round trip, and each runs to its end on the scheduler's event loop, so no two processes change the figures at
once, without a lock (Dask's own
``Lock`` and ``Semaphore`` cost six round trips a request here, which a busy scheduler turned into most of a
second). The figures are the scheduler's metadata (``Client.get_metadata(["toolkit-limits", NAME])``: the packed
``State``); the requests in flight are counted per client of the scheduler, and a client the scheduler removes
(its process killed, or its connection dead: Dask's TCP timeout, ``distributed.comm.timeouts.tcp``) gives its
requests' slots back at once. A process stopped with its connection open (SIGSTOP) keeps its slots until it
goes on or its connection dies. The scheduler must be able to import ``toolkit`` (start it from the study's
environment, as Dask expects of its scheduler and workers); one that cannot is one clear error.

The round trips never hold up the games' event loop: the gate asks ``enter`` from a thread (``blocking``), which
hands it to the client's own loop; ``leave`` and ``update`` go to this store's thread (in order) and return at
once (``snapshot`` is the figures as last read). The connection is made on first use; a scheduler that does not
answer within ``CONNECT_S`` is one clear error (``Unreachable``), and ``reachable`` says so up front (the CLI
refuses such a ``TOOLKIT_SHARED_LIMITS`` before a game starts). ``close_clients`` ends this process's clients (at
exit, and when a study's ``shared_limits.shared`` or ``adopt`` block ends).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import copy
import logging
import os
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import astuple
from typing import Any

from toolkit.llm import limits as L
from toolkit.llm.limits import Limits, State, Ticket

POLL_S = 0.05  # a process waiting for a slot looks again this often
CONNECT_S = 10.0  # a scheduler that has not answered in this long is not there
_CLIENTS: dict[tuple[int, str], Any] = {}  # (pid, address) → this process's client of that scheduler
_STORES: "weakref.WeakSet[DaskStore]" = weakref.WeakSet()  # this process's stores (stopped before their client ends)
_LOCK = threading.Lock()
log = logging.getLogger(__name__)


class Unreachable(ValueError):
    """``TOOLKIT_SHARED_LIMITS`` names a Dask scheduler that does not answer."""

    def __init__(self, address: str, why: object):
        super().__init__(f"TOOLKIT_SHARED_LIMITS={address}: no Dask scheduler answers there within {CONNECT_S:g} s "
                         f"({why}); start it (dask scheduler), or unset TOOLKIT_SHARED_LIMITS")


class NotOnScheduler(ValueError):
    """The scheduler at ``TOOLKIT_SHARED_LIMITS`` cannot run the limits' side of the study (no ``toolkit`` there)."""

    def __init__(self, address: str, why: object):
        super().__init__(f"TOOLKIT_SHARED_LIMITS={address}: the Dask scheduler there cannot keep the study's limits "
                         f"({type(why).__name__}: {why}); start it from the study's environment (dask scheduler)")


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
                made = Client(address, set_as_default=False, timeout=CONNECT_S)
            except OSError as exc:
                raise Unreachable(address, exc) from None
            try:
                from toolkit.llm.limits_on_scheduler import OnScheduler

                made.register_plugin(OnScheduler(), name=OnScheduler.name)  # once per scheduler (idempotent)
            except Exception as exc:  # the scheduler's environment has no toolkit (it cannot unpickle the plugin)
                made.close()
                raise NotOnScheduler(address, exc) from None
            _CLIENTS[key] = made
        return _CLIENTS[key]


def close_clients(address: str | None = None) -> None:
    """End this process's clients (of ``address``, or all): first their stores' queued round trips are done,
    then each client closes (the scheduler forgets it at once, and frees any slot it held)."""
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
    blocking = True  # the gate asks ``enter`` from a thread

    def __init__(self, address: str, name: str, limits: Limits):
        self.address, self.name = address, name
        self.last = L.fresh(limits, time.time(), L.SHARED_START)
        self._connecting = threading.Lock()
        self.client: Any = None
        self._later = ThreadPoolExecutor(1, thread_name_prefix=f"toolkit-limits-{name}")  # leave, update: in order
        _STORES.add(self)

    def _connect(self) -> Any:
        """This process's client of the scheduler, made on first use."""
        with self._connecting:
            if self.client is None:
                self.client = client(self.address)
            return self.client

    def _call(self, handler: str, **kw: Any) -> Any:
        """One handler of ``OnScheduler``, one round trip (from any thread but the client's loop)."""
        c = self._connect()
        return c.sync(getattr(c.scheduler, f"toolkit_limits_{handler}"), name=self.name, **kw)

    def enter(self, limits: Limits, tokens: int, now: float) -> tuple[Ticket | None, float | None]:
        c = self._connect()
        reply = self._call("enter", client=c.id, limits=list(astuple(limits)), tokens=tokens, now=now)
        self.last = State.unpack(reply["state"])
        return (Ticket(0, now, tokens) if reply["granted"] else None), reply["wait"]

    def leave(self, ticket: Ticket) -> None:
        """The request's slot given back, on this store's thread (returns at once)."""
        def give_back() -> None:
            data = self._call("leave", client=self.client.id)
            if data:
                self.last = State.unpack(data)
        self._queue(give_back)

    def update(self, limits: Limits | None, change: L.Change) -> State:
        """``change`` applied to the shared figures on this store's thread; returns the figures as last read with
        ``change`` applied here too (what the scheduler will hold, as far as this process knows: a 429's cut
        window is seen at once, by the endpoints table's lowest limit too)."""
        if not isinstance(change, L.Change):
            raise TypeError(f"a Dask scheduler applies a limits.Change, not {change!r}")
        expected = copy.copy(self.last)
        change(expected)
        self.last = expected

        def apply() -> None:
            self.last = State.unpack(self._call("update", limits=list(astuple(change.limits)), change=change.op,
                                                args=list(change.args), now=time.time()))
        self._queue(apply)
        return expected

    def _queue(self, job: Any) -> None:
        def logged() -> None:
            try:
                job()
            except Exception as exc:  # a scheduler gone mid-study: it has forgotten this client's slots
                log.warning("shared limits at %s: %s", self.address, exc)
        with contextlib.suppress(RuntimeError):  # closed: the process is ending
            self._later.submit(logged)

    def snapshot(self, limits: Limits) -> State:
        return self.last

    def close(self) -> None:
        """Queued round trips done (the client itself is ``close_clients``'; closing it frees its slots)."""
        self._later.shutdown(wait=True)
