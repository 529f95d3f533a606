"""Games and sessions as OpenTelemetry GenAI spans (``toolkit.record.spans`` names and attributes them): written
as OTLP JSON (``traces.jsonl``: one ``ExportTraceServiceRequest`` per game or session per line, the OTLP file
format, ids in hex) or sent to an OTLP/HTTP endpoint (Phoenix, Jaeger, an OpenTelemetry Collector). A game's or
session's span carries its run's conditions (``toolkit.condition.<name>``) and its tokens."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Iterator

from toolkit.core.files import inside
from toolkit.core.secrets import Redactor
from toolkit.export.common import conditions_by_run, records
from toolkit.export.study import parts
from toolkit.record.spans import Span, SpanBuilder, exporter, resource


def spans(results, content: bool = True, game_ids: list[str] | None = None) -> dict[str, list[Span]]:
    """Every span of ``results`` (plain ``Span`` records), grouped by game or session id (the trace each belongs
    to)."""
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


STATUS_OK = {"code": "STATUS_CODE_OK"}
FLAGS = 0x100  # CONTEXT_HAS_IS_REMOTE (the span's parent, if any, is not remote)


def _value(v) -> dict:
    """An attribute value as OTLP JSON's AnyValue (int64 as a string, as protobuf's JSON mapping writes it)."""
    if isinstance(v, str):
        return {"stringValue": v}
    if v is None:
        return {}
    if isinstance(v, bool):
        return {"boolValue": v}
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


def _attributes(out: dict, attributes) -> dict:
    if attributes:
        out["attributes"] = [{"key": k, "value": _value(v)} for k, v in attributes.items()]
    return out


def _span(s: Span) -> dict:
    out = {"traceId": f"{s.trace_id:032x}", "spanId": f"{s.span_id:016x}"}
    if s.parent_id is not None:
        out["parentSpanId"] = f"{s.parent_id:016x}"
    if s.name:
        out["name"] = s.name
    out["kind"] = "SPAN_KIND_" + s.kind
    if s.start:
        out["startTimeUnixNano"] = str(s.start)
    if s.end:
        out["endTimeUnixNano"] = str(s.end)
    _attributes(out, s.attributes)
    out["status"] = STATUS_OK if s.error is None else {**({"message": s.error} if s.error else {}),
                                                       "code": "STATUS_CODE_ERROR"}
    out["flags"] = FLAGS
    return out


def otlp_json(span_list: list[Span], held=None) -> dict:
    """One ExportTraceServiceRequest as OTLP JSON (ids in hex), written directly from the span records: what
    protobuf's JSON mapping of the SDK's encoder gives for their SDK spans (tests/export holds them equal), at a
    fraction of its cost. ``held``: the SDK resource (``toolkit.record.spans.resource()``, made once)."""
    if not span_list:
        return {}
    held = resource() if held is None else held
    item: dict = {"resource": _attributes({}, held.attributes),
                  "scopeSpans": [{"scope": {}, "spans": [_span(s) for s in span_list]}]}
    if held.schema_url:
        item["schemaUrl"] = held.schema_url
    return {"resourceSpans": [item]}


def traces(results, content: bool = True, game_ids: list[str] | None = None) -> Iterator[list]:
    """Each game's or session's spans (one trace), a batch of games at a time when ``results`` is a ``Study``
    (its traces in each batch's order, then the sessions'), else in ``spans``' order."""
    for part in parts(results, sessions=game_ids is None):
        grouped = spans(part, content, game_ids)
        del part  # before the next batch is read: one batch in memory, not two
        yield from grouped.values()
        del grouped


def write(results, out: Path, content: bool = True, game_ids: list[str] | None = None) -> list[Path]:
    import orjson  # the lines are mostly prompts (~380 KB a game): 5-6 times faster than json.dumps

    path = inside(out, "traces", ".jsonl")
    held = resource()
    with path.open("wb") as handle:
        for span_list in traces(results, content, game_ids):
            handle.write(orjson.dumps(otlp_json(span_list, held)) + b"\n")
    return [path]


def send(results, endpoint: str, content: bool = True, game_ids: list[str] | None = None) -> int:
    """Send every span over OTLP/HTTP; the number sent (a refused export raises ``OSError``)."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    target, held = exporter(endpoint), resource()
    n = 0
    try:
        for span_list in traces(results, content, game_ids):
            if target.export([s.sdk(held) for s in span_list]) is not SpanExportResult.SUCCESS:
                raise OSError(f"{endpoint}: the OTLP endpoint did not accept the spans")
            n += len(span_list)
    finally:
        target.shutdown()
    return n


def check_endpoint(url: str) -> None:
    """Refuse an OTLP endpoint that is not an http(s) URL or does not answer, in one line, before exporting."""
    from urllib.parse import urlsplit

    from toolkit.llm.reach import reachable
    from toolkit.core.files import FileError
    from toolkit.core.secrets import mask_url

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FileError(f"--endpoint {mask_url(url)}: give an http(s) URL, e.g. http://127.0.0.1:6006")
    why = reachable(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80), 3.0)
    if why:
        raise FileError(f"--endpoint {mask_url(url)}: cannot connect ({why})")
