"""The request/completion types every backend speaks, and the errors they raise."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class Request:
    """One structured question to a model.

    ``messages`` is what an LLM sees. ``observation`` is the same situation as data, for rule-based
    backends (LLM backends never see it). ``meta`` carries ids for logging (game_id, seat, action, ...)
    and ``replay_key``, the stable name of this decision that ``replay:`` uses to find the recorded answer.
    """

    messages: list[dict[str, Any]]
    schema: dict[str, Any] | None = None
    schema_name: str = "answer"
    observation: dict[str, Any] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    # Native tool calling, where an endpoint supports it: [{"name", "description", "parameters"}]. The
    # backend turns the model's tool calls back into {"thought", "commands": [{command_name, args}]} text.
    tools: list[dict[str, Any]] | None = None


@dataclass
class Completion:
    text: str
    model: str
    base_url: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    usage_estimated: bool = False
    cost_usd: float | None = None
    latency_ms: float = 0.0
    attempts: int = 1
    cache_hit: bool = False


class LLMError(Exception):
    """A call that failed for good (after any retries). ``attempts`` says how many were made."""

    def __init__(self, message: str, *, attempts: int = 1, retryable: bool = False):
        super().__init__(message)
        self.attempts = attempts
        self.retryable = retryable


class TransientError(LLMError):
    """A failure worth retrying (429, 5xx, timeout, dropped connection)."""

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message, retryable=True)
        self.retry_after = retry_after


class Backend(Protocol):
    model: str
    base_url: str | None

    async def complete(self, request: Request) -> Completion: ...


def estimate_tokens(text: str) -> int:
    """Rough token count (4 characters a token) for backends and servers that report no usage."""
    return max(1, len(text) // 4) if text else 0


def messages_text(messages: list[dict[str, Any]]) -> str:
    return "".join(str(m.get("content") or "") for m in messages)
