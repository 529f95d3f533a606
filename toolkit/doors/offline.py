"""An offline player choosing through a door: the answer the toolkit's player of a spec (``heuristic``,
``random``, ``mixed``, ``scripted:PATH``, ...) gives to the decision a door asks now, from the same request
(``infos[agent]["request"]``: the seat's observation, its seed and replay key), so that a game whose every seat
answers so is the game ``play_games`` plays with those specs."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from toolkit.core.sync import run_sync
from toolkit.llm import Backend, Request, get_model


@lru_cache(maxsize=32)
def _backend(spec: str) -> Backend:
    return get_model(spec).backend


def answer(spec: str, request: Request) -> dict[str, Any] | str:
    """The answer of ``spec``'s player to ``request``: a dict where it wrote JSON, else its text."""
    text = run_sync(_backend(spec).complete(request)).text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) else text
