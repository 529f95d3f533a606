"""The scheduler's side of one limit per endpoint on a Dask cluster (``toolkit.llm.dask_limits``): a scheduler
plugin whose handlers keep every endpoint's figures and count its requests in flight per client of the scheduler.
"""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin

from toolkit.llm import limits as L
from toolkit.llm.limits import Limits, State


class OnScheduler(SchedulerPlugin):
    """The scheduler's side of ``DaskStore`` (see the module's docstring): every endpoint's figures, and its
    requests in flight per client of the scheduler. Its handlers are plain functions: each runs to its end on the
    scheduler's event loop, so each is atomic."""

    name = "toolkit-limits"
    idempotent = True  # the study's every process registers it; the first one's stays

    async def start(self, scheduler: Any) -> None:
        self.scheduler = scheduler
        self.held: dict[str, dict[str, int]] = {}  # endpoint's name → client → its requests in flight
        scheduler.handlers.update({"toolkit_limits_enter": self.enter, "toolkit_limits_leave": self.leave,
                                   "toolkit_limits_update": self.update})

    def _read(self, name: str) -> State | None:
        """The figures kept for ``name``; None where there are none yet, or where an older toolkit packed them
        (another size: a scheduler that outlived an upgrade starts them afresh rather than failing every request)."""
        data = self.scheduler.get_metadata(keys=["toolkit-limits", name], default=None)
        return State.unpack(data) if isinstance(data, bytes) and len(data) == State.FORMAT.size else None

    def _figures(self, name: str, limits: Limits, now: float) -> State:
        s = self._read(name) or L.fresh(limits, now, L.SHARED_START)  # None: the study's first request
        s.window = min(s.window, limits.max_connections)
        return s

    def _keep(self, name: str, s: State) -> bytes:
        s.in_flight = sum(self.held.get(name, {}).values())
        packed = s.pack()
        self.scheduler.set_metadata(keys=["toolkit-limits", name], value=packed)
        return packed

    def enter(self, name: str, client: str, limits: list, tokens: int, now: float) -> dict:
        """A slot for ``client``'s request (``granted``), or how long to wait (``wait``; None: until one frees)."""
        lim = Limits(*limits)
        s = self._figures(name, lim, now)
        held = self.held.setdefault(name, {})
        granted, wait = False, L.rate_wait(s, lim, now, tokens)
        if wait <= 0:
            if sum(held.values()) < s.limit:
                L.take(s, tokens)
                held[client] = held.get(client, 0) + 1
                granted, wait = True, 0.0
            else:
                s.busy_at, wait = now, None
        return {"granted": granted, "wait": wait, "state": self._keep(name, s)}

    def leave(self, name: str, client: str) -> bytes | None:
        held = self.held.get(name, {})
        if held.get(client, 0) > 1:
            held[client] -= 1
        else:
            held.pop(client, None)
        s = self._read(name)
        return self._keep(name, s) if s else None

    def update(self, name: str, limits: list, change: str, args: list, now: float) -> bytes:
        """``limits.Change(change, limits, args)`` applied (``op`` is the message's own key)."""
        lim = Limits(*limits)
        s = self._figures(name, lim, now)
        L.Change(change, lim, tuple(args))(s)
        return self._keep(name, s)

    def remove_client(self, scheduler: Any, client: str) -> None:
        """A client gone (its process ended, or its connection died): its requests' slots are free."""
        for name, held in self.held.items():
            if held.pop(client, None):
                s = self._read(name)
                if s:
                    self._keep(name, s)
