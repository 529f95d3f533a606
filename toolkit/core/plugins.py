"""Where plug-ins come from outside the package: the ``toolkit.plugins`` entry points of the installed
distributions and ``TOOLKIT_PLUGINS`` (``mod1,mod2``: modules on ``sys.path`` that are not installed). Each names
a module, imported (importing it registers its plug-ins), or ``module:function``, imported and then the function
called with no arguments (the usual ``myplug = "myplug:register"`` entry point); a value naming something that is
not a function is refused. ``load()`` loads each once per process; ``python -m toolkit`` calls it at start, the
first widget taken from ``toolkit.ui`` too, and a study hands the caller's list (``names()``) to its workers and
cell kernels, which load it at their start (a Dask worker or a remote kernel has neither the caller's environment
nor its imports). Anything a plug-in raises as it loads is an ``ImportError`` of one line naming it and where it
was named. The entry points are scanned once per process (the scan reads every installed distribution)."""

from __future__ import annotations

import os
from functools import lru_cache
from importlib import import_module
from importlib.metadata import entry_points
from pathlib import Path
from typing import Iterable

GROUP = "toolkit.plugins"
ENV = "TOOLKIT_PLUGINS"
CARRIED = "the study's caller"  # where a plug-in a study's caller named was named, as a worker says it
_loaded: set[str] = set()


@lru_cache(maxsize=1)
def _entry_points() -> tuple[tuple[str, str], ...]:
    return tuple((ep.value.strip(), f"entry point {ep.name!r} of {GROUP}") for ep in entry_points(group=GROUP))


def named(carried: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(plug-in, where it was named) for every plug-in: the entry points, ``TOOLKIT_PLUGINS``, then ``carried``
    (a study caller's, ``names()``), each once."""
    found = [*_entry_points(), *((n.strip(), ENV) for n in os.environ.get(ENV, "").split(",") if n.strip()),
             *((n, CARRIED) for n in carried)]
    first: dict[str, str] = {}
    for name, where in found:
        first.setdefault(name, where)
    return list(first.items())


def names() -> list[str]:
    """This process's plug-ins, for a study to hand to its workers and kernels (``load(carried=...)``)."""
    return [name for name, _ in named()]


def load(carried: Iterable[str] = ()) -> list[str]:
    """Load every plug-in (``named``) not loaded yet in this process; returns those loaded now."""
    done = []
    for name, where in named(carried):
        if name in _loaded:
            continue
        module, _, function = name.partition(":")
        try:
            found = import_module(module.strip())
            if function:
                for part in function.strip().split("."):
                    found = getattr(found, part)
                if not callable(found):
                    raise TypeError(f"{function.strip()} is not a function to call")
                found()
        except Exception as exc:  # a SyntaxError, a register's ValueError ...: one line, not a traceback
            raise ImportError(f"plug-in {name!r} ({where}) does not load: {type(exc).__name__}: {exc}",
                              name=module) from exc
        _loaded.add(name)
        done.append(name)
    return done


def load_in_kernel(note: str) -> None:
    """A sweep cell's kernel loads its plug-ins (``TOOLKIT_PLUGINS``, set from the caller's list); one that does
    not load is written to ``note`` (the kernel only logs an exception raised at its start, and the notebook would
    fail later, or not at all, on an unknown name): the cell fails with that line."""
    try:
        load()
    except ImportError as exc:
        Path(note).write_text(" ".join(str(exc).split()) + "\n", encoding="utf-8")
        raise
