"""One limit per endpoint for a whole study: the gate's figures (``toolkit.llm.limits``: the window of requests in
flight, the Retry-After pause, the requests- and tokens-per-minute buckets) shared by every process that plays
the study's games, so four workers send what the endpoint allows, not four times it, and learn its limit together.

Where the figures live is ``TOOLKIT_SHARED_LIMITS``, which a study sets for its workers (``shared(...)``; the
processes it starts inherit it):

- a folder: ``FileStore``, for the processes of one machine (the local workers of a sweep, their notebook
  kernels). One file per endpoint holds the figures, read and written under a POSIX record lock (``fcntl.lockf``)
  held for microseconds; each request in flight holds a lock on one byte of the same file (its slot). The
  kernel releases a process's locks when it ends, however it ends, so a worker that dies releases its slots at
  once (the count of requests in flight, a hint kept beside the figures, is recounted from the locks when it
  says the window is full). No server to run: the file system is the coordinator (``flock``/``lockf`` is what
  ``filelock`` and SQLite build on; neither offers counting slots that die with their process).
- a Dask scheduler's address (``tcp://HOST:8786``): ``dask_limits.DaskStore``, for the processes of a study on a
  Dask cluster whose machines share no folder: the figures are kept in the scheduler's metadata and changed by a
  scheduler plugin of ours, one round trip a call (a dead process's slots come back when the scheduler drops its
  client).
- unset: each process keeps its own (``gate.MemoryStore``), as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import random
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from toolkit.llm import limits as L
from toolkit.llm.dask_limits import DaskStore, close_clients, is_address, reachable
from toolkit.llm.limits import Limits, State, Ticket

ENV = "TOOLKIT_SHARED_LIMITS"
MUTEX_AT = 4096  # the byte whose lock guards the figures (stored from byte 0)
SLOTS_AT = 8192  # slot i is the byte SLOTS_AT + i
POLL_S = 0.01  # a process waiting for a slot looks again this often (another process's release wakes nobody here)
RECOUNT_S = 0.5  # a window that has looked full this long is recounted from the slots' locks

_STORES: dict[tuple, Any] = {}  # (pid, where, endpoint) → store: locks belong to a process
_ADOPTED: dict[str, int] = {}  # where → adopt blocks open in this process
_ADOPT_LOCK = threading.Lock()


@contextlib.contextmanager
def shared(where: str | os.PathLike | None) -> Iterator[str | None]:
    """Every process started inside shares its endpoints' limits through ``where`` (a folder, or a Dask
    scheduler's address; None: leaves ``TOOLKIT_SHARED_LIMITS`` as it is): sets ``TOOLKIT_SHARED_LIMITS`` for the
    time of the block (children inherit it). When the block ends, a scheduler's stores made for it are dropped and
    its client closed, so a process that lives on (a Dask worker) keeps no connection of that study (``forget``)."""
    before = os.environ.get(ENV)
    if where is not None:
        os.environ[ENV] = str(where)
    try:
        yield None if where is None else str(where)
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before
        if where is not None:
            forget(str(where))


def forget(where: str) -> None:
    """This process's stores of a scheduler ``where`` dropped and its client closed. A folder's stores are kept
    (one open file per study and endpoint, reused by the study's next batch in this process): closing a file
    releases every POSIX record lock the process holds on it, another store's of the same file too, and dropping
    it unclosed left one descriptor per batch open (past ``ulimit -n`` in a study of thousands of batches)."""
    if is_address(where):
        for key in [k for k in _STORES if k[1] == where]:
            del _STORES[key]
        close_clients(where)


def study_limits(folder: str | os.PathLike, scheduler: str | None = None) -> str:
    """Where a study's workers share their limits: ``TOOLKIT_SHARED_LIMITS`` when it is set already, else the Dask
    scheduler's address when the study runs on a cluster started elsewhere (its machines may share no folder:
    ``dask_limits``), else the study's ``folder`` (its workers run on this machine)."""
    return os.environ.get(ENV, "").strip() or scheduler or str(folder)


@contextlib.contextmanager
def adopt(where: str | None) -> Iterator[None]:
    """In a worker, around one piece of a study's work (a batch of games): share the study's limits through
    ``where`` (``study_limits``) unless the worker was started with its own ``TOOLKIT_SHARED_LIMITS`` (a folder
    its machines share); for the time of the block only, since the worker lives on to serve other studies. Blocks
    of one study may overlap (a worker's threads): the last to end puts the worker's setting back. Blocks of two
    studies with different places overlapping in one worker process cannot both hold: the environment is the
    process's (the later one's place is used while both run)."""
    with _ADOPT_LOCK:
        current = os.environ.get(ENV, "").strip()
        if not where or (current and current not in _ADOPTED):  # none to adopt, or the worker's own
            where = None
        else:
            _ADOPTED[where] = _ADOPTED.get(where, 0) + 1
            os.environ[ENV] = where
    try:
        yield
    finally:
        if where is not None:
            with _ADOPT_LOCK:
                _ADOPTED[where] -= 1
                if not _ADOPTED[where]:
                    del _ADOPTED[where]
                    if os.environ.get(ENV) == where:
                        if _ADOPTED:
                            os.environ[ENV] = next(iter(_ADOPTED))
                        else:
                            os.environ.pop(ENV, None)
                    forget(where)


def check() -> None:
    """Raise one clear ``ValueError`` if ``TOOLKIT_SHARED_LIMITS`` names a Dask scheduler that does not answer (the
    CLI asks before a game starts, instead of every game failing when it first calls a model)."""
    where = os.environ.get(ENV, "").strip()
    if where and is_address(where):
        reachable(where)


def store_for(endpoint: str, limits: Limits) -> Any:
    """The shared store of ``endpoint`` named by ``TOOLKIT_SHARED_LIMITS``, or None (the gate keeps its own)."""
    where = os.environ.get(ENV, "").strip()
    if not where:
        return None
    key = (os.getpid(), where, endpoint)
    if key not in _STORES and is_address(where):
        _STORES[key] = DaskStore(where, digest(endpoint), limits)
    if key not in _STORES:
        folder = Path(where)
        folder.mkdir(parents=True, exist_ok=True)
        _STORES[key] = FileStore(folder / f"{digest(endpoint)}.limits", limits)
    return _STORES[key]


def digest(endpoint: str) -> str:
    return hashlib.sha256(endpoint.encode()).hexdigest()[:16]


class FileStore:
    """An endpoint's figures in a file shared by the processes of one machine (see the module's docstring)."""

    poll_s = POLL_S

    def __init__(self, path: str | os.PathLike, limits: Limits):
        self.path = Path(path)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        self.held: set[int] = set()  # the slots this process holds
        self.last = L.fresh(limits, time.time(), L.SHARED_START)  # the figures as last read (stats, hints)
        self._thread = threading.Lock()  # record locks are per process: threads take turns here first

    @contextlib.contextmanager
    def _figures(self, limits: Limits, now: float) -> Iterator[State]:
        with self._thread:
            fcntl.lockf(self.fd, fcntl.LOCK_EX, 1, MUTEX_AT)
            try:
                data = os.pread(self.fd, State.FORMAT.size, 0)
                s = State.unpack(data) if len(data) == State.FORMAT.size else L.fresh(limits, now, L.SHARED_START)
                s.window = min(s.window, limits.max_connections)
                yield s
                os.pwrite(self.fd, s.pack(), 0)
                self.last = s
            finally:
                fcntl.lockf(self.fd, fcntl.LOCK_UN, 1, MUTEX_AT)

    def enter(self, limits: Limits, tokens: int, now: float) -> tuple[Ticket | None, float | None]:
        with self._figures(limits, now) as s:
            wait = L.rate_wait(s, limits, now, tokens)
            if wait > 0:
                return None, wait
            if s.in_flight >= s.limit and now - s.counted_at > RECOUNT_S:
                self._recount(s, limits, now)
            if s.in_flight < s.limit:
                slot = self._free_slot(s.limit)
                if slot is not None:
                    L.take(s, tokens)
                    return Ticket(slot, now, tokens), 0.0
                self._recount(s, limits, now)  # the hint was wrong (a process died holding slots)
            s.busy_at = now
            return None, None

    def _try(self, slot: int) -> bool:
        try:
            fcntl.lockf(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, SLOTS_AT + slot)
        except OSError:
            return False
        return True

    def _free_slot(self, window: int) -> int | None:
        start = random.randrange(window)
        for k in range(window):
            slot = (start + k) % window
            if slot not in self.held and self._try(slot):
                self.held.add(slot)
                return slot
        return None

    def _recount(self, s: State, limits: Limits, now: float) -> None:
        """The requests in flight, from the slots' locks (a dead process's are free again)."""
        busy = len(self.held)
        for slot in range(min(limits.max_connections, 2 * s.limit + 64)):
            if slot in self.held:
                continue
            if self._try(slot):
                fcntl.lockf(self.fd, fcntl.LOCK_UN, 1, SLOTS_AT + slot)
            else:
                busy += 1
        s.in_flight, s.counted_at = busy, now

    def leave(self, ticket: Ticket) -> None:
        with self._thread:
            fcntl.lockf(self.fd, fcntl.LOCK_UN, 1, SLOTS_AT + ticket.slot)
            self.held.discard(ticket.slot)

        def done(s: State) -> None:
            s.in_flight = max(0, s.in_flight - 1)
        self.update(None, done)

    def update(self, limits: Limits | None, change: Any) -> State:
        with self._figures(limits or Limits(), time.time()) as s:
            change(s)
        return s

    def snapshot(self, limits: Limits) -> State:
        return self.last
