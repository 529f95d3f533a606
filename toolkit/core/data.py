"""The files the package needs from the repository's top-level folders, found the same way from a checkout
and from an installed wheel: ``prompts/`` (the prompt templates, the agent's roles) and ``experiments/``
(the experiment notebooks, sweeps, tournaments, the engineer task suite). They stay where the repository
keeps them; the wheel carries them under ``toolkit/_data/`` (``setup.py`` copies each of ``SHIPPED`` there, and
``tests/test_packaging.py`` checks the two lists agree and that an installed wheel works).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path

SHIPPED = ("prompts", "experiments")  # the repository's folders a wheel carries as toolkit/_data/<name>


@cache
def root() -> Path:
    """The folder holding ``prompts/`` and ``experiments/``: ``toolkit/_data`` in a wheel, the repository
    in a checkout (editable installs included)."""
    package = Path(str(files("toolkit")))
    return package / "_data" if (package / "_data").is_dir() else package.parent


def path(*parts: str) -> Path:
    """A shipped file or folder, e.g. ``path("experiments", "engineer_tasks")``."""
    if not parts or parts[0] not in SHIPPED:
        raise ValueError(f"{'/'.join(parts) or 'nothing'}: not shipped with the package; shipped: {SHIPPED}")
    return root().joinpath(*parts)


def checkout() -> Path | None:
    """The repository this package runs from, or None for an installed wheel."""
    return None if root().name == "_data" else root()
