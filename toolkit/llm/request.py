"""What goes into a model call and what comes out: ``Request`` (the whole decision, from the game or the
agent down to the wire and into the ``calls`` row), ``Completion`` (a backend's answer), and the errors a
backend raises."""

from __future__ import annotations

import math

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Sampling:
    """Sampling settings, carried whole (never as loose arguments)."""

    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None


@dataclass
class Request:
    """One structured question to a model, with who asks and why.

    ``messages`` is what an LLM sees; ``observation`` is the same situation as data, for rule-based
    backends (LLM backends never see it). The ids say where the call belongs (a game's seat or an agent's
    session, day, phase, action) and land in the ``calls`` row as they are; ``replay_key`` is the stable
    name of this decision that ``replay:`` uses to find the recorded answer.
    """

    messages: list[dict[str, Any]] = field(default_factory=list)
    schema: dict[str, Any] | None = None
    schema_name: str = "answer"
    # Native tool calling, where an endpoint supports it: [{"name", "description", "parameters"}].
    tools: list[dict[str, Any]] | None = None
    observation: dict[str, Any] | None = None
    sampling: Sampling = Sampling()
    game_id: str | None = None
    session_id: str | None = None
    seat: str | None = None  # the seat, or the agent's name
    role: str | None = None
    day: int | None = None
    phase: str | None = None
    action: str | None = None
    replay_key: str | None = None

    def but(self, **changes: Any) -> "Request":
        """A copy with some fields changed (``dataclasses.replace`` without its per-call introspection: this
        runs for every model call)."""
        new = object.__new__(Request)
        new.__dict__ = {**self.__dict__, **changes}
        return new

    @property
    def context_id(self) -> str:
        """The game or session this call belongs to (stateful backends keep their place per context)."""
        return str(self.game_id or self.session_id or "")


@dataclass
class Completion:
    """A backend's answer. ``prompt_tokens`` is None when the backend does not know it (the model wrapper
    then estimates, and flags it); ``tool_calls`` are the endpoint's native tool calls, as sent:
    ``[{"name": ..., "arguments": "<JSON text>"}]``."""

    text: str
    model: str
    base_url: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int = 0
    usage_estimated: bool = False
    cost_usd: float | None = None
    tool_calls: list[dict[str, Any]] | None = None
    cache_hit: bool = False
    finish_reason: str | None = None  # "stop", "length" (cut at the token limit), "tool_calls"...; None: unknown
    reasoning_tokens: int | None = None  # hidden reasoning, where the endpoint reports it (part of the output)
    reasoning: str | None = None  # the reasoning text, where the endpoint sends it (reasoning_content)
    told: tuple | None = field(default=None, repr=False, compare=False)  # its x-ratelimit-* headers (limits.Told)

    @property
    def truncated(self) -> bool:
        """The answer was cut at the output token limit (``finish_reason: length``)."""
        return self.finish_reason == "length"


class LLMError(Exception):
    """A call that cannot succeed (or failed for good): never retried."""

    kind = "error"
    # the tokens a failed answer says were billed (prompt, output with reasoning), where its body said so: a 200
    # without an answer but with a usage block (a gateway's filtered answer); None where it said nothing
    billed: tuple[int, int] | None = None

    def __init__(self, message: str, *, kind: str | None = None, status_code: int | None = None):
        super().__init__(message)
        self.kind = kind or self.kind
        self.status_code = status_code


# The endpoint refused ``response_format`` (an HTTP 400 naming it): the backend puts the schema in the prompt from
# then on, and the model wrapper records the refused request (an ``attempts`` row) and asks again at once.
SCHEMA_REFUSED = "schema_refused"


class TransientError(LLMError):
    """A failure worth retrying (429, 5xx, timeout, dropped connection, malformed body)."""

    kind = "transient"

    def __init__(self, message: str, *, kind: str | None = None, status_code: int | None = None,
                 retry_after: float | None = None, told: tuple | None = None):
        super().__init__(message, kind=kind, status_code=status_code)
        self.retry_after = retry_after
        self.told = told  # the answer's x-ratelimit-* headers (limits.Told), where it had any


def estimate_tokens(text: str) -> int:
    """Rough token count (4 characters a token) for backends and servers that report no usage."""
    return max(1, len(text) // 4) if text else 0


# The prompt's estimate errs high: 4 characters a token counts the messages' text only, not the chat format a
# provider bills beside it (roles, separators); measured by benchmarks/usage_estimate.py (docs/benchmarks.md).
PROMPT_FACTOR = 1.1


def estimate_prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """A prompt's tokens where the endpoint reports none: its text's estimate times ``PROMPT_FACTOR`` (rounded up),
    so that a cap on such an endpoint is reached early rather than overshot."""
    return math.ceil(round(estimate_tokens(messages_text(messages)) * PROMPT_FACTOR, 6))  # 100 x 1.1 is 110


def messages_text(messages: list[dict[str, Any]]) -> str:
    return "".join(str(m.get("content") or "") for m in messages)
