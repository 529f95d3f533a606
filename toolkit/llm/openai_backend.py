"""Any OpenAI-compatible endpoint through the official ``openai`` SDK.

One ``AsyncOpenAI`` client and one concurrency cap per endpoint (per event loop), tenacity retries with
exponential backoff and jitter on 429 (honouring ``Retry-After``), 5xx, timeouts and dropped connections;
no retry on other 4xx. Structured output goes as ``response_format: json_schema``; an endpoint that
rejects it gets the schema in the prompt instead, once and for the rest of the process.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import weakref
from dataclasses import dataclass
from typing import Any

import openai
from tenacity import (AsyncRetrying, retry_if_exception, stop_after_attempt, stop_after_delay,
                      wait_exponential_jitter)

from toolkit.llm.base import Completion, LLMError, Request, TransientError, estimate_tokens, messages_text
from toolkit.llm.cache import ResponseCache, cache_key
from toolkit.llm.pricing import cost_usd


@dataclass
class OpenAIConfig:
    max_connections: int = 8
    timeout_s: float = 60.0
    max_attempts: int = 6
    max_total_wait_s: float = 120.0
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 20.0
    retry_after_cap_s: float = 60.0
    cache_dir: str | None = None
    max_tokens: int | None = None  # a default for requests that set none

    @classmethod
    def from_env(cls, **overrides: Any) -> "OpenAIConfig":
        env = {
            "max_connections": ("TOOLKIT_MAX_CONNECTIONS", int),
            "timeout_s": ("TOOLKIT_TIMEOUT_S", float),
            "max_attempts": ("TOOLKIT_MAX_ATTEMPTS", int),
            "cache_dir": ("TOOLKIT_CACHE_DIR", str),
        }
        values: dict[str, Any] = {}
        for name, (var, cast) in env.items():
            if os.environ.get(var):
                values[name] = cast(os.environ[var])
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


# Endpoints that refused response_format=json_schema: from then on the schema goes in the prompt.
_SCHEMA_IN_PROMPT: set[str] = set()
# Per event loop: {endpoint: (client, semaphore)}. httpx connections and asyncio semaphores belong to a loop.
_POOLS: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict]" = weakref.WeakKeyDictionary()


async def _close_at_loop_end(clients: list) -> Any:
    """An async generator the event loop closes when it shuts down (``asyncio.run`` does), so every
    client's connections are closed cleanly however the caller ends its loop."""
    try:
        yield
    finally:
        for client in clients:
            await client.close()


def split_credentials(url: str | None) -> tuple[str | None, dict[str, str] | None]:
    """``http://user:pw@host/v1`` → (``http://host/v1``, a Basic ``Authorization`` header): the credentials
    travel as a header (the SDK's transport refuses them in the URL) and never appear in a record."""
    if not url or "@" not in url:
        return url, None
    import base64
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    token = base64.b64encode(f"{unquote(parts.username or '')}:{unquote(parts.password or '')}".encode()).decode()
    return urlunsplit(parts._replace(netloc=netloc)), {"Authorization": f"Basic {token}"}


async def _pool(base_url: str | None, api_key: str, config: OpenAIConfig, headers: dict[str, str] | None = None):
    loop = asyncio.get_running_loop()
    pools = _POOLS.get(loop)
    if pools is None:
        clients: list = []
        closer = _close_at_loop_end(clients)
        await closer.__anext__()  # registered with the loop's async-generator hooks from here on
        pools = _POOLS[loop] = {"_closer": (closer, clients)}
    key = (base_url, api_key, tuple(sorted((headers or {}).items())))
    if key not in pools:
        client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, default_headers=headers,
                                    timeout=config.timeout_s, http_client=_http_client(config))
        pools["_closer"][1].append(client)
        pools[key] = (client, asyncio.Semaphore(config.max_connections))
    return pools[key]


def _http_client(config: OpenAIConfig):
    """aiohttp as the SDK's transport (its documented choice for high concurrency: the default pool scans
    every connection per request); the SDK's default where aiohttp is not installed."""
    try:
        return openai.DefaultAioHttpClient(timeout=config.timeout_s)
    except (RuntimeError, ImportError, AttributeError):
        return None


def _retry_after(exc: openai.APIStatusError) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, ValueError):
        return None


def tool_name(name: str) -> str:
    """OpenAI function names allow [A-Za-z0-9_-]: ``Editor.open_file`` travels as ``Editor__open_file``."""
    return name.replace(".", "__")


def commands_text(message: dict[str, Any]) -> str:
    """Native tool calls → the agent's command format, so one parser serves both ways of answering."""
    commands = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        try:
            args = json.loads(fn.get("arguments") or "{}")
        except ValueError:
            args = {"_unparsed_arguments": fn.get("arguments")}
        commands.append({"command_name": str(fn.get("name", "")).replace("__", "."), "args": args})
    return json.dumps({"thought": message.get("content") or "", "commands": commands}, ensure_ascii=False)


def schema_instruction(schema: dict[str, Any]) -> str:
    return ("Reply with one JSON object and nothing else. It must match this JSON schema:\n"
            + json.dumps(schema, ensure_ascii=False))


class OpenAIBackend:
    def __init__(self, model: str, base_url: str | None = None, *, config: OpenAIConfig | None = None,
                 api_key: str | None = None):
        self.model = model
        self.base_url, self._headers = split_credentials(base_url or os.environ.get("OPENAI_BASE_URL") or None)
        self.config = config or OpenAIConfig.from_env()
        # Local servers (llama.cpp, vLLM, Ollama) accept any key; hosted ones say 401 with a clear error.
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or "no-key"
        self.cache = ResponseCache(self.config.cache_dir) if self.config.cache_dir else None

    @property
    def endpoint(self) -> str:
        return self.base_url or "https://api.openai.com/v1"

    def _wait(self, retry_state) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        if isinstance(exc, TransientError) and exc.retry_after is not None:
            return min(exc.retry_after, self.config.retry_after_cap_s)
        backoff = wait_exponential_jitter(multiplier=self.config.backoff_initial_s, max=self.config.backoff_max_s,
                                          jitter=self.config.backoff_initial_s)
        return backoff(retry_state)

    async def complete(self, request: Request) -> Completion:
        key = cache_key(self.model, self.base_url, request) if self.cache else None
        if key and (hit := self.cache.get(key)) is not None:
            return hit
        client, semaphore = await _pool(self.base_url, self._api_key, self.config, self._headers)
        attempts = 0
        started = time.perf_counter()
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.config.max_attempts) | stop_after_delay(self.config.max_total_wait_s),
            wait=self._wait,
            retry=retry_if_exception(lambda e: isinstance(e, TransientError)),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    async with semaphore:
                        completion = await self._once(client, request)
        except TransientError as exc:
            raise LLMError(f"{self.model} at {self.endpoint}: gave up after {attempts} attempts: {exc}",
                           attempts=attempts, retryable=True) from exc
        except LLMError as exc:
            exc.attempts = attempts
            raise
        completion.attempts = attempts
        completion.latency_ms = (time.perf_counter() - started) * 1000
        if key:
            self.cache.put(key, completion)
        return completion

    async def _once(self, client: openai.AsyncOpenAI, request: Request) -> Completion:
        messages = request.messages
        # The body is already plain JSON, so it goes as the SDK's documented pass-through ``extra_body``
        # (same bytes on the wire): the SDK's typed transform of messages costs ~0.7 ms a call.
        body: dict[str, Any] = {"messages": messages}
        if request.tools:
            body["tools"] = [{"type": "function", "function": {
                "name": tool_name(t["name"]), "description": t.get("description", ""),
                "parameters": t.get("parameters", {"type": "object"})}} for t in request.tools]
        elif request.schema is not None:
            if self.endpoint in _SCHEMA_IN_PROMPT:
                body["messages"] = [{"role": "system", "content": schema_instruction(request.schema)}, *messages]
            else:
                body["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": request.schema_name, "schema": request.schema}}
        kwargs: dict[str, Any] = {}
        for name in ("temperature", "max_tokens", "seed"):
            if getattr(request, name) is not None:
                kwargs[name] = getattr(request, name)
        if "max_tokens" not in kwargs and self.config.max_tokens:
            kwargs["max_tokens"] = self.config.max_tokens
        try:
            # with_raw_response: we read the JSON ourselves, skipping the SDK's model construction (~0.5 ms).
            raw = await client.chat.completions.with_raw_response.create(model=self.model, messages=[],
                                                                          extra_body=body, **kwargs)
            response = json.loads(raw.content)
        except openai.RateLimitError as exc:
            raise TransientError(f"429 rate limited: {exc.message}", retry_after=_retry_after(exc)) from exc
        except openai.APITimeoutError as exc:
            raise TransientError(f"timed out after {self.config.timeout_s:g}s") from exc
        except openai.APIConnectionError as exc:
            raise TransientError(f"connection error: {exc}") from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500:
                raise TransientError(f"{exc.status_code} server error: {exc.message}",
                                     retry_after=_retry_after(exc)) from exc
            if (exc.status_code == 400 and "response_format" in body
                    and any(w in str(exc.message).lower() for w in ("response_format", "json_schema", "schema"))):
                _SCHEMA_IN_PROMPT.add(self.endpoint)
                return await self._once(client, request)
            hint = {401: " (check OPENAI_API_KEY)", 404: " (check the model name and base URL)"}.get(exc.status_code, "")
            raise LLMError(f"{self.model} at {self.endpoint}: HTTP {exc.status_code}{hint}: {exc.message}") from exc
        except openai.APIResponseValidationError as exc:
            raise TransientError(f"malformed response body: {exc.message}") from exc
        except ValueError as exc:  # a 200 whose body is not JSON
            raise TransientError(f"malformed response body: {exc}") from exc
        return self._to_completion(response, body["messages"])

    def _to_completion(self, response: Any, messages: list[dict[str, Any]]) -> Completion:
        try:
            message = response["choices"][0]["message"]
            text = message.get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise TransientError(f"malformed response body: no choices ({str(response)[:80]})") from exc
        if message.get("tool_calls"):
            text = commands_text(message)
        usage = response.get("usage") or {}
        if usage.get("prompt_tokens") is not None:
            prompt_tokens, completion_tokens = usage["prompt_tokens"], usage.get("completion_tokens") or 0
            cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
            estimated = False
        else:
            prompt_tokens, completion_tokens = estimate_tokens(messages_text(messages)), estimate_tokens(text)
            cached, estimated = 0, True
        return Completion(
            text=text, model=self.model, base_url=self.endpoint, prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens, cached_tokens=cached, usage_estimated=estimated,
            cost_usd=cost_usd(self.model, prompt_tokens, completion_tokens, cached),
        )
