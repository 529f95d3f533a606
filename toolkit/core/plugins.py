"""Where plug-ins come from outside the package: the modules named by the ``toolkit.plugins`` entry points of
the installed distributions (an entry point's value is a module to import; importing it registers its
plug-ins) and by ``TOOLKIT_PLUGINS`` (``module1,module2``: modules on ``sys.path`` that are not installed).
``load()`` imports them once per process; ``python -m toolkit`` calls it at start, a sweep's cell kernel at
start, and ``toolkit.ui`` (the notebooks) when imported. A module that does not import is an ``ImportError``
naming where it was named."""

from __future__ import annotations

import os
from importlib import import_module
from importlib.metadata import entry_points

GROUP = "toolkit.plugins"
ENV = "TOOLKIT_PLUGINS"
_loaded: set[str] = set()


def named() -> list[tuple[str, str]]:
    """(module, where it was named) for every plug-in module, entry points first, each once."""
    found = [(ep.value.split(":")[0].strip(), f"entry point {ep.name!r} of {GROUP}")
             for ep in entry_points(group=GROUP)]
    found += [(name.strip(), ENV) for name in os.environ.get(ENV, "").split(",") if name.strip()]
    return list({module: (module, where) for module, where in reversed(found)}.values())[::-1]


def load() -> list[str]:
    """Import every plug-in module not yet imported by this function; returns the modules imported now."""
    done = []
    for module, where in named():
        if module in _loaded:
            continue
        try:
            import_module(module)
        except ImportError as exc:
            raise ImportError(f"plug-in module {module!r} ({where}) does not import: {exc}", name=module) from exc
        _loaded.add(module)
        done.append(module)
    return done
