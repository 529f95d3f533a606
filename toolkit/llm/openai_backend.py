"""Any OpenAI-compatible endpoint over HTTP: ``openai:MODEL`` (key and URL from ``OPENAI_API_KEY``/
``OPENAI_BASE_URL``) or ``openai:MODEL@http://HOST:PORT/v1``.

Only the transport lives here: one aiohttp session per endpoint and event loop (a keep-alive pool as large as
the gate may let through), the request body, and the classification of failures into transient (retried by
the model wrapper) and final ones. The request is the chat completions API as the ``openai`` SDK sends it
(``POST {base_url}/chat/completions``, a Bearer key, JSON both ways), written directly: the SDK's typed request
and response layers cost ~1.5 ms of CPU a call (issue 42), where the request itself costs ~0.3 ms.
Structured output goes as ``response_format: json_schema``; an endpoint that rejects it gets the schema in the
prompt instead, once and for the rest of the process. Native tool calls come back as they were sent (the agent
parses them).
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import email.utils
import json
import math
import os
import weakref
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import aiohttp

from toolkit.core.files import one_line
from toolkit.llm.keys import DEFAULT_ENDPOINT, is_local, key_rule, key_setting
from toolkit.llm.model import ModelConfig, mask_url
from toolkit.llm.backend import Backend
from toolkit.llm.limits import Told
from toolkit.llm.prices import output_tokens
from toolkit.llm.request import SCHEMA_REFUSED, Completion, LLMError, Request, TransientError

try:  # a core dependency; an environment installed before it was one sends the same body through json
    import orjson
except ImportError:  # pragma: no cover
    orjson = None

# Endpoints that refused response_format=json_schema: from then on the schema goes in the prompt.
_SCHEMA_IN_PROMPT: set[str] = set()
# Per event loop: {(endpoint, key, ...): session}. Connections belong to a loop.
_CLIENTS: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict]" = weakref.WeakKeyDictionary()
_CHUNK = 64 * 1024


async def _close_at_loop_end(sessions: list) -> Any:
    """An async generator the event loop closes when it shuts down (``asyncio.run`` does), so every
    session's connections are closed cleanly however the caller ends its loop."""
    try:
        yield
    finally:
        for session in sessions:
            await session.close()


async def _session(config: ModelConfig) -> aiohttp.ClientSession:
    """The loop's session for these settings (one pool of keep-alive connections, as many as the gate may let
    through: past a smaller pool every request would pay for a new connection)."""
    loop = asyncio.get_running_loop()
    sessions = _CLIENTS.get(loop)
    if sessions is None:
        opened: list = []
        closer = _close_at_loop_end(opened)
        await closer.__anext__()  # registered with the loop's async-generator hooks from here on
        sessions = _CLIENTS[loop] = {"_closer": (closer, opened)}
    key = (config.timeout_s, config.max_connections)
    if key not in sessions:
        # Bodies come uncompressed (a compressed body's size says nothing about what it unpacks to): asked for
        # with Accept-Encoding: identity, and nothing is unpacked.
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=config.max_connections, limit_per_host=0),
            timeout=aiohttp.ClientTimeout(total=config.timeout_s), auto_decompress=False,
            trust_env=_proxied())
        sessions["_closer"][1].append(session)
        sessions[key] = session
    return sessions[key]


def _proxied() -> bool:
    """A proxy is set in the environment (HTTPS_PROXY and the like): aiohttp honours it only when told to, and
    then looks the proxy up in a thread for every request (two thread hops, ~0.1 ms), so only then."""
    return any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy",
                                                 "ALL_PROXY", "all_proxy"))


def _json_bytes(payload: dict[str, Any]) -> bytes:
    """The request body: orjson's bytes (~15 times faster than json for a prompt's body), json's where orjson is
    missing or refuses a value (an int past 64 bits)."""
    if orjson is not None:
        try:
            return orjson.dumps(payload)
        except orjson.JSONEncodeError:
            pass
    return json.dumps(payload, ensure_ascii=False).encode()


class TooLarge(Exception):
    """A response body over the size cap (raised while it is read, so nothing past the cap is kept)."""


async def _read(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The body, refused (``TooLarge``) as soon as it declares or brings more than ``limit`` bytes, or comes
    compressed (its unpacked size cannot be bounded)."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"response of {declared} bytes, over the cap of {limit} (TOOLKIT_MAX_RESPONSE_BYTES)")
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise TooLarge(f"response compressed as {encoding!r} though an uncompressed one was asked for "
                       "(its unpacked size cannot be bounded)")
    if declared.isdigit():
        return await response.content.readexactly(int(declared)) if int(declared) else b""
    chunks, seen = [], 0
    async for chunk in response.content.iter_chunked(_CHUNK):
        seen += len(chunk)
        if seen > limit:
            raise TooLarge(f"response larger than {limit} bytes (TOOLKIT_MAX_RESPONSE_BYTES)")
        chunks.append(chunk)
    return b"".join(chunks)


def _retry_after(headers: Any) -> float | None:
    """Seconds a ``Retry-After`` asks for: a number of seconds, or an HTTP date (RFC 9110), 0 for one past; None
    for a value that is neither, negative or not finite (``-5``, ``nan``), so the usual backoff applies."""
    try:
        value = headers.get("Retry-After")
    except AttributeError:
        return None
    if value is None:
        return None
    value = str(value).strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        return max(0.0, (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds())
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


_RATE_HEADERS = ("x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-limit-tokens",
                 "x-ratelimit-remaining-tokens")


def _told(headers: Any) -> Told | None:
    """What an answer's ``x-ratelimit-*`` headers say of the endpoint's limits, as OpenAI and the providers that
    copy it send them (``limits.Told``: counts); None without any. A value that does not parse is left unsaid."""
    try:
        values = [headers.get(name) for name in _RATE_HEADERS]
    except AttributeError:
        return None
    if not any(values):
        return None
    return Told(*map(_number, values))


def _number(value: str | None) -> float | None:
    try:
        number = float(value) if value is not None else None
    except ValueError:
        return None
    return number if number is not None and math.isfinite(number) and number >= 0 else None


def _refused(exc: BaseException) -> bool:
    """True when nothing listens at the address (not a dropped or reset connection)."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, ConnectionRefusedError) or "Connect call failed" in str(exc):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def split_credentials(url: str) -> tuple[str, dict[str, str] | None]:
    """``http://user:pw@host/v1`` → (``http://host/v1``, a Basic ``Authorization`` header)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    netloc = parts.netloc.rsplit("@", 1)[1]  # the host as written (IPv6 brackets kept)
    token = base64.b64encode(f"{unquote(parts.username or '')}:{unquote(parts.password or '')}".encode()).decode()
    return urlunsplit(parts._replace(netloc=netloc)), {"Authorization": f"Basic {token}"}


def tool_name(name: str) -> str:
    """OpenAI function names allow [A-Za-z0-9_-]: ``Editor.open_file`` travels as ``Editor__open_file``."""
    return name.replace(".", "__")


def schema_instruction(schema: dict[str, Any]) -> str:
    return ("Reply with one JSON object and nothing else. It must match this JSON schema:\n"
            + json.dumps(schema, ensure_ascii=False))


class OpenAIBackend(Backend):
    cacheable = True
    accepts_params = True

    def __init__(self, model: str, base_url: str | None = None, *, config: ModelConfig | None = None,
                 api_key: str | None = None):
        self.model = model
        url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_ENDPOINT
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"openai:{model}@{mask_url(url)}: the base URL must look like http://HOST:PORT/v1")
        # user:password@ in the URL: it travels as a Basic Authorization header (the SDK's transport refuses
        # credentials in the URL) and never appears in a record.
        self.base_url, self._headers = split_credentials(url)
        self.config = config or ModelConfig.from_env()
        setting = key_setting(self.base_url)
        key = api_key or os.environ.get(setting)
        if not key and not self._headers and not is_local(self.base_url):
            raise ValueError(f"openai:{model} at {mask_url(self.base_url)} needs an API key: set {setting} "
                             f"({key_rule()}; servers on loopback or a private network need none)")
        self._api_key = key or "no-key"  # local servers accept any key
        # where the credential sent came from, for a 401's hint (the review s19 saw OPENAI_API_KEY named for a key
        # taken from TOOLKIT_KEY_127_0_0_1)
        self._key_hint = ("check the user:password in the base URL" if self._headers else "check the api_key given"
                          if api_key else f"check {setting}" if key else f"no key was sent: set {setting}")
        self.extra_body: dict[str, Any] = {}  # server-specific request fields (llama.cpp's cache_prompt)
        self._url = self.base_url.rstrip("/") + "/chat/completions"
        # The headers the SDK sends (a Basic Authorization from the URL replaces the Bearer key); uncompressed.
        self._request_headers = {"Authorization": f"Bearer {self._api_key}", "Content-Type": "application/json",
                                 "Accept": "application/json", "Accept-Encoding": "identity",
                                 "User-Agent": "llm-agent-toolkit", **(self._headers or {})}

    @property
    def endpoint(self) -> str:
        return mask_url(self.base_url)

    async def complete(self, request: Request) -> Completion:
        session = await _session(self.config)
        payload: dict[str, Any] = {"model": self.model}
        s = request.sampling
        for name in ("temperature", "max_tokens", "seed"):
            if getattr(s, name) is not None:
                payload[name] = getattr(s, name)
        if "max_tokens" not in payload and self.config.max_tokens and not {"max_tokens", "max_completion_tokens"} \
                & set(self.params):
            payload["max_tokens"] = self.config.max_tokens
        body = self._body(request)
        payload.update(body)  # the spec's parameters win over the run's sampling settings
        try:
            async with session.post(self._url, data=_json_bytes(payload), headers=self._request_headers) as response:
                status = response.status
                content = await _read(response, self.config.max_response_bytes)
                headers = response.headers
        except TooLarge as exc:
            raise TransientError(str(exc), kind="too_large") from exc
        except asyncio.TimeoutError as exc:  # aiohttp's whole-request deadline (the model wrapper has its own)
            raise TransientError(f"timed out after {self.config.timeout_s:g}s", kind="timeout") from exc
        except (aiohttp.ClientError, OSError, asyncio.IncompleteReadError) as exc:
            if _refused(exc):
                raise TransientError(f"connection refused: {one_line(exc, 200)}", kind="refused") from exc
            raise TransientError(f"connection error: {one_line(exc, 200)}", kind="connection") from exc
        if status >= 400:
            return await self._refusal(request, status, content, headers, body)
        try:
            response = json.loads(content)
        except ValueError as exc:  # a 200 whose body is not JSON
            raise TransientError(f"malformed response body: {one_line(exc, 200)}", kind="malformed") from exc
        try:
            completion = self._completion(response)
        except LLMError as exc:  # no answer, but its usage may say it was billed (a filtered answer)
            exc.billed = _billed(response)
            raise
        completion.told = _told(headers)
        return completion

    async def _refusal(self, request: Request, status: int, content: bytes, headers: Any,
                       body: dict[str, Any]) -> Completion:
        """An HTTP error status: 429 and 5xx are transient, a 400 against ``response_format`` puts the schema in
        the prompt for this endpoint (``SCHEMA_REFUSED``: the model wrapper records it and asks again), the rest
        are final (with a hint for the usual mistakes)."""
        said = _said(content, status)
        if status == 429:
            raise TransientError(f"429 rate limited: {said}", kind="rate_limit", status_code=429,
                                 retry_after=_retry_after(headers), told=_told(headers))
        if status >= 500:
            raise TransientError(f"{status} server error: {said}", kind="server_error", status_code=status,
                                 retry_after=_retry_after(headers))
        if (status == 400 and "response_format" in body
                and any(w in said.lower() for w in ("response_format", "json_schema", "schema"))):
            _SCHEMA_IN_PROMPT.add(self.base_url)  # the model wrapper records this request and asks again at once
            raise LLMError(f"{self.model} at {self.endpoint}: HTTP 400 against response_format (asked again with "
                           f"the schema in the prompt): {said}", kind=SCHEMA_REFUSED, status_code=400)
        hint = {401: f" ({self._key_hint})", 403: " (check the key's permissions)",
                404: " (check the model name and base URL)"}.get(status, "")
        raise LLMError(f"{self.model} at {self.endpoint}: HTTP {status}{hint}: {said}", kind="http_error",
                       status_code=status)

    def _body(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = {**self.extra_body, **self.params, "messages": request.messages}
        if request.tools:
            body["tools"] = [{"type": "function", "function": {
                "name": tool_name(t["name"]), "description": t.get("description", ""),
                "parameters": t.get("parameters", {"type": "object"})}} for t in request.tools]
        elif request.schema is not None:
            if self.base_url in _SCHEMA_IN_PROMPT:
                body["messages"] = [{"role": "system", "content": schema_instruction(request.schema)},
                                    *request.messages]
            else:
                body["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": request.schema_name, "schema": request.schema}}
        return body

    def _completion(self, response: Any) -> Completion:
        """The answer, checked against the chat completion schema before anything uses it: a body of any
        other shape is a failed attempt (``malformed``), never an exception in a game or a session."""
        choices = response.get("choices") if isinstance(response, dict) else None
        message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(
            choices[0], dict) else None
        if not isinstance(message, dict):
            raise _malformed(f"no choices[0].message ({one_line(response, 80)})")
        text = message.get("content")
        if text is not None and not isinstance(text, str):
            raise _malformed(f"message.content is {_kind(text)}, not a string")
        raw_calls = message.get("tool_calls")
        if raw_calls is not None and not isinstance(raw_calls, list):
            raise _malformed(f"message.tool_calls is {_kind(raw_calls)}, not a list")
        if raw_calls and len(raw_calls) > self.config.max_tool_calls:
            raise TransientError(f"{len(raw_calls)} tool calls in one answer, over the cap of "
                                 f"{self.config.max_tool_calls} (TOOLKIT_MAX_TOOL_CALLS)", kind="too_many_tool_calls")
        tool_calls = [_tool_call(c, i) for i, c in enumerate(raw_calls or [])] or None
        usage = response.get("usage")
        if usage is not None and not isinstance(usage, dict):
            raise _malformed(f"usage is {_kind(usage)}, not an object")
        usage = usage or {}
        prompt_tokens = _count(usage, "prompt_tokens")
        completion_tokens = _count(usage, "completion_tokens")
        details = usage.get("prompt_tokens_details")
        cached = _count(details, "prompt_tokens_details.cached_tokens", "cached_tokens") if isinstance(
            details, dict) else None
        out_details = usage.get("completion_tokens_details")
        reasoning_tokens = _count(out_details, "completion_tokens_details.reasoning_tokens", "reasoning_tokens") \
            if isinstance(out_details, dict) else None
        finish = choices[0].get("finish_reason")
        reasoning = message.get("reasoning_content", message.get("reasoning"))
        return Completion(
            text=text or "", model=self.model, base_url=self.base_url, prompt_tokens=prompt_tokens,
            completion_tokens=(completion_tokens or 0) if prompt_tokens is not None else None,
            cached_tokens=min(cached or 0, prompt_tokens or 0), tool_calls=tool_calls,
            finish_reason=one_line(finish, 40) if isinstance(finish, str) else None,
            reasoning_tokens=reasoning_tokens, reasoning=reasoning if isinstance(reasoning, str) else None)


MAX_TOKENS_REPORTED = 10**8  # more tokens than any context holds: a server reporting it is not to be believed


def _billed(response: Any) -> tuple[int, int] | None:
    """The tokens a body that is no answer says were billed (prompt, output with reasoning), or None."""
    usage = response.get("usage") if isinstance(response, dict) else None
    try:
        prompt = _count(usage, "prompt_tokens") if isinstance(usage, dict) else None
        if prompt is None:
            return None
        details = usage.get("completion_tokens_details")
        reasoning = _count(details, "reasoning_tokens") if isinstance(details, dict) else None
        return prompt, output_tokens(_count(usage, "completion_tokens") or 0, reasoning)
    except LLMError:  # a usage block that is no count either: nothing known
        return None


def _malformed(what: str) -> TransientError:
    return TransientError(f"malformed response body: {what}", kind="malformed")


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _said(content: bytes, status: int) -> str:
    """What a server said in an error (its ``error.message`` where the body is OpenAI's error object, else the
    body), as one printable line (it may hold escape sequences or a page)."""
    text = content.decode("utf-8", "replace").strip()
    try:
        error = json.loads(text).get("error")
        message = error.get("message") if isinstance(error, dict) else error
        if isinstance(message, str) and message:
            text = message
    except (ValueError, AttributeError):
        pass
    return one_line(text or f"HTTP {status}", 300)


def _tool_call(call: Any, i: int) -> dict[str, str]:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        raise _malformed(f"tool_calls[{i}] is {_kind(call)} without a function object")
    name, arguments = function.get("name"), function.get("arguments")
    if not isinstance(name, str) or not name:
        raise _malformed(f"tool_calls[{i}].function.name is {_kind(name)}, not a name")
    if arguments is not None and not isinstance(arguments, str):
        raise _malformed(f"tool_calls[{i}].function.arguments is {_kind(arguments)}, not JSON text")
    return {"name": name.replace("__", "."), "arguments": arguments or "{}"}


def _count(usage: dict[str, Any], what: str, key: str | None = None) -> int | None:
    """A token count of the usage object: absent or null is unknown (None); anything but a whole number
    from 0 to ``MAX_TOKENS_REPORTED`` is a malformed body (a negative count would make costs negative)."""
    value = usage.get(key or what)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS_REPORTED:
        raise _malformed(f"usage.{what} is {one_line(json.dumps(value), 40)}, not a token count")
    return value
