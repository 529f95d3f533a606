"""Claims read from speech text without an LLM: role claims, accusations, clearances, suspicions.

Used for the compact summary of earlier days in prompts and by the heuristic players. Works on any
speech text; it recognises plain sentences such as "I am the Seer", "Player3 is a werewolf",
"Player4 is good", "I suspect Player5" / "vote for Player5".
"""

from __future__ import annotations

import re
from functools import lru_cache

_ROLE = re.compile(r"\bI am (?:the |a )?(Seer|Witch|Guard|Villager|Werewolf)\b", re.I)
_ACCUSE = re.compile(r"\b(Player\d+) is (?:a |the |definitely a )?(?:werewolf|wolf)\b", re.I)
_CLEAR = re.compile(r"\b(Player\d+) is (?:good|innocent|a villager|on the village side)\b", re.I)
_SUSPECT = re.compile(r"\b(?:suspect|vote for|voting for|vote out|watch) (Player\d+)\b", re.I)


@lru_cache(maxsize=65536)
def extract(speaker: str, text: str) -> tuple[tuple[str, str, str], ...]:
    """(speaker, kind, value) triples; kind is ``role``, ``accuse``, ``clear`` or ``suspect``."""
    found: list[tuple[str, str, str]] = []
    for m in _ROLE.finditer(text):
        found.append((speaker, "role", m.group(1).capitalize()))
    for kind, pattern in (("accuse", _ACCUSE), ("clear", _CLEAR), ("suspect", _SUSPECT)):
        for m in pattern.finditer(text):
            target = "Player" + m.group(1)[6:]
            if target != speaker:
                found.append((speaker, kind, target))
    return tuple(dict.fromkeys(found))


def describe(claim: tuple[str, str, str]) -> str:
    speaker, kind, value = claim
    return {"role": f"{speaker} claimed {value}", "accuse": f"{speaker} called {value} a werewolf",
            "clear": f"{speaker} called {value} good", "suspect": f"{speaker} suspected {value}"}[kind]
