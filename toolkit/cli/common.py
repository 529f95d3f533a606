"""What the commands share: ``show`` (every line the command line prints goes through it), counts in words,
SEAT=VALUE pairs, the options as the runs table keeps them, and the live transcript of a game."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from toolkit.core.printable import plural, show  # noqa: F401  (the commands import them from here)


class TerminalFormatter(logging.Formatter):
    """Log records on the terminal as ``show`` prints: made printable and masked (a record may quote a model's
    or a tool's text, e.g. a failed tool's traceback)."""

    def format(self, record: logging.LogRecord) -> str:
        from toolkit.core.printable import printable
        from toolkit.core.secrets import redact

        return redact(printable(super().format(record), keep_lines=True))


def log_to_terminal() -> logging.Handler | None:
    """Python's last-resort log handler (what prints a warning or worse when no handler is configured) replaced by
    one that formats through ``TerminalFormatter``: the same records, the same text, made printable. Returns the
    handler it replaced."""
    replaced = logging.lastResort
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(TerminalFormatter("%(message)s"))
    logging.lastResort = handler
    return replaced


class Transcript:
    """Prints events as they happen (god view: night actions shown, marked private; ``toolkit.ui.transcript``
    formats them, as for the notebook widget, its texts made printable), secrets masked as ``show`` masks them."""
    def __init__(self, colour: bool | None = None, stream: Any = None):
        from toolkit.core.secrets import Redactor

        self.stream = stream or sys.stdout
        self.colour = self.stream.isatty() and not os.environ.get("NO_COLOR") if colour is None else colour
        self.last_announcement = ""
        self.mask = Redactor()

    def __call__(self, e: Any, game: Any) -> None:
        from toolkit.ui import transcript
        from toolkit.werewolf.engine.rules import PUBLIC

        line = transcript.line(e, game.roles, self.last_announcement)
        if e.kind == "announcement" and e.visibility == PUBLIC:
            self.last_announcement = e.text
        if line is not None:
            print(self.mask(transcript.ansi(line, self.colour)), file=self.stream)


def pairs(items: list[str], what: str) -> dict[str, str]:
    from toolkit.core.files import FileError, one_line

    out = {}
    for item in items:
        for part in item.split(","):
            key, sep, value = part.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise FileError(f"{what} must look like Player3=VALUE, got {one_line(part, 80)!r}")
            key, value = key.strip(), value.strip()
            if key in out:  # the later one would silently win
                raise FileError(f"{what} {key} is given twice ({one_line(out[key], 40)} and {one_line(value, 40)});"
                                " give each once")
            out[key] = value
    return out


def run_config(args: argparse.Namespace) -> dict[str, Any]:
    """The options as the runs table keeps them (credentials in URLs masked)."""
    from toolkit.core.secrets import mask_url_credentials as masked

    return {k: (masked(v) if isinstance(v, str) else [masked(x) if isinstance(x, str) else x for x in v]
                if isinstance(v, list) else v) for k, v in vars(args).items() if k != "func"}


CAPPED = 3  # the exit code of a run that stopped at its spending cap (not a failure; a rerun continues it)
ENDPOINT_DOWN = 4  # the exit code of a run a dead endpoint stopped (its games unfinished; a rerun resumes them)


def add_cap_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """``--max-usd``, ``--max-tokens``, ``--at-cap``: a spending cap (toolkit.llm.budget)."""
    parser.add_argument("--max-usd", type=float, metavar="USD",
                        help=f"a spending cap: no new game starts once {what} has spent this many US dollars "
                             "(every model needs a price); exit code 3 when it stops there")
    parser.add_argument("--max-tokens", type=int, metavar="N", help="the same cap in tokens (prompt + completion)")
    parser.add_argument("--at-cap", choices=["stop", "finish"],
                        help="games in flight at the cap: stop them unfinished (the default; a rerun plays them "
                             "again) or let them finish")


def endpoints_line(folder: Any) -> str | None:
    """The endpoints' concurrency figures of every run under ``folder`` (its ``endpoints`` table) in one line, or
    None when no run asked an endpoint: per endpoint the peak in flight of the allowed, where the adaptive limit
    settled (the last run's) and how low it went, the 429s and the seconds requests waited at the gate."""
    from toolkit.record.load import load

    if not Path(folder).is_dir():  # a sweep whose every cell failed before writing has no folder
        return None
    frame = load(folder, complete_games=False, columns={"games": ["game_id"], "endpoints": None}).endpoints
    if frame.empty:
        return None
    parts = []
    for endpoint, rows in frame.groupby("endpoint", sort=False):
        requests, limited = int(rows["requests"].sum()), int(rows["rate_limited"].sum())
        parts.append(f"{endpoint} peak {int(rows['peak_in_flight'].max())} in flight of "
                     f"{int(rows['max_connections'].max())} allowed, limit settled at {int(rows['limit'].iloc[-1])} "
                     f"(lowest {int(rows['lowest_limit'].min())}), {plural(limited, '429')}, "
                     f"{float(rows['waited_s'].sum()):.1f} s waited over {plural(requests, 'request')}")
    return "endpoints: " + "; ".join(parts)
