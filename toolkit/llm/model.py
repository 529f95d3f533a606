"""The model wrapper every backend goes through (Inspect AI's ``Model.generate`` around each provider is the
pattern): response cache, per-endpoint concurrency cap, retries with exponential backoff and jitter
(tenacity; ``Retry-After`` honoured), usage estimates where a backend reports none, cost from the price
table, and the call record. A backend only turns a request into a completion.

``await get_model(spec).generate(request) -> Call``: a ``Call`` never raises for a model failure; it
carries the completion or the error, every failed attempt, and builds the one ``calls`` row (``Call.row``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import math
import os
import time
from functools import lru_cache
from dataclasses import dataclass, field, fields
from types import SimpleNamespace
from typing import Any, Callable

from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential_jitter,
)

from toolkit.llm.budget import Ticket, active_budget
from toolkit.llm.cache import ResponseCache, active_record, cache_key, request_key
from toolkit.llm.prices import DEFAULT_PRICES, cost_usd, load_prices, output_tokens, price_of, read_prices  # noqa: F401
from toolkit.llm.gate import gate as endpoint_gate, waited
from toolkit.llm.backend import Backend
from toolkit.llm.request import (SCHEMA_REFUSED, Completion, LLMError, Request, TransientError,
                                 estimate_prompt_tokens, estimate_tokens, messages_text)
from toolkit.core import lifeline
from toolkit.core.secrets import mask_url


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


# ------------------------------------------------------------------ configuration
@dataclass
class ModelConfig:
    # Requests in flight per endpoint (toolkit.llm.gate): the most ever allowed; the gate starts at 64 and learns
    # the endpoint's limit from its answers and 429s while ``rate_adaptive``. A spec's ?max_connections=N sets it
    # for a model; ?rpm=N and ?tpm=N the endpoint's requests and tokens per minute (shared by every process of a
    # study where TOOLKIT_SHARED_LIMITS says so: toolkit.llm.shared_limits).
    max_connections: int = 4096
    rate_adaptive: bool = True
    rpm: float | None = None
    tpm: float | None = None
    timeout_s: float = 60.0  # a deadline: one request's whole time, from sending it to its last byte
    max_attempts: int = 6
    max_total_wait_s: float = 120.0
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 20.0
    retry_after_cap_s: float = 60.0
    cache_dir: str | None = None
    max_tokens: int | None = None  # a default for requests that set none
    max_response_bytes: int = 8 * 2**20  # a response body larger than this is a failed attempt (too_large)
    max_tool_calls: int = 64  # an answer with more native tool calls is a failed attempt (too_many_tool_calls)

    ENV = {"max_connections": ("TOOLKIT_MAX_CONNECTIONS", int), "timeout_s": ("TOOLKIT_TIMEOUT_S", float),
           "max_attempts": ("TOOLKIT_MAX_ATTEMPTS", int), "cache_dir": ("TOOLKIT_CACHE_DIR", str),
           "max_response_bytes": ("TOOLKIT_MAX_RESPONSE_BYTES", int),
           "max_tool_calls": ("TOOLKIT_MAX_TOOL_CALLS", int)}
    # Inclusive bounds of the numeric settings: 0 connections would wait forever, a timeout of 0 or NaN
    # would mean none, a negative one fails every request at once.
    BOUNDS = {"max_connections": (1, 4096), "timeout_s": (0.001, 86400.0), "max_attempts": (1, 100),
              "max_total_wait_s": (0.0, 86400.0), "backoff_initial_s": (0.0, 3600.0), "backoff_max_s": (0.0, 3600.0),
              "retry_after_cap_s": (0.0, 86400.0), "max_tokens": (1, 10**7), "rpm": (0.001, 1e9),
              "tpm": (0.001, 1e12), "max_response_bytes": (1024, 2**31), "max_tool_calls": (1, 10_000)}

    def __post_init__(self) -> None:
        for name, (low, high) in self.BOUNDS.items():
            value = getattr(self, name)
            if value is None and name in ("max_tokens", "rpm", "tpm"):
                continue
            var = self.ENV.get(name, (name,))[0]
            kind = int if isinstance(low, int) else float
            if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
                raise ValueError(f"{var}={value!r} must be a{'n integer' if kind is int else ' number'}")
            if not math.isfinite(value) or not low <= value <= high:
                raise ValueError(f"{var}={value!r} must be between {low:g} and {high:g}")

    @classmethod
    def from_env(cls, **overrides: Any) -> "ModelConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown model option(s) {', '.join(unknown)}; options are {', '.join(sorted(known))}")
        values: dict[str, Any] = {}
        for name, (var, cast) in cls.ENV.items():
            if os.environ.get(var):
                try:
                    values[name] = cast(os.environ[var])
                except ValueError as exc:
                    raise ValueError(f"{var}={os.environ[var]!r} is not a valid {cast.__name__}") from exc
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


# ------------------------------------------------------------------ the record of one call
@dataclass
class Attempt:
    """One failed request of a call (a row of the ``attempts`` table)."""

    attempt: int
    error_kind: str
    status_code: int | None
    error: str
    latency_ms: float
    sent: bool = True  # a request made (a ``deadline`` row of a call cut with none out is not: ``Call.n_attempts``)


@dataclass
class Call:
    """One model call as it is recorded: the request, what came back (or the error), every failed attempt.
    The caller that parses the answer sets ``parsed``/``ok``/``fallback`` (and ``error`` for an unusable
    answer); the call log gives it ``seq``."""

    request: Request
    spec: str
    model: str
    base_url: str | None
    started_at: str
    completion: Completion | None = None
    error: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    latency_ms: float = 0.0
    parsed: str | None = None
    ok: bool = False
    fallback: bool = False
    seq: int = 0
    free: bool = False  # an offline backend answered: nothing was spent (a spending cap does not count it)
    charged: bool = False  # the model wrapper put it in the active budget's ledger (``CallLog`` does not charge it)
    ticket: Ticket | None = field(default=None, repr=False, compare=False)  # its place in that ledger
    sending: bool = False  # a request of it is out now (sent, not answered nor failed): what a cut call may cost
    # what its failed requests' bodies said was billed (prompt tokens, output tokens, USD or None for no price):
    # a 200 with a usage block and no answer (a filtered answer) is a failed attempt that costs money
    billed: tuple[int, int, float | None] | None = None

    def settle(self) -> None:
        """Say in the ledger what the call cost (once; nothing to say for a call with no ticket): its answer's
        tokens at their price, 0 for a failure (a refused or unanswered request is not billed)."""
        if self.ticket is not None:
            c = self.completion
            tokens = (c.prompt_tokens or 0) + output_tokens(c.completion_tokens or 0, c.reasoning_tokens) if c else 0
            usd = c.cost_usd if c else 0.0
            if self.billed is not None:  # failed requests that were billed all the same
                tokens, usd = tokens + self.billed[0] + self.billed[1], (usd or 0.0) + (self.billed[2] or 0.0)
            self.ticket.settle(usd, tokens)

    def bill(self, prompt: int, output: int, usd: float | None) -> None:
        """A failed request whose body said it was billed: counted in the call's tokens and cost."""
        p, o, u = self.billed or (0, 0, 0.0)
        self.billed = (p + prompt, o + output, None if u is None or usd is None else u + usd)

    @property
    def text(self) -> str | None:
        return self.completion.text if self.completion is not None else None

    @property
    def call_id(self) -> str:
        return f"{self.request.context_id}-{self.seq}"

    @property
    def n_attempts(self) -> int:
        """Requests made: failed ones plus the one that answered (0 for a cache hit). A truncated answer is in
        ``attempts`` (its ``error_kind`` says so) and is the request that answered, counted once; the ``deadline``
        row of a call the endpoint's deadline cut is a request only when one was out at the cut."""
        c = self.completion
        failed = sum(a.sent and a.error_kind != "truncated" for a in self.attempts)
        return failed + (1 if c is not None and not c.cache_hit else 0)

    def row(self, run_id: str | None) -> dict[str, Any]:
        """The ``calls`` row: built here and nowhere else."""
        r, c = self.request, self.completion
        messages = json.dumps(r.messages, ensure_ascii=False)
        row = {
            "call_id": self.call_id, "run_id": run_id, "game_id": r.game_id, "session_id": r.session_id,
            "seq": self.seq, "seat": r.seat, "role": r.role, "day": r.day, "phase": r.phase, "action": r.action,
            "spec": self.spec, "model": c.model if c else self.model,
            "base_url": mask_url(c.base_url if c else self.base_url), "temperature": r.sampling.temperature,
            "messages": messages, "response_text": self.response_text(),
            "parsed": self.parsed, "ok": self.ok, "error": self.error, "attempts": self.n_attempts,
            "fallback": self.fallback, "latency_ms": self.latency_ms,
            "prompt_tokens": c.prompt_tokens if c else None, "completion_tokens": c.completion_tokens if c else None,
            "cached_tokens": c.cached_tokens if c else None, "usage_estimated": c.usage_estimated if c else None,
            "cost_usd": c.cost_usd if c else None, "cache_hit": c.cache_hit if c else False,
            "started_at": self.started_at, "replay_key": r.replay_key,
            "finish_reason": c.finish_reason if c else None, "reasoning_tokens": c.reasoning_tokens if c else None,
            "reasoning": c.reasoning if c else None, "params": self.params_json(),
            "request_key": request_key(self.spec, r, messages),
        }
        if self.billed is not None:  # its failed requests' billed tokens and cost are the call's too
            p, o, u = self.billed
            answer_usd = c.cost_usd if c else 0.0
            row["prompt_tokens"] = (row["prompt_tokens"] or 0) + p
            row["completion_tokens"] = (row["completion_tokens"] or 0) + o
            row["cost_usd"] = None if u is None or answer_usd is None else answer_usd + u
        return row

    def params_json(self) -> str | None:
        """The spec's provider parameters as JSON (sorted keys), null for a spec without any."""
        return _params_json(self.spec)

    def response_text(self) -> str | None:
        """The answer as sent: its text, or with native tool calls ``{"content", "tool_calls"}`` as JSON."""
        c = self.completion
        if c is None or not c.tool_calls:
            return self.text
        return json.dumps({"content": c.text, "tool_calls": c.tool_calls}, ensure_ascii=False)

    def attempt_rows(self) -> list[dict[str, Any]]:
        return [{"call_id": self.call_id, "attempt": a.attempt, "error_kind": a.error_kind,
                 "status_code": a.status_code, "error": a.error, "latency_ms": a.latency_ms} for a in self.attempts]


@lru_cache(maxsize=1024)
def _params_json(spec: str) -> str | None:
    """``Call.params_json`` (once per spec: every calls row asks)."""
    from toolkit.llm.spec import spec_params

    params = spec_params(spec)
    return json.dumps(params, sort_keys=True) if params else None


# ------------------------------------------------------------------ the wrapper
async def _within(answer: Any, seconds: float) -> Any:
    """``await answer``, ``asyncio.TimeoutError`` past ``seconds``: in this task where Python has
    ``asyncio.timeout`` (3.11), not in a task of its own as ``wait_for`` makes one (a task a call)."""
    if not hasattr(asyncio, "timeout"):  # Python 3.10
        return await asyncio.wait_for(answer, seconds)
    async with asyncio.timeout(seconds):
        return await answer


# Endpoints that have answered at least once in this process: a refused connection to one of them is a
# blip worth retrying; to any other, nothing is listening and retrying cannot help.
_ANSWERED: set[str] = set()


class Model:
    """A backend behind the one call path. ``spec`` is the spec string; ``name`` the provider's model name."""

    def __init__(self, spec: str, backend: Backend, config: ModelConfig | None = None):
        if not isinstance(backend, Backend):
            raise TypeError(f"{spec}: a backend must subclass toolkit.llm.Backend, not {type(backend).__name__}")
        self.spec = spec
        self.backend = backend
        self.config = config or ModelConfig.from_env()
        self.base_url: str | None = backend.base_url
        self.cache = ResponseCache(self.config.cache_dir) if self.config.cache_dir and backend.cacheable else None
        self._backoff = wait_exponential_jitter(multiplier=self.config.backoff_initial_s, max=self.config.backoff_max_s,
                                                jitter=self.config.backoff_initial_s)

    @property
    def name(self) -> str:
        return self.backend.model

    def __repr__(self) -> str:
        return f"Model({self.spec!r})"

    async def generate(self, request: Request, track: list[Call] | None = None, settle: bool = True,
                       failed: Callable[[], None] | None = None) -> Call:
        """The call (never raises for a model failure); ``track`` gets the call as soon as it exists, so that a
        caller that cuts it short keeps the attempts it failed so far, and ``failed()`` is called each time a
        request failed and the call waits to send it again (``toolkit.llm.health``). ``settle=False``:
        the caller settles it in the ledger (``Call.settle``) once its row is written (``CallLog.write``), so that
        a process killed between the two leaves it pending, as a call in flight, and a resumed study replays it
        from its row rather than paying for it again."""
        call = Call(request, self.spec, self.backend.model, self.base_url, now(), free=self.backend.free)
        if track is not None:
            track.append(call)
        started = time.perf_counter()
        record = active_record() if not self.backend.free else None  # a resumed study's answers (cache.Record)
        if record is not None and (hit := record.take(self.spec, request)) is not None:
            hit.base_url = self.base_url
            call.completion = hit
            return call
        key = cache_key(self.backend.model, self.base_url, request, self.backend.params) if self.cache else None
        if key and (hit := self.cache.get(key)) is not None:
            call.completion = hit
            return call
        call.ticket = self._reserve(request)  # in the study's ledger before it is sent (budget.Budget.reserve)
        call.charged = call.ticket is not None
        try:
            completion = await self._attempt(request, call)  # the common case: no retry machinery at all
        except TransientError as exc:
            completion = await self._retry(request, call, exc, failed)
        except LLMError as exc:
            completion, call.error = None, str(exc)
        call.latency_ms = (time.perf_counter() - started) * 1000
        if completion is not None:
            call.completion = c = self._accounted(completion, request)
            if key:
                self.cache.put(key, c)
            if c.truncated:  # an answer, but cut at the limit: the attempts table says so (error_kind truncated)
                call.attempts.append(Attempt(len(call.attempts) + 1, "truncated", 200 if self.base_url else None,
                                             f"the answer was cut at the output token limit (finish_reason length, "
                                             f"{c.completion_tokens} output tokens)", call.latency_ms))
        if settle:
            call.settle()
        return call

    def _reserve(self, request: Request) -> Ticket | None:
        """A paid call in the active budget's ledger at an estimate: the prompt's tokens and the answer's limit
        where one is set (``Budget.reserve``); None for an offline backend or without a budget."""
        budget = active_budget()
        if budget is None or self.backend.free:
            return None
        prompt = estimate_prompt_tokens(request.messages)
        params = self.backend.params
        limit = int(request.sampling.max_tokens or self.config.max_tokens or params.get("max_completion_tokens")
                    or params.get("max_tokens") or 0)
        return budget.reserve(cost_usd(self.backend.model, prompt, limit), prompt + limit, self.backend.model)

    async def _attempt(self, request: Request, call: Call) -> Completion:
        t0 = time.perf_counter()
        try:
            if self.base_url is None:
                completion = await self.backend.complete(request)
            else:
                cfg = self.config
                gate = endpoint_gate(self.base_url, cfg.max_connections, cfg.rate_adaptive, cfg.rpm, cfg.tpm)
                ticket = await gate.acquire(self._tokens(request) if gate.counts_tokens else 0)
                lifeline.check()  # a cell's kernel whose sweep was killed sends nothing more (toolkit.core.lifeline)
                call.sending = True
                try:  # the deadline counts from sending, not from waiting for a slot
                    completion = await _within(self.backend.complete(request), cfg.timeout_s)
                except TransientError as exc:
                    if exc.kind == "rate_limit":  # every game of the process (or the study) backs off together
                        gate.rate_limited(min(exc.retry_after or 0, cfg.retry_after_cap_s), ticket,
                                          getattr(exc, "told", None))
                    raise
                finally:
                    call.sending = False
                    gate.release(ticket)
                gate.answered(ticket, (completion.prompt_tokens or 0) + (completion.completion_tokens or 0)
                              if completion.prompt_tokens is not None else None, completion.told)
        except asyncio.TimeoutError as exc:  # a server that drips bytes or never finishes its body
            error = TransientError(f"timed out after {self.config.timeout_s:g}s (the deadline for a whole answer, "
                                   "TOOLKIT_TIMEOUT_S)", kind="timeout")
            call.attempts.append(Attempt(len(call.attempts) + 1, error.kind, None, str(error),
                                         (time.perf_counter() - t0) * 1000))
            raise error from exc
        except LLMError as exc:
            call.attempts.append(Attempt(len(call.attempts) + 1, exc.kind, exc.status_code, str(exc),
                                         (time.perf_counter() - t0) * 1000))
            if exc.billed is not None:  # no answer, billed all the same (its body's usage)
                call.bill(*exc.billed, cost_usd(self.backend.model, *exc.billed))
            if exc.kind == SCHEMA_REFUSED:  # a request made and refused (a row); asked again with the schema in prompt
                return await self._attempt(request, call)
            if isinstance(exc, TransientError) and exc.kind == "refused" and self.base_url not in _ANSWERED:
                raise LLMError(f"{self.backend.model} at {self.base_url}: cannot connect (is a server listening "
                               f"there?): {exc}", kind="refused") from exc
            raise
        if self.base_url is not None:
            _ANSWERED.add(self.base_url)
        return completion

    def _tokens(self, request: Request) -> int:
        """What a request is charged against a tokens-per-minute limit before it is sent: its prompt's estimate
        and the most it may answer (corrected by the reported usage when it answers)."""
        return estimate_prompt_tokens(request.messages) + (request.sampling.max_tokens
                                                                   or self.config.max_tokens or 0)

    async def _retry(self, request: Request, call: Call, first: TransientError,
                     failed: Callable[[], None] | None = None) -> Completion | None:
        cfg = self.config
        if cfg.max_attempts <= 1:
            call.error = self._gave_up(call, first)
            return None

        async def pause(seconds: float) -> None:
            """The wait before a failed request is sent again (a backoff, or the endpoint's ``Retry-After``): said
            to ``failed``, and counted in the endpoint's ``waited_s`` (``gate.waited``) for the time it lasted."""
            if failed is not None:
                failed()
            t0 = time.monotonic()
            try:
                await asyncio.sleep(seconds)
            finally:
                if self.base_url is not None:
                    waited(self.base_url, time.monotonic() - t0)

        await pause(self._delay(first, 1))
        retrying = AsyncRetrying(sleep=pause,
                                 stop=stop_after_attempt(cfg.max_attempts - 1) | stop_after_delay(cfg.max_total_wait_s),
                                 wait=lambda state: self._delay(state.outcome.exception(), state.attempt_number + 1),
                                 retry=retry_if_exception_type(TransientError), reraise=True)
        completion = None
        try:
            async for attempt in retrying:
                with attempt:
                    completion = await self._attempt(request, call)
        except TransientError as exc:
            call.error = self._gave_up(call, exc)
        except LLMError as exc:
            call.error = str(exc)
        return completion

    def _gave_up(self, call: Call, exc: Exception) -> str:
        where = f" at {mask_url(self.base_url)}" if self.base_url else ""
        return f"{self.backend.model}{where}: gave up after {len(call.attempts)} attempts: {exc}"

    def _delay(self, exc: BaseException | None, attempt: int) -> float:
        if isinstance(exc, TransientError) and exc.retry_after is not None:
            return min(exc.retry_after, self.config.retry_after_cap_s)
        return self._backoff(SimpleNamespace(attempt_number=attempt))  # tenacity's waits read only this

    def _accounted(self, c: Completion, request: Request) -> Completion:
        """Usage (estimated and flagged where the backend reports none) and cost."""
        if c.prompt_tokens is None:
            # an endpoint's estimate errs high (a cap on it is reached early, not overshot); an offline backend's
            # is its text's (nothing billed; the recorded games keep their counts)
            c.prompt_tokens = estimate_prompt_tokens(request.messages) if self.base_url is not None else \
                estimate_tokens(messages_text(request.messages))
            c.usage_estimated = True
        if c.completion_tokens is None:
            c.completion_tokens = estimate_tokens(c.text)
        if c.cost_usd is None:
            # read per call: a fork switches backends mid-game
            c.cost_usd = 0.0 if self.backend.free else cost_usd(c.model, c.prompt_tokens, c.completion_tokens,
                                                                c.cached_tokens, reasoning_tokens=c.reasoning_tokens)
        return c
