"""Which key goes to which endpoint. ``OPENAI_API_KEY`` goes only to OpenAI's host, or to the host
``OPENAI_BASE_URL`` names (the user pointed the key there); any other endpoint takes a key only from a
setting named for its host, ``TOOLKIT_KEY_<HOST>`` (``api.example.com`` → ``TOOLKIT_KEY_API_EXAMPLE_COM``).
Pointing a seat at someone else's server never hands them the OpenAI key. Servers on loopback or a private
network need no key at all."""

from __future__ import annotations

import ipaddress
import os
import re
from urllib.parse import urlsplit

DEFAULT_ENDPOINT = "https://api.openai.com/v1"


def openai_hosts() -> set[str]:
    """The hosts OPENAI_API_KEY may go to: OpenAI's, and OPENAI_BASE_URL's (the user pointed the key there)."""
    hosts = {urlsplit(DEFAULT_ENDPOINT).hostname}
    if os.environ.get("OPENAI_BASE_URL"):
        hosts.add(urlsplit(os.environ["OPENAI_BASE_URL"]).hostname)
    return {h for h in hosts if h}


def key_setting(url: str) -> str:
    """The environment variable an endpoint's key comes from: ``OPENAI_API_KEY`` for the OpenAI hosts,
    ``TOOLKIT_KEY_<HOST>`` for any other (``api.example.com`` → ``TOOLKIT_KEY_API_EXAMPLE_COM``), so pointing
    a seat at someone else's server never hands them the OpenAI key."""
    host = (urlsplit(url).hostname or "").lower()
    if host in openai_hosts():
        return "OPENAI_API_KEY"
    return "TOOLKIT_KEY_" + re.sub(r"[^A-Z0-9]", "_", host.upper())


def key_rule() -> str:
    return ("OPENAI_API_KEY goes only to api.openai.com or OPENAI_BASE_URL's host; other endpoints take "
            "TOOLKIT_KEY_<HOST>")


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
