"""Table rows as OpenTelemetry spans named and attributed per the GenAI semantic conventions, for live tracing
(a run with ``TOOLKIT_OTLP_ENDPOINT`` set sends each span as its row is written) and for ``export otel``.

- a call: ``chat {model}`` (CLIENT): ``gen_ai.operation.name=chat``, ``gen_ai.provider.name``,
  ``gen_ai.request.model``/``gen_ai.response.model``, ``gen_ai.usage.input_tokens``/``output_tokens``/
  ``cache_read.input_tokens``, ``gen_ai.conversation.id`` (the game or session), and with content on
  ``gen_ai.input.messages``/``gen_ai.output.messages`` (JSON);
- a seat of a game, or an engineer session: ``invoke_agent {name}`` (``gen_ai.agent.name``), the parent of its
  calls (and of a session's tool calls); a game: ``werewolf {game_id}``, the parent of its seats;
- a tool call: ``execute_tool {tool}`` (``gen_ai.tool.name``, ``gen_ai.tool.call.id``).

A game's span and a session's also carry their calls' tokens summed (``toolkit.prompt_tokens``,
``toolkit.completion_tokens``, ``toolkit.tokens_estimated`` when any count is an estimate: not as
``gen_ai.usage.*`` or ``llm.token_count.*``, which a viewer sums over the child calls already), and, when the
exporter knows them, the run and its conditions (``toolkit.run_id``, ``toolkit.condition.<name>``: a sweep or
tournament cell's parameters; a list or mapping as JSON).

Each span also carries the OpenInference attributes Phoenix types spans by (``openinference.span.kind`` LLM,
AGENT, TOOL or CHAIN, ``llm.token_count.*``, ``session.id``). Ids are derived from the rows' ids (a game's trace
id from its game_id, a seat's span id from game and seat), so a call sent live and its seat's span sent when
the game ends meet in one trace. Tool-call rows hold a duration but no start time: a tool span starts where
the session's previous span ended. Every string is masked (secrets) before it leaves.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable

from toolkit.core.secrets import Redactor

ENDPOINT_VARIABLE = "TOOLKIT_OTLP_ENDPOINT"
CONTENT_VARIABLE = "TOOLKIT_OTLP_CONTENT"  # "0" leaves message contents out of live spans
SERVICE = "llm-agent-toolkit"


def _id(bits: int, *parts: Any) -> int:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[: bits // 8], "big") or 1


def _ns(text: Any) -> int | None:
    try:
        return int(datetime.fromisoformat(str(text)).timestamp() * 1e9)
    except (TypeError, ValueError):
        return None


def _provider(spec: str) -> str:
    head = str(spec or "").split(":", 1)[0]
    return head if head and ":" in str(spec) else (head or "unknown")


def resource():
    """The SDK's resource of every span: ``service.name`` and the SDK's own attributes."""
    from opentelemetry.sdk.resources import Resource

    return Resource.create({"service.name": SERVICE})


@dataclass(slots=True)
class Span:
    """A finished span as plain data (what ``export otel`` writes as OTLP JSON without building SDK objects);
    ``sdk(resource)`` is the SDK's ``ReadableSpan`` of it (what an OTLP exporter sends). ``error``: None when
    the span ended OK, else its status message."""

    name: str
    trace_id: int
    span_id: int
    parent_id: int | None
    kind: str  # an ``opentelemetry.trace.SpanKind`` name: CLIENT or INTERNAL
    start: int
    end: int
    attributes: dict[str, Any]
    error: str | None = None

    def sdk(self, resource):
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        context = SpanContext(self.trace_id, self.span_id, is_remote=False, trace_flags=TraceFlags(1))
        parent = (SpanContext(self.trace_id, self.parent_id, is_remote=False, trace_flags=TraceFlags(1))
                  if self.parent_id is not None else None)
        status = Status(StatusCode.OK) if self.error is None else Status(StatusCode.ERROR, self.error)
        return ReadableSpan(name=self.name, context=context, parent=parent, resource=resource,
                            attributes=self.attributes, kind=getattr(SpanKind, self.kind), start_time=self.start,
                            end_time=self.end, status=status)


class SpanBuilder:
    """Turns rows (``row(table, row)``) into finished spans (``Span``) handed to ``sink``; keeps, per game or
    session, the time range and seats seen so far, for the spans written when the game or session ends."""

    def __init__(self, sink: Callable[[Span], None], content: bool = True):
        self.sink, self.content, self.mask = sink, content, Redactor()
        self.open: dict[str, dict] = {}  # conversation id -> {start, end, seats: {seat: [start, end, spec]}}

    # ---------------------------------------------------------------- building blocks
    def _span(self, name: str, trace: str, span_key: tuple, parent_key: tuple | None, start: int, end: int,
              kind: str, attributes: dict[str, Any], ok: bool = True, error: str | None = None):
        mask = self.mask
        clean = {k: (mask(v) if isinstance(v, str) else v) for k, v in attributes.items() if v is not None}
        self.sink(Span(name, _id(128, "trace", trace), _id(64, *span_key), _id(64, *parent_key) if parent_key else None,
                       kind, start, max(end, start), clean, None if ok else mask(error or "failed")))

    def _touch(self, conversation: str, start: int, end: int, seat: str | None = None, spec: str | None = None):
        c = self.open.setdefault(conversation, {"start": start, "end": end, "seats": {}})
        c["start"], c["end"] = min(c["start"], start), max(c["end"], end)
        if seat:
            s = c["seats"].setdefault(seat, [start, end, spec])
            s[0], s[1] = min(s[0], start), max(s[1], end)

    # ---------------------------------------------------------------- rows
    def row(self, table: str, row: dict[str, Any]) -> None:
        handler = {"calls": self.call, "tool_calls": self.tool_call, "games": self.game,
                   "sessions": self.session}.get(table)
        if handler is not None:
            handler(row)

    def call(self, c: dict[str, Any]) -> None:
        game, session = c.get("game_id"), c.get("session_id")
        conversation = str(game or session or c.get("run_id") or "calls")
        start = _ns(c.get("started_at")) or 0
        end = start + int((c.get("latency_ms") or 0) * 1e6)
        seat = c.get("seat")
        parent = (("seat", game, seat) if game and seat else ("session", session) if session else None)
        self._touch(conversation, start, end, seat if game else None, c.get("spec"))
        used = self.open[conversation]
        used["prompt"] = used.get("prompt", 0) + int(c.get("prompt_tokens") or 0)
        used["completion"] = used.get("completion", 0) + int(c.get("completion_tokens") or 0)
        used["estimated"] = used.get("estimated", False) or bool(c.get("usage_estimated"))
        model = str(c.get("model") or "unknown")
        attributes = {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": _provider(c.get("spec")),
            "gen_ai.request.model": model, "gen_ai.response.model": model,
            "gen_ai.request.temperature": c.get("temperature"),
            "gen_ai.usage.input_tokens": int(c.get("prompt_tokens") or 0),
            "gen_ai.usage.output_tokens": int(c.get("completion_tokens") or 0),
            "gen_ai.usage.cache_read.input_tokens": int(c.get("cached_tokens") or 0),
            "gen_ai.conversation.id": conversation,
            "openinference.span.kind": "LLM", "llm.model_name": model, "session.id": conversation,
            "llm.token_count.prompt": int(c.get("prompt_tokens") or 0),
            "llm.token_count.completion": int(c.get("completion_tokens") or 0),
            "llm.token_count.total": int(c.get("prompt_tokens") or 0) + int(c.get("completion_tokens") or 0),
            "llm.token_count.prompt_details.cache_read": int(c.get("cached_tokens") or 0),
            "toolkit.call_id": c.get("call_id"), "toolkit.seat": seat, "toolkit.action": c.get("action"),
            "toolkit.day": c.get("day"), "toolkit.phase": c.get("phase"), "toolkit.cost_usd": c.get("cost_usd"),
            "toolkit.cache_hit": c.get("cache_hit"), "toolkit.fallback": c.get("fallback"),
        }
        if self.content:
            messages = c.get("messages")
            messages = messages if isinstance(messages, str) else json.dumps(messages, default=str)
            answer = json.dumps([{"role": "assistant", "parts": [{"type": "text",
                                                                  "content": c.get("response_text") or ""}]}])
            attributes.update({"gen_ai.input.messages": messages, "gen_ai.output.messages": answer,
                               "input.value": messages, "output.value": c.get("response_text") or ""})
        self._span(f"chat {model}", conversation, ("call", c.get("call_id")), parent, start, end, "CLIENT",
                   attributes, ok=bool(c.get("ok", True)), error=c.get("error"))

    def tool_call(self, t: dict[str, Any]) -> None:
        session = str(t.get("session_id"))
        c = self.open.get(session)
        start = c["end"] if c else _ns(datetime.now().astimezone().isoformat()) or 0
        end = start + int((t.get("duration_ms") or 0) * 1e6)
        self._touch(session, start, end)
        k = c.setdefault("tools", 0) if c else 0
        if c:
            c["tools"] += 1
        tool = str(t.get("tool"))
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
                      "gen_ai.tool.call.id": f"{session}-{t.get('step')}-{k}", "gen_ai.conversation.id": session,
                      "openinference.span.kind": "TOOL", "tool.name": tool, "session.id": session,
                      "toolkit.step": t.get("step"), "toolkit.output_chars": t.get("output_chars"),
                      "toolkit.truncated": t.get("truncated")}
        if self.content:
            args = t.get("args")
            attributes["gen_ai.tool.call.arguments"] = args if isinstance(args, str) else json.dumps(args)
            attributes["input.value"] = attributes["gen_ai.tool.call.arguments"]
        self._span(f"execute_tool {tool}", session, ("tool", session, t.get("step"), k), ("session", session),
                   start, end, "INTERNAL", attributes, ok=bool(t.get("ok", True)), error=t.get("error"))

    @staticmethod
    def _study(row: dict[str, Any], c: dict, conditions: dict[str, Any] | None) -> dict[str, Any]:
        """A game's or session's tokens, run and conditions, as attributes."""
        out = {"toolkit.prompt_tokens": c.get("prompt", 0), "toolkit.completion_tokens": c.get("completion", 0),
               "toolkit.tokens_estimated": c.get("estimated", False), "toolkit.run_id": row.get("run_id")}
        for k, v in (conditions or {}).items():
            out[f"toolkit.condition.{k}"] = v if isinstance(v, (str, bool, int, float)) else json.dumps(v, default=str)
        return out

    def game(self, g: dict[str, Any], conditions: dict[str, Any] | None = None) -> None:
        gid = str(g.get("game_id"))
        c = self.open.pop(gid, None) or {"start": 0, "end": 0, "seats": {}}
        for seat, (start, end, spec) in c["seats"].items():
            self._span(f"invoke_agent {seat}", gid, ("seat", gid, seat), ("game", gid), start, end, "INTERNAL",
                       {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": seat,
                        "gen_ai.agent.id": f"{gid}/{seat}", "gen_ai.conversation.id": gid,
                        "openinference.span.kind": "AGENT", "session.id": gid, "toolkit.spec": spec})
        self._span(f"werewolf {gid}", gid, ("game", gid), None, c["start"], c["end"], "INTERNAL",
                   {"openinference.span.kind": "CHAIN", "session.id": gid, "gen_ai.conversation.id": gid,
                    "toolkit.winner": g.get("winner"), "toolkit.preset": g.get("preset"),
                    "toolkit.days": g.get("days"), "toolkit.n_calls": g.get("n_calls"),
                    **self._study(g, c, conditions)})

    def session(self, s: dict[str, Any], conditions: dict[str, Any] | None = None) -> None:
        sid = str(s.get("session_id"))
        c = self.open.pop(sid, None) or {"start": 0, "end": 0}
        self._span("invoke_agent engineer", sid, ("session", sid), None, c["start"], c["end"], "INTERNAL",
                   {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "engineer",
                    "gen_ai.agent.id": sid, "gen_ai.conversation.id": sid, "openinference.span.kind": "AGENT",
                    "session.id": sid, "toolkit.task": s.get("task") if self.content else None,
                    "toolkit.success": s.get("success"), "toolkit.steps": s.get("steps"),
                    "toolkit.ended_by": s.get("ended_by"), **self._study(s, c, conditions)})


def exporter(endpoint: str):
    """An OTLP/HTTP (protobuf) span exporter for ``endpoint`` (its ``/v1/traces`` is added when missing)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    url = endpoint.rstrip("/")
    return OTLPSpanExporter(endpoint=url if url.endswith("/v1/traces") else url + "/v1/traces")


class LiveTracer:
    """Opt-in live tracing of a run: every span goes to a batching processor (a background thread sends them
    over OTLP/HTTP), so writing a row costs building one span object. ``close()`` flushes."""

    def __init__(self, endpoint: str, content: bool = True):
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.processor = BatchSpanProcessor(exporter(endpoint))
        held = resource()
        self.builder = SpanBuilder(lambda span: self.processor.on_end(span.sdk(held)), content)

    def __call__(self, table: str, row: dict[str, Any]) -> None:
        self.builder.row(table, row)

    def close(self) -> None:
        self.processor.force_flush()
        self.processor.shutdown()


def live_tracer(environ: dict[str, str] | None = None) -> LiveTracer | None:
    """A ``LiveTracer`` when ``TOOLKIT_OTLP_ENDPOINT`` is set (and the OpenTelemetry SDK installed), else None."""
    environ = os.environ if environ is None else environ
    endpoint = environ.get(ENDPOINT_VARIABLE, "").strip()
    if not endpoint:
        return None
    return LiveTracer(endpoint, content=environ.get(CONTENT_VARIABLE, "1") != "0")
