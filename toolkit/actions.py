"""A prompted, structured LLM call: template file + pydantic output model + parse + one re-ask + fallback.

A parse or validation failure never reaches the caller as an exception: the action ends with a valid
value, taken from the model or (``fallback=True``) from the caller's legal fallback. Every call to the
model, good or bad, becomes one row of the ``calls`` table.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Literal, Optional

import json_repair
from pydantic import BaseModel, ValidationError, create_model

from toolkit.llm import Backend, Completion, LLMError, Request
from toolkit.prompts import render
from toolkit.record import Run, now


@dataclass
class CallContext:
    """Where an action's calls are logged, and running totals for the games/sessions tables."""

    run: Run | None = None
    game_id: str | None = None
    session_id: str | None = None
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    fallbacks: int = 0
    _seq: Any = field(default_factory=itertools.count)

    def next_seq(self) -> int:
        return next(self._seq)

    def count(self, completion: Completion | None) -> None:
        self.calls += 1
        if completion is None:
            return
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        if completion.cost_usd is None or self.cost_usd is None:
            self.cost_usd = None  # one call of unknown price makes the total unknown, not smaller
        else:
            self.cost_usd += completion.cost_usd


@dataclass
class ActionResult:
    value: BaseModel
    fallback: bool = False
    error: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 1  # model calls this action made (2 after a re-ask)


@lru_cache(maxsize=4096)
def with_choices(model: type[BaseModel], field_name: str, choices: tuple[str, ...],
                 allow_none: bool = False) -> type[BaseModel]:
    """``model`` with ``field_name`` restricted to ``choices`` (an enum in its JSON schema)."""
    kind: Any = Literal[choices] if choices else Literal["__none__"]
    if allow_none:
        kind = Optional[kind]
    return create_model(model.__name__, __base__=model, **{field_name: (kind, ...)})


@lru_cache(maxsize=4096)
def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def parse(text: str, model: type[BaseModel]) -> tuple[BaseModel | None, str | None]:
    """(value, None), (value, a note) for a repaired answer, or (None, a one-line error the model can act on)."""
    if not text or not text.strip():
        return None, "the answer was empty; reply with one JSON object"
    repaired = False
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data, repaired = json_repair.loads(text), True
        except Exception as exc:  # json_repair raises a variety of errors on hostile input
            return None, f"could not read JSON ({type(exc).__name__})"
    if isinstance(data, list):
        from_list = getattr(model, "from_list", None)  # a model that accepts a bare list (agent commands)
        data = from_list(data) if from_list else (data[0] if data and isinstance(data[0], dict) else data)
    if not isinstance(data, dict):
        return None, "no JSON object found in the answer; reply with one JSON object"
    try:
        value = model.model_validate(data)
        # A repaired answer is used, but the row keeps a note: it was not valid JSON as sent.
        return value, ("repaired malformed JSON" if repaired else None)
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:3]:
            where = ".".join(str(p) for p in err["loc"]) or "answer"
            got = json.dumps(err.get("input"), default=str)[:60]
            problems.append(f"{where}: {err['msg']} (got {got})")
        return None, "; ".join(problems)


class Action:
    """A named, prompted decision. Subclasses or instances set ``name``, ``template`` and ``output``."""

    def __init__(self, name: str, template: str, output: type[BaseModel], system: str | None = None):
        self.name = name
        self.template = template
        self.output = output
        self.system = system

    def messages(self, values: dict[str, Any]) -> list[dict[str, Any]]:
        messages = [{"role": "user", "content": render(self.template, **values)}]
        if self.system:
            messages.insert(0, {"role": "system", "content": render(self.system, **values)})
        return messages

    async def run(self, backend: Backend, values: dict[str, Any], *, fallback: Callable[[], BaseModel],
                  ctx: CallContext | None = None, output: type[BaseModel] | None = None,
                  observation: dict[str, Any] | None = None, meta: dict[str, Any] | None = None,
                  temperature: float | None = None, seed: int | None = None,
                  tools: list[dict[str, Any]] | None = None) -> ActionResult:
        model = output or self.output
        messages = self.messages(values)
        meta = {"action": self.name, **(meta or {})}
        if ctx is not None:  # stateful backends (scripted, replay) keep their place per game or session
            meta.setdefault("game_id", ctx.game_id)
            meta.setdefault("session_id", ctx.session_id)
        error = None
        for attempt in range(2):  # the first ask, then one re-ask that shows the model its error
            request = Request(messages=messages, schema=json_schema(model), schema_name=self.name,
                              observation=observation, temperature=temperature, seed=seed, meta=meta, tools=tools)
            value, text, error = await self._ask(backend, request, model, ctx, final=attempt == 1)
            if value is not None:
                return ActionResult(value, messages=messages, calls=attempt + 1)
            if text is None:  # a transport failure: nothing for the model to learn from a re-ask
                break
            messages = [*messages, {"role": "assistant", "content": text},
                        {"role": "user", "content": render("reask.j2", error=error)}]
        if ctx is not None:
            ctx.fallbacks += 1
        return ActionResult(fallback(), fallback=True, error=error, messages=messages, calls=attempt + 1)

    async def _ask(self, backend: Backend, request: Request, model: type[BaseModel], ctx: CallContext | None,
                   final: bool) -> tuple[BaseModel | None, str | None, str | None]:
        seq = ctx.next_seq() if ctx else 0
        started_at = now()
        t0 = time.perf_counter()
        completion, text, value, attempts = None, None, None, None
        try:
            completion = await backend.complete(request)
            text = completion.text
            value, error = parse(text, model)
        except LLMError as exc:
            error, attempts = str(exc), exc.attempts
        if ctx is not None:
            ctx.count(completion)
            if ctx.run is not None:
                # A row is the final one of its action when it succeeded or nothing more will be asked.
                fallback = value is None and (final or text is None)
                ctx.run.write("calls", self._row(ctx, seq, request, backend, completion, text, value, error,
                                                 fallback, started_at, (time.perf_counter() - t0) * 1000,
                                                 attempts))
        return value, text, error

    @staticmethod
    def _row(ctx: CallContext, seq: int, request: Request, backend: Backend, completion: Completion | None,
             text: str | None, value: BaseModel | None, error: str | None, fallback: bool, started_at: str,
             latency_ms: float, attempts: int | None) -> dict[str, Any]:
        meta = request.meta
        c = completion
        return {
            "call_id": f"{ctx.game_id or ctx.session_id}-{seq}", "run_id": ctx.run.run_id if ctx.run else None,
            "game_id": ctx.game_id, "session_id": ctx.session_id, "seq": seq, "seat": meta.get("seat"),
            "role": meta.get("role"), "action": meta.get("action"), "model": c.model if c else backend.model,
            "base_url": c.base_url if c else getattr(backend, "base_url", None),
            "temperature": request.temperature, "messages": json.dumps(request.messages, ensure_ascii=False),
            "response_text": text, "parsed": value.model_dump_json() if value is not None else None,
            "ok": value is not None, "error": error, "attempts": c.attempts if c else attempts,
            "fallback": fallback, "latency_ms": c.latency_ms if c and c.latency_ms else latency_ms,
            "prompt_tokens": c.prompt_tokens if c else None,
            "completion_tokens": c.completion_tokens if c else None,
            "cached_tokens": c.cached_tokens if c else None, "usage_estimated": c.usage_estimated if c else None,
            "cost_usd": c.cost_usd if c else None, "cache_hit": c.cache_hit if c else False,
            "started_at": started_at, "replay_key": meta.get("replay_key"),
        }
