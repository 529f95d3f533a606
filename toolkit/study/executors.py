"""Where a study's work runs, each executor declared once: its name, what it is (one line, ``--help``), the
functions that run a sweep's cells and hand out an adaptive tournament's batches, and the module it needs. The
command line (``sweep --executor``, ``tournament --executor``), preflight and the studies read this registry;
``EXECUTORS.register`` adds one more. What an executor runs with (Dask, a process pool) is imported only when
it runs, so ``--help`` stays fast."""

from __future__ import annotations

import ctypes
import itertools
import signal
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from toolkit.core.registry import Registry, resolve

__all__ = ["EXECUTORS", "Executor", "dask_client", "work_pool"]


@dataclass(frozen=True)
class Executor:
    """``cells(run, todo, workers, scheduler)`` runs ``run`` (a sweep's ``execute_cell``) on each cell and yields
    each one's status as it ends (no cell starts after one found its endpoint dead); ``pool(workers, scheduler)``
    is a context giving a ``submit`` whose futures' ``result()`` waits for a piece. Each is a function or
    ``"module:function"``. ``needs``: a module it imports (checked before anything starts), in ``extra``."""

    name: str
    summary: str
    cells: str | Callable[..., Iterator[dict]]
    pool: str | Callable[..., Any]
    needs: str = ""
    extra: str = ""

    def resolve(self, part: str) -> Callable[..., Any]:
        return resolve(getattr(self, part))


def help_text() -> str:
    """``--executor``'s help: every executor's line."""
    return "; ".join(f"{e.name}: {e.summary}" for e in EXECUTORS.values())


@contextmanager
def work_pool(workers: int = 1, executor: str = "local", scheduler: str | None = None) -> Iterator[Any]:
    """Where a study's pieces run: the executor's ``submit`` (with a scheduler's address, Dask's)."""
    with EXECUTORS.one("dask" if scheduler is not None else executor).resolve("pool")(workers, scheduler) as submit:
        yield submit


def die_with_parent() -> None:
    """Pool workers end when the sweep process is killed (Linux), instead of running on as orphans."""
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def local_cells(run: Any, todo: list[Any], workers: int, scheduler: str | None) -> Iterator[dict]:
    """``run`` of each cell, handed to the pool as workers free up (a submitted cell cannot be taken back once the
    pool has queued it): a dead endpoint stops the study, and no cell not yet started starts."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    with ProcessPoolExecutor(max_workers=workers, initializer=die_with_parent) as pool:
        waiting, dead = iter(todo), False
        running = {pool.submit(run, c) for c in itertools.islice(waiting, workers)}
        while running:
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                status = future.result()
                dead = dead or bool(status.get("endpoint"))
                yield status
            if not dead:
                running |= {pool.submit(run, c) for c in itertools.islice(waiting, len(done))}


def dask_cells(run: Any, todo: list[Any], workers: int, scheduler: str | None) -> Iterator[dict]:
    from dask.distributed import as_completed as dask_completed  # the optional `dask` extra

    with dask_client(scheduler, workers) as client:
        futures = client.map(run, todo, pure=False)
        for future in dask_completed(futures):
            if future.cancelled():
                continue
            status = future.result()
            yield status
            if status.get("endpoint"):  # a dead endpoint stops the study
                client.cancel(futures)


@contextmanager
def local_pool(workers: int, scheduler: str | None) -> Iterator[Any]:
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers, initializer=die_with_parent) as pool:
        yield pool.submit


@contextmanager
def dask_pool(workers: int, scheduler: str | None) -> Iterator[Any]:
    with dask_client(scheduler, workers) as client:
        yield lambda fn, *args, **kw: client.submit(fn, *args, pure=False, **kw)


@contextmanager
def dask_client(scheduler: str | None, workers: int = 1) -> Iterator[Any]:
    """A Dask client of the scheduler at ``scheduler`` (``dask scheduler``'s address, its workers started with
    ``dask worker ADDRESS --nthreads 1``: docs/experiments.md), else of a LocalCluster of ``workers`` processes
    owned by this one. A scheduler that does not answer is a ``FileError`` of one line."""
    from dask.distributed import Client, LocalCluster

    from toolkit.core.files import FileError, one_line

    if scheduler is None:
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            yield client
        return
    try:
        client = Client(scheduler, timeout=SCHEDULER_TIMEOUT_S)
    except (OSError, ValueError, TypeError) as exc:  # no one answers, or not an address
        raise FileError(f"--scheduler {scheduler}: no Dask scheduler answers there ({one_line(exc, 160)}); start one "
                        "with `dask scheduler` and give the address it prints (tcp://HOST:8786)") from None
    with client:
        yield client


SCHEDULER_TIMEOUT_S = 20


EXECUTORS: Registry[Executor] = Registry("executor", needs=("summary",), parts=("cells", "pool"))
EXECUTORS.register(Executor("local", "processes of this machine (the default)", local_cells, local_pool))
EXECUTORS.register(Executor("dask", "a Dask cluster: a LocalCluster of --workers processes, or the one --scheduler "
                            "names (the dask extra)", dask_cells, dask_pool, needs="dask.distributed", extra="dask"))
EXECUTORS.seal()
