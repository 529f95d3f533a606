"""The experience pool: past reflections with their outcomes, retrieved by BM25 for the situation at hand.

A pool is a JSONL file the experiment names explicitly (there is no default location): each entry has the
writing run's ``version``, the ``preset``, the ``role``, the reflection text, the outcome and the game.
Retrieval is asked with a query text, the current reflection or, without one, the current observation
(``situation_query``), so two situations of one role draw different lessons. It filters *before* ranking
(so a Seer never gets a Werewolf's lessons because they ranked higher): by role, by preset when one is
given, and by version: by default a pool never returns the lessons its own version wrote (an experiment
does not learn from its own games) and ``exclude_versions`` leaves out more (the seed's
``excluded_version``). A damaged line is skipped with an ``ExperienceWarning`` naming it. ``toolkit play
--experience`` versions the pool by run, so each game reads the lessons of the runs before it.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

from rank_bm25 import BM25Okapi

from toolkit.werewolf.engine import claims as claims_mod
from toolkit.werewolf.engine.speech import clean_speech

_TOKEN = re.compile(r"[a-z0-9]+")
MAX_LESSON_CHARS = 800


class ExperienceWarning(UserWarning):
    """A pool line that could not be read was skipped."""


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class ExperiencePool:
    def __init__(self, path: str | Path, version: str = "v0"):
        self.path = Path(path)
        self.version = version
        self._entries: list[dict[str, Any]] | None = None

    def entries(self) -> list[dict[str, Any]]:
        if self._entries is None:
            self._entries = []
            if self.path.exists():
                for n, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
                    if not line.strip():
                        continue
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        entry = None
                    if not isinstance(entry, dict) or not {"role", "reflection", "version"} <= set(entry) \
                            or not all(isinstance(entry[k], str) for k in ("role", "reflection", "version")):
                        # one damaged line (a write cut short, a hand edit) costs one lesson, not every game
                        warnings.warn(f"{self.path}:{n}: skipped a damaged experience line (an entry is a JSON "
                                      "object with string role, reflection and version)", ExperienceWarning,
                                      stacklevel=2)
                        continue
                    self._entries.append(entry)
        return self._entries

    def add(self, role: str, reflection: str, outcome: str, game_id: str, preset: str | None = None) -> None:
        # Lessons reach other seats' prompts in later games: stored as data, like speeches.
        entry = {"version": self.version, "preset": preset, "role": role,
                 "reflection": clean_speech(reflection, MAX_LESSON_CHARS), "outcome": outcome, "game_id": game_id}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
        self.entries().append(entry)

    def candidates(self, role: str, preset: str | None = None, exclude_versions: tuple[str, ...] = (),
                   include_own: bool = False) -> list[dict[str, Any]]:
        """The entries retrieval may rank: this role, this preset (when given), not an excluded version."""
        excluded = set(exclude_versions) | (set() if include_own else {self.version})
        return [e for e in self.entries() if e["role"] == role and e["version"] not in excluded
                and (preset is None or e.get("preset") == preset)]

    def retrieve(self, role: str, query: str, k: int = 3, exclude_versions: tuple[str, ...] = (),
                 preset: str | None = None, include_own: bool = False) -> list[str]:
        """The ``k`` lessons of ``role`` that best match ``query``, each as "(won|lost) text"."""
        candidates = self.candidates(role, preset, exclude_versions, include_own)
        if not candidates:
            return []
        bm25 = BM25Okapi([_tokens(e["reflection"]) or ["_"] for e in candidates])
        scores = bm25.get_scores(_tokens(query) or ["_"])
        ranked = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))[:k]
        return [f"({candidates[i].get('outcome', '?')}) {clean_speech(candidates[i]['reflection'], MAX_LESSON_CHARS)}"
                for i in ranked]


def situation_query(obs: dict[str, Any], reflection: str = "") -> str:
    """The query for this moment: the seat's current reflection if it has one, else its observation in words
    (role, phase and action, what was claimed and said, who died and who was voted)."""
    if reflection.strip():
        return reflection
    parts = [obs.get("role", ""), obs.get("phase", ""), obs.get("action", ""), f"day {obs.get('day', '')}"]
    parts += [claims_mod.describe(tuple(c)) for c in obs.get("claims", [])]
    parts += [m["text"] for m in obs.get("speeches", [])]
    record = obs.get("record") or {}
    for d in record.get("days", []):
        parts += [f"{s} died" for s in d["night_deaths"]]
        if d.get("eliminated"):
            parts.append(f"{d['eliminated']} eliminated")
        parts += ["tie" for r in d["rounds"] if r["outcome"] in ("tie", "revote")]
    parts += [f"checked {p} {r}" for p, r in (obs.get("checks") or {}).items()]
    if obs.get("victim"):
        parts.append(f"{obs['victim']} attacked tonight")
    return " ".join(p for p in parts if p)
