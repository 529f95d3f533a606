"""What a model spec is: ``PREFIX`` or ``PREFIX:ARG`` (``heuristic``, ``scripted:PATH``,
``openai:MODEL@URL``), the ``Provider`` its prefix names, and the providers other packages install as
entry points of the ``toolkit.models`` group (an entry point's name is the prefix; its object a
``Provider``). The lookup order is ``toolkit.llm.registry``'s; see docs/models.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Callable

from toolkit.llm.backend import Backend

GROUP = "toolkit.models"


@dataclass(frozen=True)
class Provider:
    """``factory(arg: str, config) -> Backend`` builds the backend (``config`` is the wrapper's
    ``ModelConfig``: timeouts and token defaults a transport may need); ``usage`` is shown in help and
    errors; ``arg`` is "none" (the bare PREFIX), "required" (PREFIX:ARG) or "optional". What the help, the
    widgets, the report and the docs' table read: ``about`` (what answers), ``example`` (a ready spec the
    widgets offer; empty: none, e.g. one that needs a file), ``real_usage`` (its calls report measured token
    counts; otherwise the report says token counts are estimated)."""

    prefix: str
    factory: Callable[[str, Any], Backend]
    usage: str = ""
    arg: str = "none"
    about: str = ""
    example: str = ""
    real_usage: bool = False

    def __post_init__(self) -> None:
        if self.arg not in ("none", "required", "optional"):
            raise ValueError(f"{self.prefix}: arg must be none, required or optional, not {self.arg!r}")
        if not self.usage:
            object.__setattr__(self, "usage", self.prefix)


def parse_spec(spec: str) -> tuple[str, str]:
    spec = str(spec).strip()
    prefix, _, arg = spec.partition(":")
    if not prefix:
        raise ValueError(f"empty model spec {spec!r}")
    return prefix, arg


@cache
def installed_names() -> dict[str, EntryPoint]:
    """The ``toolkit.models`` entry points of the installed distributions, by name (nothing loaded)."""
    return {ep.name: ep for ep in entry_points(group=GROUP)}


@cache
def installed(prefix: str) -> Provider | None:
    """The installed provider of a prefix (its module imported now), or None."""
    ep = installed_names().get(prefix)
    if ep is None:
        return None
    provider = ep.load()
    if not isinstance(provider, Provider) or provider.prefix != prefix:
        raise TypeError(f"entry point {GROUP}:{prefix} ({ep.value}) must name a Provider with prefix {prefix!r}")
    return provider


def missing_hint() -> str:
    """Why a player spec may be unknown: no entry points installed at all (a checkout used without
    ``pip install -e .``)."""
    return "" if installed_names() else (f" (no {GROUP} entry points are installed, so the werewolf players and "
                                         "replay are missing: pip install -e .)")
