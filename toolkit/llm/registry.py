"""Spec strings → backends. A backend registers its spec prefix where it is defined
(``@register("chaos", usage="chaos:RATE")``); this module knows no backend by name.

A spec is ``PREFIX`` or ``PREFIX:ARG`` (``heuristic``, ``scripted:PATH``, ``openai:MODEL@URL``). The game
registers ``heuristic``, the results loader ``replay``; the LLM layer registers the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol


class Backend(Protocol):
    """Turns a request into a completion, nothing more: retries, cache, caps, usage, cost and the call
    record belong to ``toolkit.llm.model.Model``.

    Optional attributes the wrapper reads: ``base_url`` (an endpoint: concurrency-capped per endpoint),
    ``free`` (offline: costs 0), ``cacheable`` (the response cache may answer for it), ``roles`` (a scripted
    seating a game should use)."""

    model: str

    async def complete(self, request: Any) -> Any: ...


@dataclass(frozen=True)
class Provider:
    prefix: str
    factory: Callable[..., Backend]
    usage: str
    arg: str  # "none" (the bare PREFIX), "required" (PREFIX:ARG) or "optional"


PROVIDERS: dict[str, Provider] = {}


def register(prefix: str, *, usage: str | None = None, arg: str = "none"):
    """Decorator for a backend factory ``factory(arg: str, config) -> Backend`` (``config`` is the
    wrapper's ``ModelConfig``: timeouts and token defaults a transport may need)."""

    def add(factory: Callable[..., Backend]) -> Callable[..., Backend]:
        PROVIDERS[prefix] = Provider(prefix, factory, usage or prefix, arg)
        return factory

    return add


def parse_spec(spec: str) -> tuple[str, str]:
    spec = str(spec).strip()
    prefix, _, arg = spec.partition(":")
    if not prefix:
        raise ValueError(f"empty model spec {spec!r}")
    return prefix, arg


def known_specs() -> str:
    return ", ".join(p.usage for p in PROVIDERS.values())


def build(spec: str, config: Any) -> Backend:
    """The backend a spec names (a ValueError with the known specs when it names none)."""
    prefix, arg = parse_spec(spec)
    provider = PROVIDERS.get(prefix)
    if provider is None:
        raise ValueError(f"unknown model spec {spec!r}; use one of: {known_specs()}")
    if provider.arg == "required" and not arg:
        raise ValueError(f"{prefix} needs an argument: {provider.usage}")
    if provider.arg == "none" and arg:
        raise ValueError(f"{prefix} takes no argument (got {spec!r}); use {provider.usage}")
    return provider.factory(arg, config)
