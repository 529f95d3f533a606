"""An optional on-disk response cache, so that re-running a notebook costs no calls.

Keyed by model, endpoint, messages, schema and sampling settings. SQLite, so several processes of a
sweep can share one cache file safely. What is stored is masked (``toolkit.core.secrets``): an endpoint that
echoes a key or a URL's password back does not put it on disk.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from dataclasses import asdict, fields
from pathlib import Path

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
