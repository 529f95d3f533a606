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
# Words the speaker reports rather than says of itself: "Player5: I am the Witch", 'Player5 said "I am
# the Witch"', anything in quotes. A role claim inside them is not the speaker's.
_REPORTED = re.compile(r"\b(Player\d+)\s*(?::|said|says|claimed|claims)\s*[^.!?]*|[\"“‘‹«][^\"”’›»]*[\"”’›»]", re.I)
_SUSPECT = re.compile(r"\b(?:suspect|vote for|voting for|vote out|watch) (Player\d+)\b", re.I)


@lru_cache(maxsize=65536)
def extract(speaker: str, text: str) -> tuple[tuple[str, str, str], ...]:
    """(speaker, kind, value) triples; kind is ``role``, ``accuse``, ``clear`` or ``suspect``. A role claim
    counts only as the speaker's own words, not inside a quote or words reported of another player."""
    found: list[tuple[str, str, str]] = []
    own = _REPORTED.sub(lambda m: m.group(0) if m.group(1) == speaker else " ", text)
    for m in _ROLE.finditer(own):
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
