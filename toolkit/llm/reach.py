"""Whether an OpenAI-compatible endpoint can be used, checked before anything starts: the URL's shape, its key
(``toolkit.llm.keys``: a hosted endpoint needs one, a server on loopback or a private network none) and, when
asked, that a TCP connection opens. Each problem is a ``ValueError`` of one line naming the spec (its URL's
password masked)."""

from __future__ import annotations

import os
import socket
import threading
from urllib.parse import urlsplit

from toolkit.core.secrets import mask_url_credentials
from toolkit.llm.keys import DEFAULT_ENDPOINT, is_local, key_rule, key_setting


def reachable(host: str, port: int, timeout_s: float) -> str | None:
    """None when a TCP connection opens within ``timeout_s`` (name lookup included), else why not."""
    outcome: list[str | None] = []

    def attempt() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                outcome.append(None)
        except OSError as exc:
            outcome.append(exc.strerror or type(exc).__name__)

    worker = threading.Thread(target=attempt, daemon=True)  # getaddrinfo has no timeout of its own
    worker.start()
    worker.join(timeout_s)
    return outcome[0] if outcome else f"no answer within {timeout_s:g} s"


def check_openai(arg: str, probe: bool = True, timeout_s: float = 3.0, prefix: str = "openai") -> None:
    """``MODEL[@URL]`` (an ``openai:`` spec's argument) can be used: a ValueError of one line if not."""
    model, _, url = arg.partition("@")
    spec = mask_url_credentials(f"{prefix}:{arg}")
    if not model.strip():
        raise ValueError(f"{spec}: needs a model name, e.g. openai:gpt-4o-mini or openai:NAME@http://HOST:PORT/v1")
    url = url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_ENDPOINT
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{spec}: the URL has a malformed port; expected http://HOST:PORT/v1") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{spec}: malformed URL {mask_url_credentials(url)!r}; expected http(s)://HOST[:PORT]/v1")
    port = port or (443 if parts.scheme == "https" else 80)
    setting = key_setting(url)
    if not os.environ.get(setting) and "@" not in parts.netloc and not is_local(url):
        raise ValueError(f"{spec}: no {setting} is set, and {parts.hostname} is a hosted endpoint; set it "
                         f"({key_rule()}; a server on 127.0.0.1 needs none)")
    if probe:
        why = reachable(parts.hostname, port, timeout_s)
        if why is not None:
            raise ValueError(f"{spec}: cannot reach {parts.hostname}:{port} ({why}); is the server running?")
