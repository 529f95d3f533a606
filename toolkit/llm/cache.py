"""Answers a call need not pay for again: an optional on-disk response cache, so that re-running a notebook costs
no calls, and a study's record, so that a game played again after a stop pays only its new calls.

``ResponseCache``: keyed by model, endpoint, messages, schema and sampling settings. SQLite, so several processes
of a sweep can share one cache file safely. What is stored is masked (``toolkit.core.secrets``): an endpoint that
echoes a key or a URL's password back does not put it on disk.

``Record``: the answers a study's ``calls`` rows hold for its games that did not finish (stopped at a spending cap,
killed, interrupted), keyed by ``request_key`` (the spec, the decision's replay key, the sampling and the
messages as sent: the same question of the same game) and taken in the order they were asked. While a record
is ``replaying``, a model call whose question is in it is answered from it (``cache_hit``, no request, cost 0):
the game played again asks the endpoint only what it had not asked before. Only the same question of the same
seat in the same game matches, so no two games ever share an answer.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections import deque
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, Iterable, Iterator

from toolkit.core.secrets import Redactor
from toolkit.llm.request import Completion, Request


def cache_key(model: str, base_url: str | None, request: Request, params: dict | None = None) -> str:
    """The request's key: the model, endpoint, messages, schema, tools, sampling and the spec's provider
    parameters (two efforts of one model never share an answer; a spec without any keeps its old key)."""
    parts = [model, base_url, request.messages, request.schema, request.tools, request.sampling.temperature,
             request.sampling.max_tokens, request.sampling.seed]
    payload = json.dumps(parts + ([params] if params else []), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


class ResponseCache:
    def __init__(self, path: str | Path):
        path = Path(path)
        if path.suffix != ".sqlite":
            path = path / "responses.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._mask = Redactor()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, completion TEXT)")
        self._db.commit()

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._db.execute("SELECT completion FROM responses WHERE key=?", (key,)).fetchone()
        if row is None:
            return None
        known = {f.name for f in fields(Completion)}  # entries written by older versions may carry more
        completion = Completion(**{k: v for k, v in json.loads(row[0]).items() if k in known})
        completion.cache_hit = True
        completion.cost_usd = 0.0 if completion.cost_usd is not None else None
        return completion

    def put(self, key: str, completion: Completion) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?)",
                             (key, self._mask(json.dumps(asdict(completion), ensure_ascii=False))))
            self._db.commit()


# ------------------------------------------------------------------ a study's record
def request_key(spec: str, request: Request, messages: str | None = None) -> str:
    """The question a call asks, as a resumed study matches it: the spec (model, endpoint, parameters), the
    decision's ``replay_key`` (preset, seed, seat, day, phase, action), the sampling, the schema's name and the
    messages (``messages``: their JSON as the calls row keeps it, when the caller has it)."""
    s = request.sampling
    head = json.dumps([spec, request.replay_key, s.temperature, s.max_tokens, s.seed, request.schema_name],
                      default=str)
    text = messages if messages is not None else json.dumps(request.messages, ensure_ascii=False)
    return hashlib.sha256(f"{head}\n{text}".encode()).hexdigest()[:32]


def legacy_key(spec: str, replay_key: str | None, temperature: Any, action: str | None, messages: str) -> str:
    """The question of a calls row written before rows had a ``request_key``, from what such a row holds: the
    spec, the replay key, the temperature, the action (the schema's name) and the messages' JSON (not the
    sampling's token limit and seed, which those rows do not have: a resumed study keeps its settings)."""
    head = json.dumps([spec, replay_key, None if _missing(temperature) else float(temperature), action], default=str)
    return "legacy-" + hashlib.sha256(f"{head}\n{messages}".encode()).hexdigest()[:32]


# The calls columns a record is built from.
RECORD_COLUMNS = ["call_id", "game_id", "seq", "replay_key", "request_key", "response_text", "model",
                  "prompt_tokens", "completion_tokens", "cached_tokens", "usage_estimated", "finish_reason",
                  "reasoning_tokens", "reasoning"]


class Record:
    """Recorded answers by ``request_key``, each key's in the order they were asked (see the module's docstring).
    ``rows``: calls rows (dicts with ``RECORD_COLUMNS``) of the games to replay; a row without an answer (a
    transport failure) is not replayed, and one without a ``request_key`` (written before there was one) only by
    its ``legacy_key`` where the caller gives it one. A game
    played several times (stopped, resumed, stopped again) leaves several copies of its early answers: per key,
    the longest sequence of any one of its plays is kept."""

    def __init__(self, rows: Iterable[dict[str, Any]]):
        plays: dict[Any, dict[str, list[dict]]] = {}
        for row in sorted(rows, key=lambda r: (str(r.get("game_id")), int(r.get("seq") or 0))):
            key = row.get("request_key") if not _missing(row.get("request_key")) else row.get("legacy_key")
            if not key or _missing(row.get("completion_tokens")):
                continue
            plays.setdefault(row.get("game_id"), {}).setdefault(key, []).append(row)
        best: dict[str, list[dict]] = {}
        for keys in plays.values():
            for key, answers in keys.items():
                if len(answers) > len(best.get(key, ())):
                    best[key] = answers
        self._answers = {key: deque(answers) for key, answers in best.items()}
        self._replay_keys = {a[0].get("replay_key") for a in best.values()}
        self._legacy = any(key.startswith("legacy-") for key in best)  # rows from before request_key
        self.size = sum(len(a) for a in best.values())
        self.replayed = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.size

    def take(self, spec: str, request: Request) -> Completion | None:
        """The recorded answer to this question (removed: a question asked twice gets the second answer the
        second time), or None when there is none left."""
        if request.replay_key not in self._replay_keys:
            return None
        key = request_key(spec, request)
        with self._lock:
            answers = self._answers.get(key)
            if not answers and self._legacy:
                answers = self._answers.get(legacy_key(spec, request.replay_key, request.sampling.temperature,
                                                       request.action, json.dumps(request.messages,
                                                                                  ensure_ascii=False)))
            if not answers:
                return None
            row = answers.popleft()
            self.replayed += 1
        return _completion(row)


def _missing(value: Any) -> bool:
    return value is None or value != value  # None or NaN (pandas' missing number)


def _completion(row: dict[str, Any]) -> Completion:
    """A recorded answer as a ``Completion`` answered from the record: no request made, nothing paid."""
    def whole(name: str) -> int | None:
        return None if _missing(row.get(name)) else int(row[name])

    def text(name: str) -> str | None:
        return None if _missing(row.get(name)) else str(row[name])

    return Completion(text=text("response_text") or "", model=text("model") or "", prompt_tokens=whole("prompt_tokens"),
                      completion_tokens=whole("completion_tokens"), cached_tokens=whole("cached_tokens") or 0,
                      usage_estimated=bool(row.get("usage_estimated")) if not _missing(row.get("usage_estimated"))
                      else False, cost_usd=0.0, cache_hit=True, finish_reason=text("finish_reason"),
                      reasoning_tokens=whole("reasoning_tokens"), reasoning=text("reasoning"))


_REPLAYING: ContextVar[Record | None] = ContextVar("toolkit_record", default=None)


@contextmanager
def replaying(record: Record | None) -> Iterator[None]:
    """Answer the model calls made inside (this task and the tasks it starts) from ``record`` where it has them."""
    token = _REPLAYING.set(record)
    try:
        yield
    finally:
        _REPLAYING.reset(token)


def active_record() -> Record | None:
    """The record being replayed here, or None."""
    return _REPLAYING.get()
