"""Near-duplicate text that survives paraphrase, in near-linear time: a text's character 5-grams (``shingles``:
lower-cased words joined by one space, punctuation dropped), hashed to integers (crc32, so runs agree), and the
share of a text's shingles found in another text (``overlap``) or in a prompt (``Told.contains``).

Why characters, not words: a word changed, inserted or dropped breaks every word 3-gram that spans it, so
changing one word in three left no word 3-gram of a copy intact (issue 45: 0 of 150 caught). The same edit
breaks only the character 5-grams that overlap the word — a copy with one word in three replaced keeps about
half of them, one with a filler word every three words two thirds, one with every fourth word dropped four
fifths — and a sentence moved keeps all but the few at its ends. Two texts that merely share a topic (the
seat names, "werewolf", "vote") share far fewer: ``benchmarks/degeneracy_curve.py`` prints both sides, the
detection curve against the share of words changed and the false flags on sound play, at ``NEAR``.

``Earlier`` finds, for each new text, the earlier text of the same game it overlaps most (``overlap``: shared
shingles over the larger text's), through an inverted index from shingle to texts: each shingle votes for at
most the last ``MAX_POSTING`` earlier texts that hold it, and only the ``CANDIDATES`` texts with the most votes
are compared exactly, so a game of S speeches costs O(S · shingles), not O(S²). This is the candidate step
MinHash/LSH approximates (``datasketch``); the index does it exactly, at a
fraction of datasketch's cost per text here (about 0.5 ms to sketch a speech, 15 s on the example study's
28,804 speeches, before any comparison). Texts shorter than ``MIN_WORDS`` words are never compared: "I have no
information yet." said twice is not a copy anyone can tell from a coincidence."""

from __future__ import annotations

import re
import zlib
from collections import Counter

MIN_WORDS = 6  # shorter texts are too generic to call a copy
K = 5  # characters per shingle
NEAR = 0.5  # overlap at or above this is a near-duplicate (curve, false flags: benchmarks/degeneracy_curve.py)
ECHO = 0.6  # ``Told.contains`` at or above this is copied from the instructions (short sound texts reach 0.57)
MAX_POSTING = 16  # a shingle votes for the last this many earlier texts of the game that hold it
CANDIDATES = 5  # the earlier texts with the most votes, compared exactly
QUOTED = re.compile(r"«[^«»]*»")


def words(text: str) -> list[str]:
    return re.findall(r"[\w']+", str(text).lower())


def template(text: str) -> str:
    """``text``'s words with every seat name (``Player3``, ``P3``) as ``player#``: what a scripted or habitual
    speaker says whatever the names."""
    return " ".join(re.sub(r"^(?:player|p)\d+$", "player#", w) for w in words(text))


def shingles(text: str, k: int = K) -> set[int]:
    """The hashed character k-grams of ``text``'s words joined by one space (a shorter text: itself as one)."""
    s = " ".join(words(text))
    if not s:
        return set()
    return {zlib.crc32(s[i:i + k].encode()) for i in range(max(1, len(s) - k + 1))}


def overlap(a: set[int], b: set[int]) -> float:
    """The shingles ``a`` and ``b`` share, as a share of the larger of the two: a copy reworded, padded or cut
    keeps most of it; a text that repeats a phrase or two of a longer one does not."""
    return len(a & b) / max(len(a), len(b)) if a and b else 0.0


def instructions(prompt: str) -> str:
    """A prompt without the players' quoted words («…»): what the model was told, not what it heard."""
    return QUOTED.sub(" ", prompt)


class Told:
    """A prompt's instructions, indexed by shingle and position: ``contains`` scores a text against one stretch
    of them. A text copied from the instructions comes from one place; a text that only shares their words
    gathers its shingles from all over a long prompt (a 2,000-character prompt holds four fifths of the
    character 5-grams of a plain "I am a Villager. I have nothing certain yet; let us listen carefully.")."""

    def __init__(self, prompt: str) -> None:
        s = " ".join(words(instructions(prompt)))
        self.at: dict[int, list[int]] = {}
        for i in range(max(0, len(s) - K + 1)):
            self.at.setdefault(zlib.crc32(s[i:i + K].encode()), []).append(i)

    def contains(self, text: str, width: float = 2.0) -> float:
        """The largest share of ``text``'s shingles found in one stretch of the instructions ``width`` times as
        long as ``text`` (a copy with words inserted is longer than its source, so the stretch is wider)."""
        s = shingles(text)
        if not s:
            return 0.0
        span = width * len(" ".join(words(text)))
        hits = sorted((pos, h) for h in s for pos in self.at.get(h, ()))
        best, count, lo = 0, Counter(), 0
        for pos, h in hits:
            count[h] += 1
            while pos - hits[lo][0] > span:
                old = hits[lo][1]
                count[old] -= 1
                if not count[old]:
                    del count[old]
                lo += 1
            best = max(best, len(count))
        return best / len(s)


class Earlier:
    """The texts seen so far in one game, indexed by shingle."""

    def __init__(self) -> None:
        self.sets: list[set[int]] = []
        self.index: dict[int, list[int]] = {}

    def best(self, text: str) -> tuple[float, int | None]:
        """The highest ``overlap`` of ``text`` with one earlier text, and that text's position (``None``: none
        shares a shingle, or ``text`` is shorter than ``MIN_WORDS`` words)."""
        if len(words(text)) < MIN_WORDS:
            return 0.0, None
        s = shingles(text)
        hits: Counter[int] = Counter()
        for h in s:
            hits.update(self.index.get(h, ())[-MAX_POSTING:])
        if not hits:
            return 0.0, None
        candidates = [i for i, _ in hits.most_common(CANDIDATES)]
        score, j = max((overlap(s, self.sets[i]), i) for i in candidates)
        return score, j

    def add(self, text: str) -> None:
        s = shingles(text)
        for h in s:
            self.index.setdefault(h, []).append(len(self.sets))
        self.sets.append(s)
