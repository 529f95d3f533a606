"""The base class of every backend: it turns a request into a completion, nothing more (retries, cache,
caps, usage, cost and the call record belong to ``toolkit.llm.model.Model``).

What a backend can do is declared here with defaults, and a backend overrides only what differs (Inspect
AI's ``ModelAPI`` is the pattern): the wrapper reads these instead of probing for attributes.
"""

from __future__ import annotations

from typing import Any


class Backend:
    model: str = ""
    base_url: str | None = None  # an HTTP endpoint: calls to it are concurrency-capped per endpoint
    free: bool = False  # offline: every call costs 0 (no price looked up)
    cacheable: bool = False  # the response cache may answer for it (a deterministic remote model)
    roles: dict[str, str] | None = None  # a seating a game should use instead of its shuffle (scripted files)
    draws: dict[str, str] | None = None  # the rules' random draws a game should use (scripted files)
    accepts_params = False  # provider parameters in the spec (``?reasoning_effort=high``) go in its requests
    params: dict[str, Any] = {}  # those parameters (set by the registry from the spec; sent unchanged)

    async def complete(self, request: Any) -> Any:
        """The completion for a request (a ``toolkit.llm.request.Completion``); raise ``LLMError`` (or
        ``TransientError``, worth retrying) for a failure."""
        raise NotImplementedError

    def unused(self, context_id: str) -> list[str]:
        """What a scripted backend held for this game or session that was never asked for (so a caller
        can warn); nothing for any other backend."""
        return []
