"""Games and sessions as OpenTelemetry GenAI spans (``toolkit.record.spans`` names and attributes them): written
as OTLP JSON (``traces.jsonl``: one ``ExportTraceServiceRequest`` per game or session per line, the OTLP file
format, ids in hex) or sent to an OTLP/HTTP endpoint (Phoenix, Jaeger, an OpenTelemetry Collector). A game's or
session's span carries its run's conditions (``toolkit.condition.<name>``) and its tokens."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Iterator

from toolkit.core.files import inside
from toolkit.core.secrets import Redactor
from toolkit.export.common import conditions_by_run, records
from toolkit.export.study import parts
from toolkit.record.spans import SpanBuilder, exporter


def spans(results, content: bool = True, game_ids: list[str] | None = None) -> dict[str, list]:
    """Every span of ``results``, grouped by game or session id (the trace each belongs to)."""
    out: dict[str, list] = {}
    key = {"value": ""}
    builder = SpanBuilder(lambda span: out.setdefault(key["value"], []).append(span), content)
    cells = conditions_by_run(results, Redactor())
    calls = results.calls
    games = results.games
    if game_ids is not None:
        games = games[games["game_id"].isin(game_ids)]
        calls = calls[calls["game_id"].isin(game_ids)]
    for c in sorted(records(calls), key=lambda c: (str(c.get("started_at")), str(c.get("call_id")))):
        key["value"] = str(c.get("game_id") or c.get("session_id") or c.get("run_id"))
        builder.call(c)
    if game_ids is None:
        tools = sorted(records(results.tool_calls), key=lambda t: (str(t["session_id"]), t.get("step") or 0))
        for t in tools:
            key["value"] = str(t["session_id"])
            builder.tool_call(t)
        for s in records(results.sessions):
            key["value"] = str(s["session_id"])
            builder.session(s, cells.get(str(s.get("run_id"))))
    for g in records(games):
        key["value"] = str(g["game_id"])
        builder.game(g, cells.get(str(g.get("run_id"))))
    return out


KINDS = ("SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER",
         "SPAN_KIND_CONSUMER")
STATUS = ("STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR")
CONTEXT_HAS_IS_REMOTE, CONTEXT_IS_REMOTE = 0x100, 0x200


def _value(v) -> dict:
    """An attribute value as OTLP JSON's AnyValue (int64 as a string, as protobuf's JSON mapping writes it)."""
    if v is None:
        return {}
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v if v == v and abs(v) != float("inf") else
                ("NaN" if v != v else "Infinity" if v > 0 else "-Infinity")}
    if isinstance(v, bytes):
        return {"bytesValue": base64.b64encode(v).decode()}
    if isinstance(v, Mapping):
        values = [{"key": str(k), "value": _value(x)} for k, x in v.items()]
        return {"kvlistValue": {"values": values} if values else {}}
    values = [_value(x) for x in v]
    return {"arrayValue": {"values": values} if values else {}}


def _attributes(out: dict, attributes, dropped: int = 0) -> dict:
    if attributes:
        out["attributes"] = [{"key": k, "value": _value(v)} for k, v in attributes.items()]
    if dropped:
        out["droppedAttributesCount"] = dropped
    return out


def _flags(context) -> int:
    return CONTEXT_HAS_IS_REMOTE | (CONTEXT_IS_REMOTE if context is not None and context.is_remote else 0)


def _span(s) -> dict:
    context = s.get_span_context()
    out = {"traceId": f"{context.trace_id:032x}", "spanId": f"{context.span_id:016x}"}
    state = ",".join(f"{k}={v}" for k, v in (context.trace_state or {}).items())
    if state:
        out["traceState"] = state
    if s.parent is not None:
        out["parentSpanId"] = f"{s.parent.span_id:016x}"
    if s.name:
        out["name"] = s.name
    if s.kind.value + 1:
        out["kind"] = KINDS[s.kind.value + 1]
    for key, t in (("startTimeUnixNano", s.start_time), ("endTimeUnixNano", s.end_time)):
        if t:
            out[key] = str(t)
    _attributes(out, s.attributes, s.dropped_attributes)
    if s.events:
        out["events"] = [_attributes({**({"timeUnixNano": str(e.timestamp)} if e.timestamp else {}),
                                      **({"name": e.name} if e.name else {})}, e.attributes, e.dropped_attributes)
                         for e in s.events]
    if s.dropped_events:
        out["droppedEventsCount"] = s.dropped_events
    if s.links:
        out["links"] = [_attributes({"traceId": f"{link.context.trace_id:032x}",
                                     "spanId": f"{link.context.span_id:016x}"}, link.attributes,
                                    link.dropped_attributes) | {"flags": _flags(link.context)} for link in s.links]
    if s.dropped_links:
        out["droppedLinksCount"] = s.dropped_links
    if s.status is not None:
        status = {}
        if s.status.description:
            status["message"] = s.status.description
        if s.status.status_code.value:
            status["code"] = STATUS[s.status.status_code.value]
        out["status"] = status
    out["flags"] = _flags(s.parent)
    return out


def otlp_json(span_list: list) -> dict:
    """One ExportTraceServiceRequest as OTLP JSON (ids in hex), written directly: what protobuf's JSON mapping
    of the SDK's encoder gives (tests/export holds them equal), at a fraction of its cost."""
    grouped: dict = {}
    for s in span_list:
        grouped.setdefault(s.resource, {}).setdefault(s.instrumentation_scope or None, []).append(_span(s))
    out = []
    for resource, scopes in grouped.items():
        scope_spans = []
        for scope, spans_ in scopes.items():
            named = {} if scope is None else {k: v for k, v in (("name", scope.name), ("version", scope.version)) if v}
            entry: dict = {"scope": {} if scope is None else _attributes(named, scope.attributes)}
            entry["spans"] = spans_
            if scope is not None and scope.schema_url:
                entry["schemaUrl"] = scope.schema_url
            scope_spans.append(entry)
        item: dict = {"resource": _attributes({}, resource.attributes), "scopeSpans": scope_spans}
        if resource.schema_url:
            item["schemaUrl"] = resource.schema_url
        out.append(item)
    return {"resourceSpans": out} if out else {}


def traces(results, content: bool = True, game_ids: list[str] | None = None) -> Iterator[list]:
    """Each game's or session's spans (one trace), a batch of games at a time when ``results`` is a ``Study``
    (its traces in each batch's order, then the sessions'), else in ``spans``' order."""
    for part in parts(results, sessions=game_ids is None):
        yield from spans(part, content, game_ids).values()


def write(results, out: Path, content: bool = True, game_ids: list[str] | None = None) -> list[Path]:
    path = inside(out, "traces", ".jsonl")
    with path.open("w", encoding="utf-8") as handle:
        for span_list in traces(results, content, game_ids):
            handle.write(json.dumps(otlp_json(span_list), ensure_ascii=False) + "\n")
    return [path]


def send(results, endpoint: str, content: bool = True, game_ids: list[str] | None = None) -> int:
    """Send every span over OTLP/HTTP; the number sent (a refused export raises ``OSError``)."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    target = exporter(endpoint)
    n = 0
    try:
        for span_list in traces(results, content, game_ids):
            if target.export(span_list) is not SpanExportResult.SUCCESS:
                raise OSError(f"{endpoint}: the OTLP endpoint did not accept the spans")
            n += len(span_list)
    finally:
        target.shutdown()
    return n
