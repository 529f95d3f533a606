"""The experience pool: past reflections with their outcomes, retrieved by BM25.

Stored as JSONL under ``results/experience/pool.jsonl``. Retrieval filters by role *before* ranking (so
a Seer never gets a Werewolf's lessons because they ranked higher), and can exclude a version, so an
experiment does not learn from its own games.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rank_bm25 import BM25Okapi

_TOKEN = re.compile(r"[a-z0-9]+")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class ExperiencePool:
    def __init__(self, path: str | Path = "results/experience/pool.jsonl", version: str = "v0"):
        self.path = Path(path)
        self.version = version
        self._entries: list[dict[str, Any]] | None = None

    def entries(self) -> list[dict[str, Any]]:
        if self._entries is None:
            self._entries = []
            if self.path.exists():
                for line in self.path.read_text(encoding="utf-8").splitlines():
                    try:
                        self._entries.append(json.loads(line))
                    except ValueError:
                        continue
        return self._entries

    def add(self, role: str, reflection: str, outcome: str, game_id: str) -> None:
        entry = {"version": self.version, "role": role, "reflection": reflection, "outcome": outcome,
                 "game_id": game_id}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
        self.entries().append(entry)

    def retrieve(self, role: str, query: str, k: int = 3, exclude_versions: tuple[str, ...] = ()) -> list[str]:
        candidates = [e for e in self.entries() if e["role"] == role and e["version"] not in exclude_versions]
        if not candidates:
            return []
        bm25 = BM25Okapi([_tokens(e["reflection"]) or ["_"] for e in candidates])
        scores = bm25.get_scores(_tokens(query) or ["_"])
        ranked = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))[:k]
        return [f"({candidates[i]['outcome']}) {candidates[i]['reflection']}" for i in ranked]
