"""Speeches are data: one function makes any player text safe to show to other players.

A speech is stored and rendered as a single line of printable text that cannot close the quotes it is
shown in: newlines (and every other line or paragraph break) become spaces, control characters (ANSI
escape sequences whole, BEL, NUL, CR, DEL, C1 codes) and invisible format characters (bidi overrides
such as U+202E, zero-width characters, BOM) are removed, the quoting delimiters «» and their look-alikes
(≪≫ ⟪⟫ 《》 〈〉 ⟨⟩ ﹁﹂ and the fullwidth ＜＞) are replaced by ‹›, chat-template tokens (``<|im_start|>``,
``[INST]``, ``<start_of_turn>``, ``</s>``) are removed, runs of spaces collapse, and the result is
capped. The same function serves prompts, the terminal transcript and the widgets, so nothing a player
says can start a line or pass for a game line anywhere.
"""

from __future__ import annotations

import re
import unicodedata

MAX_SPEECH_CHARS = 600  # the Speech output model's cap; a stored speech never exceeds it
ELLIPSIS = " […]"

# ESC-introduced sequences removed whole: CSI (colours, cursor moves), OSC (titles, hyperlinks), DCS/SOS/PM/APC
# strings, and two-character escapes. The C1 forms (U+009B CSI, U+009D OSC) likewise.
_ANSI = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"            # CSI ... final byte
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC/DCS/SOS/PM/APC
    r"|\x1b[ -/]*[0-~]?"                             # other ESC sequences (and a lone ESC)
)
_BREAKS = re.compile(r"[\n\r\t\v\f\x1c-\x1f\x85\u2028\u2029]")
_SPACES = re.compile(r"\s{2,}")
_QUOTES = str.maketrans({o: "‹" for o in "«≪⟪《〈⟨﹁＜"} | {c: "›" for c in "»≫⟫》〉⟩﹂＞"})
# The special tokens of the common chat templates (ChatML, Llama 2/3, Gemma, Mistral, and DeepSeek's with
# full-width bars: <｜User｜>), which a model's own template would read as a turn boundary.
_TEMPLATE = re.compile(r"<[|\uff5c][^|\uff5c<>\s]{1,40}[|\uff5c]>"
                       r"|\[/?(?:INST|SYS)\]|<</?SYS>>|</?s>|<(?:start|end)_of_turn>", re.I)


def clean_speech(text: object, limit: int = MAX_SPEECH_CHARS) -> str:
    """``text`` as one safe line of at most ``limit`` characters (idempotent)."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if (len(text) <= limit and text.isascii() and text.isprintable() and "  " not in text and text == text.strip()
            and "<" not in text and "[" not in text):
        return text  # already one clean line (every stored speech is): the common case, at C speed
    if len(text) > limit * 8:  # a megabyte of speech: only its start can survive the cap anyway
        text = text[: limit * 8]
    text = _ANSI.sub("", text)
    text = _TEMPLATE.sub(" ", text)
    text = _BREAKS.sub(" ", text)
    if not text.isprintable():
        text = "".join(ch for ch in text if _printable(ch))
    text = _SPACES.sub(" ", text.translate(_QUOTES)).strip()
    if len(text) > limit:
        text = text[: limit - len(ELLIPSIS)].rstrip() + ELLIPSIS
    return text


def _printable(ch: str) -> bool:
    if ch.isprintable() or ch == " ":
        # isprintable() is False for every Cc/Cf/Cs/Co/Cn/Zl/Zp character and every space but U+0020
        return True
    return unicodedata.category(ch) == "Zs"  # other spaces (NBSP, …): kept, then collapsed to one
