"""Text bound for a terminal, made printable: ``printable(text)`` shows every character a terminal would act on
instead of printing (C0 and C1 controls, ESC and so every escape sequence — CSI clear-screen, OSC 52 clipboard
writes, window titles, DCS —, DEL, the bidirectional overrides and isolates, zero-width and other format
characters, line and paragraph separators, surrogates, private-use and unassigned code points) as its Python
escape (``\\x1b``, ``\\u202e``), so what a model, a tool or a file supplies can neither move the cursor, clear
the screen, fake a prompt, reorder a line nor write the clipboard. ``keep_lines=True`` keeps newlines and
tabs where they are content (a model's multi-line message); a lone carriage return is shown escaped (it would
overwrite the line). Letters of every script, emoji and ordinary spaces stay as they are.

Every line the toolkit prints on the terminal from a model, a tool or a file goes through this one function,
by way of ``show`` (which also masks secrets).
"""

from __future__ import annotations

import sys
import unicodedata
from typing import Any

SHOWN_SPACES = {"Zs"}  # ordinary and no-break spaces print as space; separators (Zl, Zp) do not


def _shown(ch: str) -> bool:
    return ch.isprintable() or ch == " " or unicodedata.category(ch) in SHOWN_SPACES


def _escaped(ch: str) -> str:
    return ch.encode("unicode_escape").decode("ascii")


def printable(text: object, keep_lines: bool = False) -> str:
    """``text`` with every character a terminal would act on shown escaped (see the module's docstring).
    ``keep_lines``: newlines (``\\r\\n`` as one) and tabs stay."""
    text = str(text)
    if text.isprintable():  # the common case, at C speed
        return text
    if keep_lines:
        text = text.replace("\r\n", "\n")
    return "".join(ch if _shown(ch) or (keep_lines and ch in "\n\t") else _escaped(ch) for ch in text)


def show(text: object = "", file: Any = None) -> None:
    """Print one message on the terminal as text only: what a model, a tool or a file put in it is made printable
    (escape sequences, controls and bidi overrides shown escaped; newlines and tabs kept) and secrets are masked
    (``toolkit.core.secrets.redact``: the environment's, a spec's URL password, key shapes, credentials inside
    URLs). The command line, the agent's human channel and the environment's warnings all print through it."""
    from toolkit.core.secrets import redact

    print(redact(printable(text, keep_lines=True)), file=file or sys.stdout)


def plural(n: int, word: str) -> str:
    """``1 game``, ``2 games``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
