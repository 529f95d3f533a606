"""How many requests go to one endpoint at once, from every game and session of a process (one event loop), and
from every process of a study where its limits are shared (``toolkit.llm.shared_limits``).

An ``EndpointGate`` lets a request start when the endpoint's limits allow it (``toolkit.llm.limits``: the window
of requests in flight, learned from answers and 429s, and the spec's requests and tokens per minute). The window
starts at 64 and grows while requests wait for a slot and the endpoint answers without a 429, up to
``max_connections`` (``TOOLKIT_MAX_CONNECTIONS``, or ``?max_connections=N`` in a spec; 4096 by default); a 429
halves it and its ``Retry-After`` holds every new request to the endpoint until that time (the games of a
process, or of a study, back off together instead of each hammering the endpoint on its own). ``stats()`` says
how far the process is from the endpoint's limits: the peak in flight, the limit now, the 429s seen. A ``Watch``
(``watch()``) keeps the same figures for the time it is open, per endpoint: what a run writes to its
``endpoints`` table (toolkit.record).

The figures live in a store: ``MemoryStore`` (this process alone, the default) or a shared one
(``shared_limits.store_for``, chosen by ``TOOLKIT_SHARED_LIMITS``). A request holds a ``Ticket`` from
``acquire`` to ``release``; ``answered`` and ``rate_limited`` tell the store what came back. A store whose calls
wait on another process (``blocking``: a Dask scheduler's) is asked from a thread, so the loop's other games go on.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from typing import Any

from toolkit.llm import limits as L
from toolkit.llm.limits import Limits, State, Ticket
from toolkit.llm.shared_limits import store_for

# Per event loop: {endpoint: gate}. asyncio primitives belong to a loop.
_GATES: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, EndpointGate]]" = weakref.WeakKeyDictionary()
DEFAULT_MAX = 4096


class MemoryStore:
    """The limits' figures in this process only (every game of the process shares them)."""

    poll_s = None  # only a release in this process frees a slot: no polling

    def __init__(self, limits: Limits):
        self.state = L.fresh(limits, time.time())

    def enter(self, limits: Limits, tokens: int, now: float) -> tuple[Ticket | None, float | None]:
        """A ticket, or None and how long to wait (None: until a slot frees)."""
        s = self.state
        wait = L.rate_wait(s, limits, now, tokens)
        if wait > 0:
            return None, wait
        if s.in_flight >= s.limit:
            s.busy_at = now
            return None, None
        L.take(s, tokens)
        return Ticket(0, now, tokens), 0.0

    def leave(self, ticket: Ticket) -> None:
        self.state.in_flight -= 1

    def update(self, limits: Limits, change: Any) -> State:
        change(self.state)
        return self.state

    def snapshot(self, limits: Limits) -> State:
        return self.state


class EndpointGate:
    def __init__(self, max_connections: int = DEFAULT_MAX, adaptive: bool = True, endpoint: str = "",
                 store: Any = None, rpm: float | None = None, tpm: float | None = None):
        self.endpoint = endpoint
        self.limits = Limits(max_connections, rpm, tpm, adaptive)
        self.store = store if store is not None else MemoryStore(self.limits)
        self.in_flight = 0  # this process's requests in flight
        self.peak = 0
        self.throttled = 0  # 429s this process saw
        self._turn = asyncio.Lock()  # one request at a time waits at the head; the rest queue behind it
        self._freed = asyncio.Event()
        self.blocking = getattr(self.store, "blocking", False)  # its enter waits on the network: ask from a thread

    @property
    def max(self) -> int:
        return self.limits.max_connections

    @property
    def adaptive(self) -> bool:
        return self.limits.adaptive

    @property
    def limit(self) -> int:
        return self.store.snapshot(self.limits).limit

    @property
    def resume_at(self) -> float:
        """``time.time()`` before which no new request starts (0: none held)."""
        return self.store.snapshot(self.limits).resume_at

    @property
    def counts_tokens(self) -> bool:
        """Whether requests are charged their tokens: a tokens-a-minute limit stated, or said by the endpoint."""
        return self.limits.tpm is not None or bool(self.store.snapshot(self.limits).tpm_told)

    def lower(self, limits: Limits) -> None:
        """A model with stricter limits for this endpoint makes its gate's stricter."""
        lowered = self.limits.lower(limits)
        if lowered != self.limits:
            self.limits = lowered
            self.store.update(lowered, L.Change("clamp", lowered))

    def lower_max(self, max_connections: int) -> None:
        self.lower(Limits(max_connections, adaptive=self.limits.adaptive))

    async def acquire(self, tokens: int = 0) -> Ticket:
        """Wait until the limits let a request of ``tokens`` (estimated) start; its ticket."""
        asked = time.monotonic()
        async with self._turn:
            while True:
                if self.blocking:  # round trips to another process (a Dask scheduler): not on the games' loop
                    ticket, wait = await _Asking(self.store).enter(self.limits, tokens)
                else:
                    ticket, wait = self.store.enter(self.limits, tokens, time.time())
                if ticket is not None:
                    break
                wait = self.store.poll_s if wait is None else wait
                self._freed.clear()
                if wait is None:
                    await self._freed.wait()
                else:
                    try:
                        await asyncio.wait_for(self._freed.wait(), wait)
                    except asyncio.TimeoutError:
                        pass
        self.in_flight += 1
        if self.in_flight > self.peak:
            self.peak = self.in_flight
        if _WATCHES:
            for w in _WATCHES:
                w.entered(self, time.monotonic() - asked)
        return ticket

    def release(self, ticket: Ticket) -> None:
        self.store.leave(ticket)
        self.in_flight -= 1
        self._freed.set()

    def slot(self, tokens: int = 0) -> "_Slot":
        """``async with gate.slot() as ticket``: acquire and release around a request."""
        return _Slot(self, tokens)

    def rate_limited(self, retry_after: float | None, ticket: Ticket | None = None, told: tuple | None = None) -> None:
        """A 429 (to the request of ``ticket``): the window halves (once per round trip) and new requests wait
        ``retry_after`` seconds (adaptive gates); what its ``x-ratelimit-*`` headers said (``told``) is kept."""
        self.throttled += 1
        sent_at = ticket.sent_at if ticket is not None else None
        self.heard(told)
        s = self.store.update(self.limits, L.Change("rate_limited", self.limits, (time.time(), sent_at, retry_after)))
        for w in _WATCHES:
            f = w.figures(self)
            f["rate_limited"] += 1
            f["lowest_limit"] = min(f["lowest_limit"], s.limit)

    def answered(self, ticket: Ticket | None = None, used_tokens: int | None = None, told: tuple | None = None) -> None:
        """An answer (to the request of ``ticket``, which used ``used_tokens``): the window may grow; what its
        ``x-ratelimit-*`` headers said (``told``: the endpoint's rates and what remains of them) is kept."""
        self.heard(told)
        if ticket is None:
            self.store.update(self.limits, L.Change("answered", self.limits, (None,)))
        elif self.counts_tokens or (self.limits.adaptive and self._may_grow(ticket)):
            self.store.update(self.limits, L.Change("answered", self.limits, (ticket.sent_at, ticket.tokens,
                                                                              used_tokens)))

    def heard(self, told: tuple | None) -> None:
        """An answer's ``x-ratelimit-*`` headers (``limits.Told``) into the figures, when they say something new
        (a limit not known yet, or less left than the buckets hold): the rates learned are kept to as if stated."""
        if told and L.Told(*told).news(self.store.snapshot(self.limits), self.limits):
            self.store.update(self.limits, L.Change("told", self.limits, (time.time(), *told)))

    def _may_grow(self, ticket: Ticket) -> bool:
        s = self.store.snapshot(self.limits)
        return s.window < self.limits.max_connections and s.busy_at >= ticket.sent_at

    def stats(self) -> dict[str, Any]:
        return {"max_connections": self.max, "limit": self.limit, "in_flight": self.in_flight, "peak": self.peak,
                "rate_limited": self.throttled}


class _Asking:
    """A blocking store's ``enter`` asked from a thread. If the request is cancelled while it waits (a game
    stopped, a cell's endpoint down, Ctrl-C), the slot the thread is granted anyway, then or later, is given back:
    dropped, it would stay taken for every process of the study until this process's client closes."""

    def __init__(self, store: Any):
        self.store, self.lock = store, threading.Lock()
        self.abandoned, self.got = False, None

    async def enter(self, limits: Limits, tokens: int) -> tuple[Ticket | None, float | None]:
        try:
            return await asyncio.to_thread(self._ask, limits, tokens)
        except asyncio.CancelledError:
            with self.lock:
                self.abandoned = True
                self._give_back()  # granted before the cancel, its answer not yet seen here
            raise

    def _ask(self, limits: Limits, tokens: int) -> tuple[Ticket | None, float | None]:
        got = self.store.enter(limits, tokens, time.time())
        with self.lock:
            self.got = got
            if self.abandoned:
                self._give_back()
        return got

    def _give_back(self) -> None:
        if self.got is not None and self.got[0] is not None:
            self.store.leave(self.got[0])
            self.got = None


class _Slot:
    __slots__ = ("gate", "tokens", "ticket")

    def __init__(self, gate: EndpointGate, tokens: int):
        self.gate, self.tokens = gate, tokens

    async def __aenter__(self) -> Ticket:
        self.ticket = await self.gate.acquire(self.tokens)
        return self.ticket

    async def __aexit__(self, *exc: Any) -> None:
        self.gate.release(self.ticket)


class Watch:
    """What every gate of the process did while the watch was open, per endpoint: requests let through, the
    peak in flight, the lowest limit and the limit at the end, 429s seen, seconds requests waited before they were
    sent (at the gate for a slot or a Retry-After, and after a failure: ``waited``), the endpoint's stalls and why
    it was declared dead (``stalled``). Open with ``watch()``, read with ``rows()``, end with ``close()``."""

    def __init__(self) -> None:
        self._figures: dict[str, dict[str, Any]] = {}
        self._gates: dict[str, EndpointGate] = {}

    def figures(self, g: EndpointGate) -> dict[str, Any]:
        self._gates[g.endpoint] = g
        return self._figures.setdefault(g.endpoint, {"requests": 0, "peak_in_flight": 0, "rate_limited": 0,
                                                     "waited_s": 0.0, "lowest_limit": g.limit, "stalls": 0,
                                                     "down": None})

    def entered(self, g: EndpointGate, waited_s: float) -> None:
        f = self.figures(g)
        f["requests"] += 1
        f["peak_in_flight"] = max(f["peak_in_flight"], g.in_flight)
        f["waited_s"] += waited_s

    def rows(self) -> list[dict[str, Any]]:
        """One dict per endpoint: its figures, ``limit`` (where the gate settled) and ``max_connections``."""
        return [{"endpoint": endpoint, "max_connections": self._gates[endpoint].max,
                 "limit": self._gates[endpoint].limit, **f} for endpoint, f in self._figures.items()]

    def close(self) -> None:
        if self in _WATCHES:
            _WATCHES.remove(self)


_WATCHES: list[Watch] = []


def watch() -> Watch:
    """A ``Watch`` open from now on (every gate of the process reports to it)."""
    w = Watch()
    _WATCHES.append(w)
    return w


def gate(endpoint: str, max_connections: int = DEFAULT_MAX, adaptive: bool = True, rpm: float | None = None,
         tpm: float | None = None) -> EndpointGate:
    """The running loop's gate for ``endpoint`` (made on first use; a model with stricter limits makes it
    stricter). Its figures are shared with the study's other processes where ``TOOLKIT_SHARED_LIMITS`` says so."""
    gates = _GATES.setdefault(asyncio.get_running_loop(), {})
    found = gates.get(endpoint)
    if found is None:
        limits = Limits(max_connections, rpm, tpm, adaptive)
        found = gates[endpoint] = EndpointGate(max_connections, adaptive, endpoint, store_for(endpoint, limits),
                                               rpm, tpm)
    elif (max_connections, rpm, tpm, adaptive) != (found.max, found.limits.rpm, found.limits.tpm, found.adaptive):
        found.lower(Limits(max_connections, rpm, tpm, adaptive))
    return found


def stalled(endpoint: str, down: str | None = None) -> None:
    """The endpoint's games began waiting for it (``toolkit.llm.health``), or (``down``) it was declared dead:
    counted in every open watch (the runs' endpoints rows)."""
    g = _GATES.get(asyncio.get_running_loop(), {}).get(endpoint)
    if g is None:
        return
    for w in _WATCHES:
        f = w.figures(g)
        if down is None:
            f["stalls"] += 1
        elif f["down"] is None:
            f["down"] = down


def waited(endpoint: str, seconds: float) -> None:
    """A request to the endpoint was held ``seconds`` before it was sent again, outside the gate (its call's
    backoff or ``Retry-After`` after a failure, or a decision waiting for the endpoint): counted in every open
    watch's ``waited_s``, as a wait for a slot is."""
    g = _GATES.get(asyncio.get_running_loop(), {}).get(endpoint)
    if g is None:
        return
    for w in _WATCHES:
        w.figures(g)["waited_s"] += seconds


def stats() -> dict[str, dict[str, Any]]:
    """Every endpoint's gate in this process (all event loops): its limits, peak in flight and 429s."""
    out: dict[str, dict[str, Any]] = {}
    for gates in list(_GATES.values()):
        for endpoint, g in gates.items():
            out[endpoint] = g.stats()
    return out
