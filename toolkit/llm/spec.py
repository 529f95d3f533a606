"""Model spec strings → backends.

``heuristic``, ``random``, ``scripted:PATH``, ``replay:DIR``, ``chaos:RATE``, ``local``,
``openai:MODEL`` (key and URL from ``OPENAI_API_KEY``/``OPENAI_BASE_URL``) and
``openai:MODEL@http://HOST:PORT/v1`` (any OpenAI-compatible server).
"""

from __future__ import annotations

import os
from typing import Any

from toolkit.llm.base import Backend
from toolkit.llm.offline import RULE_BACKENDS, ChaosBackend, RandomBackend, ReplayBackend, ScriptedBackend, rule_backend

OFFLINE_SPECS = ("heuristic", "random", "scripted:PATH", "replay:DIR", "chaos:RATE")


def parse_spec(spec: str) -> tuple[str, str]:
    spec = spec.strip()
    kind, _, arg = spec.partition(":")
    if not kind:
        raise ValueError(f"empty model spec {spec!r}")
    return kind, arg


def is_llm_spec(spec: str) -> bool:
    """True for specs that reach a language model (their prompts matter), False for offline players."""
    return parse_spec(spec)[0] in ("openai", "local")


def get_backend(spec: str, **options: Any) -> Backend:
    """Build the backend a spec names. ``options`` go to the OpenAI backend (see ``OpenAIConfig``)."""
    kind, arg = parse_spec(spec)
    if kind in RULE_BACKENDS and not arg:
        return rule_backend(kind)
    if kind == "random" and not arg:
        return RandomBackend()
    if kind == "scripted":
        if not arg:
            raise ValueError("scripted:PATH needs a file path")
        return ScriptedBackend(arg)
    if kind == "replay":
        if not arg:
            raise ValueError("replay:DIR needs a results folder")
        return ReplayBackend(arg)
    if kind == "chaos":
        try:
            return ChaosBackend(float(arg or "0.3"))
        except ValueError as exc:
            raise ValueError(f"chaos:RATE needs a number between 0 and 1, got {arg!r}") from exc
    if kind == "openai":
        from toolkit.llm.openai_backend import OpenAIBackend, OpenAIConfig

        model, _, url = arg.partition("@")
        if not model:
            raise ValueError("openai:MODEL needs a model name, e.g. openai:gpt-4o-mini")
        return OpenAIBackend(model, url or None, config=OpenAIConfig.from_env(**options))
    if kind == "local":
        from toolkit.llm.openai_backend import OpenAIBackend, OpenAIConfig
        from toolkit.local_server import MODEL_NAME, shared_url

        # Small outputs bounded by the schema; the server runs one slot per parallel request.
        options = {"max_connections": 4, "timeout_s": 300, "max_tokens": 600, **options}
        return OpenAIBackend(os.environ.get("TOOLKIT_LOCAL_MODEL", MODEL_NAME), shared_url(),
                             config=OpenAIConfig.from_env(**options))
    raise ValueError(f"unknown model spec {spec!r}; use one of: {', '.join(OFFLINE_SPECS)}, local, "
                     "openai:MODEL, openai:MODEL@http://HOST:PORT/v1")
