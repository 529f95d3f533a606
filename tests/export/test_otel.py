"""OpenTelemetry GenAI spans received by Phoenix (arize-phoenix, started here on loopback as the OTLP receiver)
and read back with its own client: one span per call (LLM) and per tool call (TOOL), one AGENT span per seat
and per session, with token counts and session ids; the same spans live from a run with TOOLKIT_OTLP_ENDPOINT;
and the OTLP JSON file export."""

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import httpx
import pytest

from toolkit.export import otel
from toolkit.record.load import load

pytestmark = pytest.mark.interop

pytest.importorskip("opentelemetry.sdk", reason="the interop extra (opentelemetry-sdk) is not installed")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def phoenix_python():
    """The Python that runs the Phoenix server: ``PHOENIX_PYTHON`` (a venv of its own: the arize-phoenix server
    package makes ``import phoenix`` cost seconds, and arize-phoenix-client's pytest plugin imports it in every
    pytest of the venv, the engineer tasks' included), else this one if the server is installed here."""
    import importlib.util

    if os.environ.get("PHOENIX_PYTHON"):
        # absolute: the server starts in a temporary folder, where a relative path finds nothing
        python = os.path.abspath(os.environ["PHOENIX_PYTHON"])
        assert os.access(python, os.X_OK), f"PHOENIX_PYTHON={python} is not an executable Python"
        return python
    return sys.executable if importlib.util.find_spec("phoenix.server") else None


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    pytest.importorskip("phoenix.client", reason="the interop extra (arize-phoenix-client) is not installed")
    python = phoenix_python()
    if python is None:
        pytest.skip("no Phoenix server: set PHOENIX_PYTHON to a Python with arize-phoenix installed")
    folder = tmp_path_factory.mktemp("phoenix")
    port, grpc = free_port(), free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(folder), "PHOENIX_PORT": str(port), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_GRPC_PORT": str(grpc), "PHOENIX_TELEMETRY_ENABLED": "false"}
    log = open(folder / "server.log", "w")
    server = subprocess.Popen([python, "-m", "phoenix.server.main", "serve"], env=env, stdout=log,
                              stderr=subprocess.STDOUT, cwd=folder)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):  # it takes ~25 s on a quiet machine, minutes on a busy one
            if server.poll() is not None:
                pytest.fail(f"phoenix exited: {(folder / 'server.log').read_text()[-2000:]}")
            try:
                urllib.request.urlopen(url + "/healthz", timeout=2)
                break
            except OSError:
                time.sleep(1)
        else:
            pytest.fail("phoenix did not come up in 10 minutes")
        from phoenix.client import Client

        yield url, Client(base_url=url)
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()


def received(client, session_ids, expected, timeout_s=300):
    """Phoenix's spans of these sessions, once ``expected`` of them have arrived."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            df = client.spans.get_spans_dataframe(project_identifier="default", limit=100000, timeout=120)
        except httpx.TimeoutException:  # a busy machine can make Phoenix slow to answer
            if time.monotonic() > deadline:
                raise
            continue
        df = df[df["attributes.session.id"].isin(session_ids)] if len(df) else df
        if len(df) >= expected or time.monotonic() > deadline:
            return df
        time.sleep(1)


def test_phoenix_types_every_call_and_tool_call_with_tokens_and_sessions(phoenix, game, session_folder):
    url, client = phoenix
    results, gid = game
    sessions = load(session_folder)
    n_game = otel.send(results, url)
    n_sessions = otel.send(sessions, url)
    ids = {gid, *sessions.sessions["session_id"]}
    df = received(client, ids, n_game + n_sessions)
    assert len(df) == n_game + n_sessions
    kinds = df.groupby("attributes.session.id")["span_kind"].value_counts().unstack(fill_value=0)
    assert kinds.loc[gid, "LLM"] == len(results.calls)
    assert kinds.loc[gid, "AGENT"] == results.calls["seat"].nunique()
    for sid in sessions.sessions["session_id"]:
        assert kinds.loc[sid, "TOOL"] == (sessions.tool_calls["session_id"] == sid).sum() > 0
        assert kinds.loc[sid, "AGENT"] == 1
        assert kinds.loc[sid, "LLM"] == (sessions.calls["session_id"] == sid).sum()
    llm = df[(df["span_kind"] == "LLM") & (df["attributes.session.id"] == gid)]
    assert llm["attributes.llm.token_count.prompt"].sum() == results.calls["prompt_tokens"].sum()
    assert llm["attributes.llm.token_count.completion"].sum() == results.calls["completion_tokens"].sum()
    assert set(llm["name"]) == {f"chat {m}" for m in results.calls["model"]}
    # every call's parent is its seat's invoke_agent span, in the game's trace
    agents = df[df["span_kind"] == "AGENT"].set_index("context.span_id")["name"]
    assert set(llm["parent_id"].map(agents)) == {f"invoke_agent {s}" for s in results.calls["seat"]}


def test_a_run_with_the_endpoint_set_traces_live(phoenix, monkeypatch, tmp_path):
    from toolkit.record.run_log import Run
    from toolkit.testing.loopback_server import FakeOpenAIServer
    from toolkit.werewolf.game import GameConfig, play_game

    url, client = phoenix
    monkeypatch.setenv("TOOLKIT_OTLP_ENDPOINT", url)
    with FakeOpenAIServer(seed=2) as server:
        with Run(tmp_path) as run:
            asyncio.run(play_game(GameConfig(seed=5, model=f"openai:det@{server.base_url}", max_days=2), run))
    results = load(tmp_path)
    gid = results.games["game_id"].iloc[0]
    expected = len(results.calls) + results.calls["seat"].nunique() + 1
    df = received(client, {gid}, expected)
    assert len(df) == expected
    assert (df["span_kind"] == "LLM").sum() == len(results.calls)


def test_otlp_json_file_holds_one_request_per_game_with_hex_ids(game, tmp_path):
    results, gid = game
    path, = otel.write(results, tmp_path, content=False)
    lines = path.read_text().splitlines()
    assert len(lines) == 1
    spans = [s for r in json.loads(lines[0])["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]]
    assert len(spans) == len(results.calls) + results.calls["seat"].nunique() + 1
    assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in spans)
    assert len({s["traceId"] for s in spans}) == 1
    keys = {a["key"] for s in spans for a in s["attributes"]}
    assert {"gen_ai.usage.input_tokens", "gen_ai.conversation.id", "gen_ai.usage.cache_read.input_tokens"} <= keys
    assert "gen_ai.input.messages" not in keys  # content capture is off


def sdk_json(span_list):
    """What the OpenTelemetry SDK's own encoder gives, through protobuf's JSON mapping, ids made hex (the
    export's former path, 3-4 times slower): the reference the direct OTLP JSON is held to."""
    import base64

    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    def hexed(obj):
        if isinstance(obj, dict):
            return {k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") and v else hexed(v))
                    for k, v in obj.items()}
        return [hexed(v) for v in obj] if isinstance(obj, list) else obj

    return hexed(MessageToDict(encode_spans(span_list)))


@pytest.mark.parametrize("content", [True, False])
def test_the_otlp_json_is_what_the_sdks_encoder_gives(game, session_folder, content):
    """Every trace of a game (calls, seats, the game; content in and out) and of two engineer sessions (their
    calls and tool calls): written directly, equal value for value to the SDK's protobuf encoding."""
    sessions = load(session_folder)
    from toolkit.record.spans import resource

    held = resource()
    traces = [*otel.spans(game[0], content).values(), *otel.spans(sessions, content).values()]
    assert len(traces) == 3 and sum(map(len, traces)) > 20
    from toolkit.record.spans import Span

    failed = [Span("chat m", 7, 8, None, "CLIENT", 0, 5, {"toolkit.n": 2, "x": 0.5, "ok": False}, "HTTP 500"),
              Span("execute_tool bash", 7, 9, 8, "INTERNAL", 3, 4, {}, "")]  # error statuses, a time of 0
    for span_list in [*traces, failed]:
        assert otel.otlp_json(span_list, held) == sdk_json([s.sdk(held) for s in span_list])


def test_an_otlp_receiver_decodes_every_span_sent_live(game, monkeypatch, tmp_path):
    """Without Phoenix too: a local OTLP/HTTP receiver decoding each request with opentelemetry-proto gets one
    span per call, per seat and per game from a run with TOOLKIT_OTLP_ENDPOINT, with token counts."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from toolkit.record.run_log import Run
    from toolkit.testing.loopback_server import FakeOpenAIServer
    from toolkit.werewolf.game import GameConfig, play_game

    got = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers["Content-Length"]))
            request = ExportTraceServiceRequest.FromString(body)
            got.extend(s for r in request.resource_spans for ss in r.scope_spans for s in ss.spans)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    monkeypatch.setenv("TOOLKIT_OTLP_ENDPOINT", f"http://127.0.0.1:{receiver.server_address[1]}")
    try:
        with FakeOpenAIServer(seed=2) as server:
            with Run(tmp_path) as run:
                asyncio.run(play_game(GameConfig(seed=5, model=f"openai:det@{server.base_url}", max_days=2), run))
    finally:
        receiver.shutdown()
    results = load(tmp_path)
    chats = [s for s in got if s.name.startswith("chat ")]
    assert len(chats) == len(results.calls)
    assert len([s for s in got if s.name.startswith("invoke_agent ")]) == results.calls["seat"].nunique()
    tokens = sum(a.value.int_value for s in chats for a in s.attributes if a.key == "gen_ai.usage.input_tokens")
    assert tokens == results.calls["prompt_tokens"].sum()
