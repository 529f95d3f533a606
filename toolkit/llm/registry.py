"""Spec strings → models. A spec's prefix (``toolkit.llm.spec``) names a ``Provider``, found in this order:

1. the one registry of providers, ``PROVIDERS`` (``toolkit.llm.providers``): the model layer's built-in
   backends, all listed there, and those registered at run time with ``register`` (tests, a notebook's own
   backend), which cannot take a built-in's prefix;
2. an installed entry point of the ``toolkit.models`` group (the werewolf players and ``replay``, defined
   above this layer, are declared so in ``pyproject.toml``; another package can add its own the same way).

So what a spec means never depends on what happened to be imported first. See docs/models.md.
"""

from __future__ import annotations

import difflib
from typing import Any, Callable

from toolkit.llm.backend import Backend
from toolkit.llm.model import Model, ModelConfig
from toolkit.llm.providers import PROVIDERS
from toolkit.llm.spec import (WRAPPER_PARAMS, Provider, expand, installed, installed_names, missing_hint,
                              parse_spec, provider_params, spec_params)


def register(prefix: str, *, usage: str | None = None, arg: str = "none"):
    """Decorator registering a backend factory under ``prefix`` for this process."""

    def add(factory: Callable[[str, Any], Backend]) -> Callable[[str, Any], Backend]:
        PROVIDERS.register(Provider(prefix, factory, usage or prefix, arg))
        return factory

    return add


def find(prefix: str) -> Provider | None:
    """The provider a spec prefix names, or None."""
    return PROVIDERS.get(prefix) or installed(prefix)


def prefixes() -> list[str]:
    """Every known spec prefix (registered, built in, installed), without loading any backend."""
    return list(dict.fromkeys([*PROVIDERS, *installed_names()]))


def providers() -> list[Provider]:
    """Every known provider, registered, built in and installed (the installed ones' modules imported now)."""
    return [p for p in map(find, prefixes()) if p is not None]


def known_specs() -> str:
    """The usage of every known spec, for help and error messages (imports the installed providers)."""
    return ", ".join(p.usage for p in providers())


def spec_names() -> str:
    """Every known spec's usage without importing any provider's module (for ``--help``): an installed
    provider's prefix stands for its usage."""
    return ", ".join([*(p.usage for p in PROVIDERS.values()),
                      *(name for name in installed_names() if name not in PROVIDERS)])


def did_you_mean_spec(spec: str) -> str:
    """`` (did you mean 'openai:gpt-4o'?)`` for a spec whose prefix is a near miss of a known one, else ''."""
    prefix, sep, arg = str(spec).strip().partition(":")
    close = difflib.get_close_matches(prefix, prefixes(), n=1, cutoff=0.6)
    return f" (did you mean {close[0] + sep + arg!r}?)" if close and close[0] != prefix else ""


def build(spec: str, config: Any) -> Backend:
    """The backend a spec names (a ValueError with the known specs when it names none)."""
    prefix, arg = parse_spec(spec)
    provider = find(prefix)
    if provider is None:
        raise ValueError(f"unknown model spec {spec!r}{did_you_mean_spec(spec)}; use one of: {known_specs()}"
                         f"{missing_hint()}")
    if provider.arg == "required" and not arg:
        raise ValueError(f"{prefix} needs an argument: {provider.usage}")
    if provider.arg == "none" and arg:
        raise ValueError(f"{prefix} takes no argument (got {spec!r}); use {provider.usage}")
    params = provider_params(spec)
    backend = provider.factory(expand(arg), config)
    if params:
        if not backend.accepts_params:
            raise ValueError(f"{prefix} takes no provider parameters (got {', '.join(params)}); they are for "
                             "endpoint models, e.g. openai:MODEL@URL?reasoning_effort=high")
        backend.params = params
    return backend


def get_model(spec: str, **options: Any) -> Model:
    """The model a spec names, behind the wrapper. ``options`` are ``ModelConfig`` fields; a spec's
    ``?max_connections=N`` sets the endpoint's concurrency limit for it."""
    wrapper = {k: v for k, v in spec_params(spec).items() if k in WRAPPER_PARAMS}
    config = ModelConfig.from_env(**{**options, **wrapper})
    return Model(spec.strip(), build(spec, config), config)
