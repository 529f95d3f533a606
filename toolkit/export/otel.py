"""Games and sessions as OpenTelemetry GenAI spans (``toolkit.record.spans`` names and attributes them): written
as OTLP JSON (``traces.jsonl``: one ``ExportTraceServiceRequest`` per game or session per line, the OTLP file
format, ids in hex) or sent to an OTLP/HTTP endpoint (Phoenix, Jaeger, an OpenTelemetry Collector)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from toolkit.core.files import inside
from toolkit.export.common import records
from toolkit.record.spans import SpanBuilder, exporter


def spans(results, content: bool = True, game_ids: list[str] | None = None) -> dict[str, list]:
    """Every span of ``results``, grouped by game or session id (the trace each belongs to)."""
    out: dict[str, list] = {}
    key = {"value": ""}
    builder = SpanBuilder(lambda span: out.setdefault(key["value"], []).append(span), content)
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
            builder.session(s)
    for g in records(games):
        key["value"] = str(g["game_id"])
        builder.game(g)
    return out


def _hex_ids(obj):
    """OTLP JSON writes trace and span ids as hex, where protobuf's JSON mapping writes base64."""
    if isinstance(obj, dict):
        return {k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") and v else _hex_ids(v))
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [_hex_ids(v) for v in obj]
    return obj


def otlp_json(span_list: list) -> dict:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return _hex_ids(MessageToDict(encode_spans(span_list)))


def write(results, out: Path, content: bool = True, game_ids: list[str] | None = None) -> list[Path]:
    path = inside(out, "traces", ".jsonl")
    with path.open("w", encoding="utf-8") as handle:
        for span_list in spans(results, content, game_ids).values():
            handle.write(json.dumps(otlp_json(span_list), ensure_ascii=False) + "\n")
    return [path]


def send(results, endpoint: str, content: bool = True, game_ids: list[str] | None = None) -> int:
    """Send every span over OTLP/HTTP; the number sent (a refused export raises ``OSError``)."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    target = exporter(endpoint)
    n = 0
    try:
        for span_list in spans(results, content, game_ids).values():
            if target.export(span_list) is not SpanExportResult.SUCCESS:
                raise OSError(f"{endpoint}: the OTLP endpoint did not accept the spans")
            n += len(span_list)
    finally:
        target.shutdown()
    return n
