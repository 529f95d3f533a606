"""A loopback OpenAI-compatible server for tests and benchmarks. It is a test double, not a model.

It speaks ``POST /v1/chat/completions`` and ``GET /v1/models`` over real HTTP. The requested model name
picks the behaviour, so one server serves every test:

- ``ok`` (or anything else): an instant answer. With ``response_format: json_schema`` the answer is a
  JSON object sampled from the schema (legal by construction); otherwise the text ``ok``.
- ``slow:SECONDS``: the same after a delay.      - ``nousage``: no ``usage`` field.
- ``429`` / ``429:RETRY_AFTER``: rate limited.   - ``500``: a server error.   - ``401``, ``404``, ``400``.
- ``malformed``: a 200 with a body that is not JSON.   - ``hang``: never answers (until shutdown).
- ``reset``: drops the connection.   - ``noschema``: rejects ``response_format`` with a 400.
- ``faults:RATE``: at RATE a random fault (429 with Retry-After 0, 500, hang, reset, malformed),
  otherwise ``ok``. Seeded, and every request's outcome is kept in ``server.log``.
- ``say``: the next text queued with ``server.say(...)``.
- ``toolcall``: with ``tools`` in the request, a native tool call of the first tool (arguments sampled
  from its parameters), then a call of ``end`` on the next request.
- ``det``: like ``ok``, but the sampled answer is seeded by the request's messages, so the same request
  always gets the same answer whatever the order of arrival (golden-table tests).
- ``queue``: the next behaviour queued with ``server.queue(...)`` (``ok`` when none is left), e.g.
  ``server.queue("429:1", "ok")`` for one rate limit with ``Retry-After: 1`` and then an answer.
- ``stormy``: ``det``, but during a rate-limit storm (``server.storm(SECONDS, after=N, retry_after=R)``: from the
  N-th ``stormy`` request on, for SECONDS) a 429 with ``Retry-After: R``, as a provider's limit hits a study;
  ``server.stormed`` counts the 429s sent.

A reasoning model (what reasoning endpoints do differently):

- ``reason:RATE:TOKENS`` (both optional; 0 and 256 by default): the ``ok`` answer after ``TOKENS`` hidden
  reasoning tokens, reported as ``usage.completion_tokens_details.reasoning_tokens`` and counted inside
  ``completion_tokens`` (OpenAI's convention), with the reasoning text in ``message.reasoning_content``; at
  RATE (seeded) the answer is cut at the token limit instead: ``finish_reason: "length"`` and the first half of
  the text (a JSON object missing its end). The request body's ``reasoning_effort`` scales the tokens
  (low ×0.25, medium ×1, high ×4).

Server-wide settings, for benchmarks of concurrency (``FakeOpenAIServer(latency=, capacity=)``, or
``--latency`` and ``--capacity`` on the command line): ``latency`` seconds before every answer (a model's
time to answer), and ``capacity``: a request beyond that many in flight gets a 429 with ``Retry-After:
retry_after`` (a provider's concurrency limit); ``server.rejected`` counts them. ``rpm`` (``--rpm``): requests per
minute, enforced as providers do: a token bucket refilled continuously that holds one second of the rate; a
request finding it empty gets a 429 whose ``Retry-After`` is the time to the next token (``server.rejected``
counts them too, ``server.accepted`` the requests let through). ``ratelimit_headers=True``
(``--ratelimit-headers``): every answer, 429s too, says the rpm limit as OpenAI does:
``x-ratelimit-limit-requests`` (the rpm), ``x-ratelimit-remaining-requests`` (whole requests left in the bucket)
and ``x-ratelimit-reset-requests`` (until the bucket is full again, as ``350ms`` or ``1.5s``); nothing of the
concurrency limit (no provider says it).

Hostile behaviours (a server that misbehaves on purpose):

- ``endless``: a 200 whose chunked body never ends.   - ``drip:SECONDS``: an answer sent one byte every
  SECONDS (0.5 by default): never idle, never done.   - ``huge``: a 200 declaring a 10 GB body.
- ``badcontent``: ``message.content`` is an object.   - ``badtools``: ``tool_calls`` entries are not objects.
- ``manytools``: 1000 tool calls in one answer.   - ``strusage``: token counts as strings.
- ``negusage``: −10¹² prompt tokens.   - ``escape``: an HTTP 400 whose message holds terminal escape
  sequences (clear screen, a fake green line, a window title) and a line break.
- ``echo``: an answer whose every string ends with the credentials the client sent (the Authorization header,
  a Basic one's ``user:password`` decoded); ``echo:error``: an HTTP 400 whose message echoes them.

``server.headers`` keeps every request's headers, names lower-cased (to check which key went where).

``server.max_active`` is the most requests it was handling at once (to check concurrency caps).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import socket
import struct
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from toolkit.llm.offline import sample_from_schema


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in two writes; no 40 ms delayed-ACK stall
    server: "FakeOpenAIServer._Server"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        owner = self.server.owner
        told = owner.told() if owner.ratelimit_headers and owner.rpm else {}
        for k, v in {**told, **(headers or {})}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._send(status, {"error": {"message": message, "type": "test", "code": status}}, headers)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "ok", "object": "model"}]})
        else:
            self._error(404, "not found")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        owner = self.server.owner
        behaviour = owner.pick(str(body.get("model", "ok")))
        owner.record(behaviour, body, {k.lower(): v for k, v in self.headers.items()})
        with owner.lock:
            over = owner.capacity is not None and owner.active >= owner.capacity
            wait = None if over else owner.rate_wait()
            if over or wait:
                owner.rejected += 1
            else:
                owner.active += 1
                owner.accepted += 1
                owner.max_active = max(owner.max_active, owner.active)
        if over:
            return self._error(429, "too many requests in flight", {"Retry-After": f"{owner.retry_after:g}"})
        if wait:
            return self._error(429, "requests per minute exceeded", {"Retry-After": f"{wait:.3f}"})
        try:
            if owner.latency:
                time.sleep(owner.latency)
            self._behave(behaviour, body)
        finally:
            with owner.lock:
                owner.active -= 1

    def _behave(self, behaviour: str, body: dict[str, Any]) -> None:
        owner = self.server.owner
        kind, _, arg = behaviour.partition(":")
        if kind == "slow":
            time.sleep(float(arg or 0.2))
        if kind == "hang":
            owner.stopping.wait(600)
            return
        if kind == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if kind == "429":
            return self._error(429, "rate limited", {"Retry-After": arg or "0"})
        if kind in ("500", "401", "404", "400"):
            return self._error(int(kind), f"injected {kind}")
        if kind == "malformed":
            return self._send(200, b"{this is not json")
        if kind in HOSTILE:
            return HOSTILE[kind](self, arg, body)
        if kind == "noschema" and "response_format" in body:
            return self._error(400, "response_format json_schema is not supported by this server")
        if kind == "reason":
            return self._send(200, owner.reasoned(body, arg))
        self._send(200, owner.answer(body, usage=kind != "nousage", say=kind == "say"))


def _endless(handler: _Handler, arg: str, body: dict[str, Any]) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    chunk = b" " * 65536
    try:
        handler.wfile.write(b'%x\r\n{"choices": [\r\n' % len(b'{"choices": ['))
        while not handler.server.owner.stopping.is_set():
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    except OSError:  # the client hung up
        pass
    handler.close_connection = True


def _drip(handler: _Handler, arg: str, body: dict[str, Any]) -> None:
    data = json.dumps(handler.server.owner.answer(body, usage=True, say=False)).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    try:
        for i in range(len(data)):
            if handler.server.owner.stopping.wait(float(arg or 0.5)):
                break
            handler.wfile.write(data[i:i + 1])
            handler.wfile.flush()
    except OSError:
        pass
    handler.close_connection = True


def _huge(handler: _Handler, arg: str, body: dict[str, Any]) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(10 * 2**30))
    handler.end_headers()
    try:
        handler.wfile.write(b'{"choices": [')
    except OSError:
        pass
    handler.close_connection = True


def _reshaped(change):
    """A behaviour that sends a normal answer with ``change(answer)`` applied."""

    def behave(handler: _Handler, arg: str, body: dict[str, Any]) -> None:
        out = handler.server.owner.answer(body, usage=True, say=False)
        change(out)
        handler._send(200, out)

    return behave


def _message(out: dict[str, Any]) -> dict[str, Any]:
    return out["choices"][0]["message"]


def _many_tools(out: dict[str, Any]) -> None:
    _message(out)["tool_calls"] = [{"id": f"c{i}", "type": "function",
                                    "function": {"name": "end", "arguments": "{}"}} for i in range(1000)]


def _credentials(handler: _Handler) -> str:
    """What the client sent to authenticate, as a careless server would log or echo it: the Authorization
    header, and a Basic header's user:password decoded."""
    auth = handler.headers.get("Authorization", "")
    kind, _, value = auth.partition(" ")
    decoded = ""
    if kind.lower() == "basic":
        try:
            decoded = base64.b64decode(value).decode("utf-8", "replace")
        except ValueError:
            decoded = "?"
    return f"you sent {decoded} ({auth})"


def _echo(handler: _Handler, arg: str, body: dict[str, Any]) -> None:
    said = _credentials(handler)
    if arg == "error":
        return handler._error(400, f"bad request: {said}")
    out = handler.server.owner.answer(body, usage=True, say=False)
    message = _message(out)
    try:  # a JSON answer: every string in it replaced, so it is still legal for a schema of strings
        data = json.loads(message["content"])
    except ValueError:
        data = None
    if isinstance(data, dict):
        message["content"] = json.dumps({k: f"{v} {said}" if isinstance(v, str) else v for k, v in data.items()})
    else:
        message["content"] = f"{message['content']} {said}"
    handler._send(200, out)


ESCAPE_TEXT = "\x1b[2J\x1b[H\x1b[32mAll checks passed\x1b[0m\x1b]0;pwned\x07\nsecond line"

HOSTILE = {
    "endless": _endless, "drip": _drip, "huge": _huge,
    "badcontent": _reshaped(lambda out: _message(out).update(content={"text": "not a string"})),
    "badtools": _reshaped(lambda out: _message(out).update(tool_calls=["not an object", 3])),
    "manytools": _reshaped(_many_tools),
    "emptychoices": _reshaped(lambda out: out.update(choices=[])),  # a gateway's filtered answer: billed, no answer
    "strusage": _reshaped(lambda out: out["usage"].update(prompt_tokens="12", completion_tokens="3")),
    "negusage": _reshaped(lambda out: out["usage"].update(prompt_tokens=-10**12, completion_tokens=-5)),
    "escape": lambda handler, arg, body: handler._error(400, ESCAPE_TEXT),
    "echo": _echo,
}


class FakeOpenAIServer:
    """``with FakeOpenAIServer() as server: server.base_url`` → ``http://127.0.0.1:PORT/v1``."""

    class _Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 1024  # the default 5 drops bursts of new connections (1 s SYN retries)
        owner: "FakeOpenAIServer"

    def __init__(self, seed: int = 0, port: int = 0, latency: float = 0.0, capacity: int | None = None,
                 retry_after: float = 1.0, rpm: float | None = None, ratelimit_headers: bool = False):
        self.rng = random.Random(seed)
        self.ratelimit_headers = ratelimit_headers
        self.latency, self.capacity, self.retry_after, self.rpm = latency, capacity, retry_after, rpm
        self.rejected = 0
        self.accepted = 0
        self._bucket, self._stamp = (max(1.0, rpm / 60) if rpm else 0.0), time.monotonic()
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.log: list[tuple[str, str]] = []  # (requested model, behaviour chosen)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._said: list[str] = []
        self._queued: list[str] = []
        self.active = 0
        self.max_active = 0
        self.httpd = self._Server(("127.0.0.1", port), _Handler)
        self.httpd.owner = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)  # quick to stop

    def _refill(self, now: float | None = None) -> float:
        """Under ``self.lock``: the rpm bucket refilled to ``now``; the rate a second."""
        now = time.monotonic() if now is None else now
        rate = self.rpm / 60
        self._bucket = min(max(1.0, rate), self._bucket + (now - self._stamp) * rate)
        self._stamp = now
        return rate

    def told(self) -> dict[str, str]:
        """The ``x-ratelimit-*-requests`` headers, as OpenAI sends them, from the bucket as it is now."""
        with self.lock:  # the bucket read once, as it is now: another request may take from it right after
            rate = self._refill()
            left = self._bucket
        full = (max(1.0, rate) - left) / rate
        return {"x-ratelimit-limit-requests": f"{self.rpm:g}",
                "x-ratelimit-remaining-requests": str(int(left)),
                "x-ratelimit-reset-requests": f"{full * 1000:.0f}ms" if full < 1 else f"{full:.3g}s"}

    def rate_wait(self, now: float | None = None) -> float:
        """Under ``self.lock``: 0 and one request taken from the rpm bucket, or the seconds to the next one."""
        if not self.rpm:
            return 0.0
        rate = self._refill(now)
        if self._bucket < 1:
            return (1 - self._bucket) / rate
        self._bucket -= 1
        return 0.0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def say(self, *texts: str) -> None:
        with self.lock:
            self._said.extend(texts)

    def queue(self, *behaviours: str) -> None:
        with self.lock:
            self._queued.extend(behaviours)

    def pick(self, model: str) -> str:
        kind, _, arg = model.partition(":")
        if kind == "queue":
            with self.lock:
                return self._queued.pop(0) if self._queued else "ok"
        if kind == "stormy":
            return self._stormy()
        if kind != "faults":
            return model
        with self.lock:
            if self.rng.random() < float(arg or 0.3):
                return self.rng.choice(["429:0", "500", "hang", "reset", "malformed"])
        return "ok"

    def record(self, behaviour: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        with self.lock:
            self.log.append((str(body.get("model")), behaviour))
            self.requests.append(body)
            self.headers.append(headers or {})

    def answer(self, body: dict[str, Any], usage: bool, say: bool) -> dict[str, Any]:
        fmt = body.get("response_format") or {}
        if body.get("tools") and body.get("model") == "toolcall":
            return self._tool_call(body)
        if say:
            with self.lock:
                text = self._said.pop(0) if self._said else ""
        elif fmt.get("type") == "json_schema":
            schema = fmt["json_schema"]["schema"]
            if body.get("model") in ("det", "stormy"):
                digest = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()
                seed = int(digest[:12], 16)
            else:
                with self.lock:
                    seed = self.rng.random()
            text = json.dumps(sample_from_schema(schema, random.Random(seed)))
        else:
            text = "ok"
        prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
        out: dict[str, Any] = {
            "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
        }
        if usage:
            out["usage"] = {"prompt_tokens": max(1, prompt_chars // 4), "completion_tokens": max(1, len(text) // 4),
                            "total_tokens": max(1, prompt_chars // 4) + max(1, len(text) // 4)}
        return out

    def storm(self, seconds: float, after: int = 0, retry_after: float = 1.0) -> None:
        """A rate-limit storm for ``stormy`` requests: from the ``after``-th on, for ``seconds``."""
        with self.lock:
            self._storm = [seconds, after, retry_after, None]
            self.stormed, self._stormy_seen = 0, 0

    def _stormy(self) -> str:
        with self.lock:
            storm = getattr(self, "_storm", None)
            self._stormy_seen = getattr(self, "_stormy_seen", 0) + 1
            if storm is None or self._stormy_seen <= storm[1]:
                return "det"
            if storm[3] is None:
                storm[3] = time.monotonic() + storm[0]  # the storm starts now
            if time.monotonic() >= storm[3]:
                return "det"
            self.stormed += 1
            return f"429:{storm[2]:g}"

    EFFORT = {"minimal": 0.1, "low": 0.25, "medium": 1.0, "high": 4.0, "xhigh": 8.0}

    def reasoned(self, body: dict[str, Any], arg: str) -> dict[str, Any]:
        """The ``reason:RATE:TOKENS`` answer (see the module's docstring)."""
        rate, _, tokens = arg.partition(":")
        reasoning = int(int(tokens or 256) * self.EFFORT.get(str(body.get("reasoning_effort", "medium")), 1.0))
        out = self.answer({**body, "model": "ok"}, usage=True, say=False)
        out["model"] = body.get("model")
        choice = out["choices"][0]
        with self.lock:
            cut = self.rng.random() < float(rate or 0)
        if cut:
            text = choice["message"]["content"]
            choice["message"]["content"] = text[:len(text) // 2]
            choice["finish_reason"] = "length"
        choice["message"]["reasoning_content"] = "Hidden reasoning: weighing every seat's claims. " * 3
        out["usage"]["completion_tokens"] += reasoning
        out["usage"]["total_tokens"] += reasoning
        out["usage"]["completion_tokens_details"] = {"reasoning_tokens": reasoning}
        return out

    def _tool_call(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self._tool_turns = getattr(self, "_tool_turns", 0) + 1
            turn = self._tool_turns
        tools = body["tools"]
        fn = tools[0]["function"] if turn == 1 else next(t["function"] for t in tools if t["function"]["name"] == "end")
        args = sample_from_schema(fn.get("parameters", {"type": "object"}), random.Random(turn))
        call = {"id": f"call_{turn}", "type": "function",
                "function": {"name": fn["name"], "arguments": json.dumps(args)}}
        return {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "tool_calls",
                             "message": {"role": "assistant", "content": f"turn {turn}", "tool_calls": [call]}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

    def start(self) -> "FakeOpenAIServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve_in_subprocess(seed: int = 0, latency: float = 0.0, capacity: int | None = None,
                        retry_after: float = 1.0, rpm: float | None = None):
    """Start the test server in its own process (so its work does not share our GIL); returns
    ``(process, base_url)``. The caller terminates the process."""

    extra = ["--latency", str(latency), "--retry-after", str(retry_after)]
    if capacity is not None:
        extra += ["--capacity", str(capacity)]
    if rpm is not None:
        extra += ["--rpm", str(rpm)]
    proc = subprocess.Popen([sys.executable, "-m", "toolkit.testing.loopback_server", "--seed", str(seed), *extra],
                            stdout=subprocess.PIPE, text=True)
    base_url = proc.stdout.readline().strip()
    if not base_url.startswith("http"):
        proc.kill()
        raise RuntimeError("the test server did not start")
    return proc, base_url


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="loopback OpenAI-compatible test server (not a model)")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before every answer")
    parser.add_argument("--capacity", type=int, help="requests in flight beyond this get a 429")
    parser.add_argument("--retry-after", type=float, default=1.0, help="the Retry-After of those 429s")
    parser.add_argument("--rpm", type=float, help="requests per minute beyond which a request gets a 429")
    parser.add_argument("--ratelimit-headers", action="store_true",
                        help="say the rpm limit in x-ratelimit-* headers, as OpenAI does")
    args = parser.parse_args()
    server = FakeOpenAIServer(seed=args.seed, port=args.port, latency=args.latency, capacity=args.capacity,
                              retry_after=args.retry_after, rpm=args.rpm, ratelimit_headers=args.ratelimit_headers)
    print(server.base_url, flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
