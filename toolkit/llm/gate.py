"""How many requests go to one endpoint at once, from every game and session of a process (one event loop).

An ``EndpointGate`` lets at most ``limit`` requests be in flight. The limit starts at the endpoint's
``max_connections`` (``TOOLKIT_MAX_CONNECTIONS``, or ``?max_connections=N`` in a spec) and adapts to what the
provider allows: a 429 halves it and, when the answer says ``Retry-After``, holds every new request to the
endpoint until that time has passed (the games of a process back off together instead of each hammering the
endpoint on its own); every ``limit`` answers in a row raise it by one again, up to ``max_connections``
(additive increase, multiplicative decrease, as TCP does). ``stats()`` says how far the process is from
the endpoint's limits: the peak in flight, the limit now, the 429s seen. A ``Watch`` (``watch()``) keeps the same
figures for the time it is open, per endpoint: what a run writes to its ``endpoints`` table (toolkit.record).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import Any

# Per event loop: {endpoint: gate}. asyncio primitives belong to a loop.
_GATES: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, EndpointGate]]" = weakref.WeakKeyDictionary()


class EndpointGate:
    def __init__(self, max_connections: int, adaptive: bool = True, endpoint: str = ""):
        self.endpoint = endpoint
        self.max = max_connections
        self.limit = max_connections
        self.adaptive = adaptive
        self.in_flight = 0
        self.peak = 0
        self.throttled = 0  # 429s seen
        self.resume_at = 0.0  # time.monotonic() before which no new request starts
        self._answers = 0  # answers since the limit last changed
        self._changed = asyncio.Condition()

    def lower_max(self, max_connections: int) -> None:
        """A model with a lower ``max_connections`` for this endpoint lowers its gate's."""
        if max_connections < self.max:
            self.max = max_connections
            self.limit = min(self.limit, max_connections)

    async def __aenter__(self) -> "EndpointGate":
        asked = time.monotonic()
        async with self._changed:
            while True:
                pause = self.resume_at - time.monotonic()
                if pause > 0:
                    try:
                        await asyncio.wait_for(self._changed.wait(), pause)
                    except asyncio.TimeoutError:
                        pass
                elif self.in_flight < self.limit:
                    break
                else:
                    await self._changed.wait()
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        for w in _WATCHES:
            w.entered(self, time.monotonic() - asked)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        async with self._changed:
            self.in_flight -= 1
            self._changed.notify_all()

    def rate_limited(self, retry_after: float | None) -> None:
        """A 429: halve the limit (adaptive gates) and hold new requests for ``retry_after`` seconds."""
        self.throttled += 1
        for w in _WATCHES:
            w.figures(self)["rate_limited"] += 1
        if not self.adaptive:
            return
        self.limit = max(1, self.limit // 2)
        for w in _WATCHES:
            w.figures(self)["lowest_limit"] = min(w.figures(self)["lowest_limit"], self.limit)
        self._answers = 0
        if retry_after:
            self.resume_at = max(self.resume_at, time.monotonic() + retry_after)

    def answered(self) -> None:
        """An answer: after ``limit`` of them in a row, one more request may be in flight."""
        if not self.adaptive or self.limit >= self.max:
            return
        self._answers += 1
        if self._answers >= self.limit:
            self.limit, self._answers = self.limit + 1, 0

    def stats(self) -> dict[str, Any]:
        return {"max_connections": self.max, "limit": self.limit, "in_flight": self.in_flight, "peak": self.peak,
                "rate_limited": self.throttled}


class Watch:
    """What every gate of the process did while the watch was open, per endpoint: requests let through, the
    peak in flight, the lowest limit and the limit at the end, 429s seen, seconds requests waited at the gate
    (for a slot or a Retry-After). Open with ``watch()``, read with ``rows()``, end with ``close()``."""

    def __init__(self) -> None:
        self._figures: dict[str, dict[str, Any]] = {}
        self._gates: dict[str, EndpointGate] = {}

    def figures(self, g: EndpointGate) -> dict[str, Any]:
        self._gates[g.endpoint] = g
        return self._figures.setdefault(g.endpoint, {"requests": 0, "peak_in_flight": 0, "rate_limited": 0,
                                                     "waited_s": 0.0, "lowest_limit": g.limit})

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


def gate(endpoint: str, max_connections: int, adaptive: bool = True) -> EndpointGate:
    """The running loop's gate for ``endpoint`` (made on first use)."""
    gates = _GATES.setdefault(asyncio.get_running_loop(), {})
    found = gates.get(endpoint)
    if found is None:
        found = gates[endpoint] = EndpointGate(max_connections, adaptive, endpoint)
    else:
        found.lower_max(max_connections)
    return found


def stats() -> dict[str, dict[str, Any]]:
    """Every endpoint's gate in this process (all event loops): its limits, peak in flight and 429s."""
    out: dict[str, dict[str, Any]] = {}
    for gates in list(_GATES.values()):
        for endpoint, g in gates.items():
            out[endpoint] = g.stats()
    return out
