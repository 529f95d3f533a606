"""Any OpenAI-compatible endpoint through the official ``openai`` SDK: ``openai:MODEL`` (key and URL from
``OPENAI_API_KEY``/``OPENAI_BASE_URL``) or ``openai:MODEL@http://HOST:PORT/v1``.

Only the transport lives here: one ``AsyncOpenAI`` client per endpoint and event loop (aiohttp, the SDK's
documented choice for high concurrency), the request body, and the classification of failures into
transient (retried by the model wrapper) and final ones. Structured output goes as ``response_format:
json_schema``; an endpoint that rejects it gets the schema in the prompt instead, once and for the rest of
the process. Native tool calls come back as they were sent (the agent parses them).
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import json
import os
import weakref
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import openai

from toolkit.llm.model import ModelConfig, mask_url
from toolkit.llm.backend import Backend
from toolkit.llm.request import Completion, LLMError, Request, TransientError

DEFAULT_ENDPOINT = "https://api.openai.com/v1"
# Endpoints that refused response_format=json_schema: from then on the schema goes in the prompt.
_SCHEMA_IN_PROMPT: set[str] = set()
# Per event loop: {(endpoint, key): client}. Connections belong to a loop.
_CLIENTS: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict]" = weakref.WeakKeyDictionary()


async def _close_at_loop_end(clients: list) -> Any:
    """An async generator the event loop closes when it shuts down (``asyncio.run`` does), so every
    client's connections are closed cleanly however the caller ends its loop."""
    try:
        yield
    finally:
        for client in clients:
            await client.close()


async def _client(base_url: str, api_key: str, timeout_s: float,
                  headers: dict[str, str] | None = None) -> openai.AsyncOpenAI:
    loop = asyncio.get_running_loop()
    clients = _CLIENTS.get(loop)
    if clients is None:
        opened: list = []
        closer = _close_at_loop_end(opened)
        await closer.__anext__()  # registered with the loop's async-generator hooks from here on
        clients = _CLIENTS[loop] = {"_closer": (closer, opened)}
    key = (base_url, api_key, tuple(sorted((headers or {}).items())))
    if key not in clients:
        client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s,
                                    default_headers=headers, http_client=_http_client(timeout_s))
        clients["_closer"][1].append(client)
        clients[key] = client
    return clients[key]


def _http_client(timeout_s: float):
    """aiohttp as the SDK's transport (the default httpx pool scans every connection per request); the
    SDK's default where aiohttp is not installed."""
    try:
        return openai.DefaultAioHttpClient(timeout=timeout_s)
    except (RuntimeError, ImportError, AttributeError):
        return None


def _retry_after(exc: openai.APIStatusError) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, ValueError):
        return None


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


def _root(exc: BaseException) -> BaseException:
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__
    return exc


def is_local(url: str) -> bool:
    """Loopback or private-network hosts: servers there (llama.cpp, vLLM, Ollama) need no key."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private


def tool_name(name: str) -> str:
    """OpenAI function names allow [A-Za-z0-9_-]: ``Editor.open_file`` travels as ``Editor__open_file``."""
    return name.replace(".", "__")


def schema_instruction(schema: dict[str, Any]) -> str:
    return ("Reply with one JSON object and nothing else. It must match this JSON schema:\n"
            + json.dumps(schema, ensure_ascii=False))


class OpenAIBackend(Backend):
    cacheable = True

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
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key and not self._headers and not is_local(self.base_url):
            raise ValueError(f"openai:{model} at {mask_url(self.base_url)} needs an API key: set OPENAI_API_KEY "
                             "(servers on loopback or a private network need none)")
        self._api_key = key or "no-key"  # local servers accept any key
        self.extra_body: dict[str, Any] = {}  # server-specific request fields (llama.cpp's cache_prompt)

    @property
    def endpoint(self) -> str:
        return mask_url(self.base_url)

    async def complete(self, request: Request) -> Completion:
        client = await _client(self.base_url, self._api_key, self.config.timeout_s, self._headers)
        body = self._body(request)
        kwargs: dict[str, Any] = {}
        s = request.sampling
        for name in ("temperature", "max_tokens", "seed"):
            if getattr(s, name) is not None:
                kwargs[name] = getattr(s, name)
        if "max_tokens" not in kwargs and self.config.max_tokens:
            kwargs["max_tokens"] = self.config.max_tokens
        try:
            # The body is already plain JSON, so it goes as the SDK's documented pass-through ``extra_body``
            # (same bytes on the wire; the typed transform costs ~0.7 ms a call), and with_raw_response skips
            # the SDK's model construction (~0.5 ms).
            raw = await client.chat.completions.with_raw_response.create(model=self.model, messages=[],
                                                                          extra_body=body, **kwargs)
        except openai.RateLimitError as exc:
            raise TransientError(f"429 rate limited: {exc.message}", kind="rate_limit", status_code=429,
                                 retry_after=_retry_after(exc)) from exc
        except openai.APIConnectionError as exc:  # the SDK reports a refused connection as a timeout too
            if _refused(exc):
                raise TransientError(f"connection refused: {_root(exc)}", kind="refused") from exc
            if isinstance(exc, openai.APITimeoutError):
                raise TransientError(f"timed out after {self.config.timeout_s:g}s", kind="timeout") from exc
            raise TransientError(f"connection error: {exc}", kind="connection") from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500:
                raise TransientError(f"{exc.status_code} server error: {exc.message}", kind="server_error",
                                     status_code=exc.status_code, retry_after=_retry_after(exc)) from exc
            if (exc.status_code == 400 and "response_format" in body
                    and any(w in str(exc.message).lower() for w in ("response_format", "json_schema", "schema"))):
                _SCHEMA_IN_PROMPT.add(self.base_url)
                return await self.complete(request)
            hint = {401: " (check OPENAI_API_KEY)", 403: " (check the key's permissions)",
                    404: " (check the model name and base URL)"}.get(exc.status_code, "")
            raise LLMError(f"{self.model} at {self.endpoint}: HTTP {exc.status_code}{hint}: {exc.message}",
                           kind="http_error", status_code=exc.status_code) from exc
        except openai.APIResponseValidationError as exc:
            raise TransientError(f"malformed response body: {exc.message}", kind="malformed") from exc
        try:
            response = json.loads(raw.content)
        except ValueError as exc:  # a 200 whose body is not JSON
            raise TransientError(f"malformed response body: {exc}", kind="malformed") from exc
        return self._completion(response)

    def _body(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = {**self.extra_body, "messages": request.messages}
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
        try:
            message = response["choices"][0]["message"]
            text = message.get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise TransientError(f"malformed response body: no choices ({str(response)[:80]})",
                                 kind="malformed") from exc
        tool_calls = [{"name": str((c.get("function") or {}).get("name", "")).replace("__", "."),
                       "arguments": (c.get("function") or {}).get("arguments") or "{}"}
                      for c in message.get("tool_calls") or []] or None
        usage = response.get("usage") or {}
        prompt_tokens = usage.get("prompt_tokens")
        return Completion(
            text=text, model=self.model, base_url=self.base_url, prompt_tokens=prompt_tokens,
            completion_tokens=(usage.get("completion_tokens") or 0) if prompt_tokens is not None else None,
            cached_tokens=(usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0,
            tool_calls=tool_calls)
