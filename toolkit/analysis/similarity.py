"""Near-duplicate text, in near-linear time: word 3-gram shingles (lower-cased words, punctuation dropped), hashed
to integers (crc32, so runs agree), and the share of a text's shingles found in another text or in a prompt
(``containment``). A paraphrase that keeps most of a text — a word changed, a sentence added, a final period
dropped — keeps most of its shingles; two texts that merely share a topic do not.

``Earlier`` finds, for each new text, the earlier text of the same game that contains most of it, through an
inverted index from shingle to texts (only shingles held by few earlier texts are looked up, so a game of S
speeches costs O(S · shingles) rather than O(S²)). Texts shorter than ``MIN_WORDS`` words are never compared:
"I have no information yet." said twice is not a copy anyone can tell from a coincidence."""

from __future__ import annotations

import re
import zlib
from collections import Counter

MIN_WORDS = 6  # shorter texts are too generic to call a copy
NEAR = 0.5  # containment at or above this is a near-duplicate: one word changed in 8 words keeps 3 of 6 3-grams
MAX_POSTING = 16  # a shingle held by more earlier texts of the game than this is common talk, not looked up
QUOTED = re.compile(r"«[^«»]*»")


def words(text: str) -> list[str]:
    return re.findall(r"[\w']+", str(text).lower())


def template(text: str) -> str:
    """``text``'s words with every seat name (``Player3``, ``P3``) as ``player#``: what a scripted or habitual
    speaker says whatever the names."""
    return " ".join(re.sub(r"^(?:player|p)\d+$", "player#", w) for w in words(text))


def shingles(text: str, k: int = 3) -> set[int]:
    """The hashed word k-grams of ``text`` (a text of fewer than k words: its words as one shingle)."""
    w = words(text)
    grams = [" ".join(w[i:i + k]) for i in range(max(1, len(w) - k + 1))] if w else []
    return {zlib.crc32(g.encode()) for g in grams}


def containment(a: set[int], b: set[int]) -> float:
    """The share of ``a``'s shingles that are in ``b`` (0 when ``a`` is empty)."""
    return len(a & b) / len(a) if a else 0.0


def instructions(prompt: str) -> str:
    """A prompt without the players' quoted words («…»): what the model was told, not what it heard."""
    return QUOTED.sub(" ", prompt)


class Earlier:
    """The texts seen so far in one game, indexed by shingle."""

    def __init__(self) -> None:
        self.sets: list[set[int]] = []
        self.index: dict[int, list[int]] = {}

    def best(self, text: str) -> tuple[float, int | None]:
        """The highest containment of ``text`` in one earlier text, and that text's position (``None``: none
        shares a shingle, or ``text`` is shorter than ``MIN_WORDS`` words)."""
        if len(words(text)) < MIN_WORDS:
            return 0.0, None
        s = shingles(text)
        hits: Counter[int] = Counter()
        for h in s:
            posting = self.index.get(h, ())
            if len(posting) <= MAX_POSTING:
                hits.update(posting)
        if not hits:
            return 0.0, None
        candidates = [i for i, _ in hits.most_common(3)]
        score, j = max((containment(s, self.sets[i]), i) for i in candidates)
        return score, j

    def add(self, text: str) -> None:
        s = shingles(text)
        for h in s:
            self.index.setdefault(h, []).append(len(self.sets))
        self.sets.append(s)
