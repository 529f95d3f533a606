"""Where a study's work runs, each executor declared once: its name, what it is (one line, ``--help``), the
functions that run a sweep's cells and hand out an adaptive tournament's batches, and the module it needs. The
command line (``sweep --executor``, ``tournament --executor``), preflight and the studies read this registry;
``EXECUTORS.register`` adds one more. This module imports nothing heavy, so ``--help`` stays fast: an executor's
functions (``"module:function"``) are imported when one runs."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from toolkit.core.registry import Registry, resolve

__all__ = ["EXECUTORS", "Executor", "work_pool"]


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


EXECUTORS: Registry[Executor] = Registry("executor")
EXECUTORS.register(Executor("local", "processes of this machine (the default)", "toolkit.study.sweep:_local_cells",
                            "toolkit.study.sweep:_local_pool"))
EXECUTORS.register(Executor("dask", "a Dask cluster: a LocalCluster of --workers processes, or the one --scheduler "
                            "names (the dask extra)", "toolkit.study.sweep:_dask_cells",
                            "toolkit.study.sweep:_dask_pool", needs="dask.distributed", extra="dask"))
EXECUTORS.seal()


def help_text() -> str:
    """``--executor``'s help: every executor's line."""
    return "; ".join(f"{e.name}: {e.summary}" for e in EXECUTORS.values())


@contextmanager
def work_pool(workers: int = 1, executor: str = "local", scheduler: str | None = None) -> Iterator[Any]:
    """Where a study's pieces run: the executor's ``submit`` (with a scheduler's address, Dask's)."""
    with EXECUTORS.one("dask" if scheduler is not None else executor).resolve("pool")(workers, scheduler) as submit:
        yield submit
