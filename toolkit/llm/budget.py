"""Spending caps for a study: US dollars and tokens, shared by every process of the study, kept across reruns.

A ``Budget`` is a cap (``max_usd``, ``max_tokens``, either, both or neither: a study cell keeps its ledger without
a cap too) and a ledger: ``spend.jsonl`` in the study's folder, appended by every process that plays a game of the
study (the cells of a sweep or a tournament run in processes of their own) and never rewritten. A paid call is in
it before it is sent: ``{"pending": ID, "usd": ..., "tokens": ...}`` at an estimate (the prompt's tokens and the
answer's limit where one is set), then ``{"settles": ID, "usd": ..., "tokens": ...}`` at what it cost (0 for a
failure) once its ``calls`` row is written (``Call.settle``, from ``CallLog.write``: a call settled before its row
and killed between the two was paid again by the resumed study). A call whose outcome the toolkit cannot know
stays pending, counted at its estimate (conservative against a cap): one in flight when its process is killed (or
answered, not yet written), and one the endpoint's deadline cut while a request of it was out or after one timed
out (``toolkit.llm.health.cut``: the provider may bill it; a cut call with no request out and none timed out
settles at 0); ``line`` names how many. So does a call reserved and killed before its request went out
(the ledger cannot tell it from one sent: a rerun cannot know whether the process that wrote it is still at
work). (A plain ``{"usd": ..., "tokens": ...}`` line, what callers outside a game and older versions write, is one
call's spending.) What has been spent is the sum of the
ledger, read incrementally; so a rerun with a higher cap continues from what the earlier runs spent (games that
finished are skipped by their callers; a game stopped or killed mid-way is played again from its start with its
recorded calls replayed, not paid again: ``toolkit.llm.cache.Record``).

The API (used by ``toolkit.werewolf.game.play_games`` and by any runner above it):

- ``Budget.at(folder, max_usd=, max_tokens=, at_cap=)``: the budget of a study folder (None when no cap is set);
- ``spent()`` → (usd, tokens) so far, all processes and earlier runs included; ``left()`` → what remains;
- ``would_exceed(usd=0, tokens=0)``: True when spending that much more would pass a cap;
- ``exhausted()``: a cap is reached: no new game may start (``at_cap="stop"``: games in flight stop too);
- ``charge(usd, tokens)``: one call's spending (``CallLog`` does it for a call the model did not settle);
- ``reserve(usd, tokens, what)`` → a ticket whose ``settle(usd, tokens)`` says what the call cost; the model
  wrapper reserves every paid request made while the budget is ``spending`` (``active_budget``), and settles it
  unless its caller does after writing its row (``Model.generate(settle=False)``);
- ``check_prices(models)``: a dollar cap with a model whose price is unknown is refused up front (one line),
  rather than never firing; ``line()``: the one line a run ends with (spent, left, the caps).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import threading
import uuid
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from toolkit.core.printable import plural
from toolkit.llm.prices import price_of

LEDGER = "spend.jsonl"
AT_CAP = ("stop", "finish")  # what games in flight do when a cap is reached


class BudgetError(ValueError):
    """A cap that cannot work (unknown prices, a bad value): one line, raised before anything runs."""


class BudgetReached(RuntimeError):
    """A runner stopped at a spending cap before all its games were played; the message is ``Budget.line``.
    A sweep records the cell as capped (not done), so a rerun with a higher cap plays the rest."""


def check_cap(name: str, value: Any, kind: type) -> Any:
    """A cap's value: None (no cap) or a positive finite number (a whole one for tokens)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)) \
            or not math.isfinite(value) or value <= 0:
        raise BudgetError(f"{name} must be a positive {'whole number' if kind is int else 'number'}, got {value!r}")
    return kind(value)


@dataclass
class Budget:
    """A spending cap over a ledger file (see the module's docstring)."""

    ledger: Path
    max_usd: float | None = None
    max_tokens: int | None = None
    at_cap: str = "stop"
    _usd: float = 0.0
    _tokens: int = 0
    _offset: int = 0
    _pending: dict = field(default_factory=dict, repr=False)  # tickets read, not settled yet: their estimates
    _lock: Any = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.ledger = Path(self.ledger)
        self.max_usd = check_cap("max_usd", self.max_usd, float)
        self.max_tokens = check_cap("max_tokens", self.max_tokens, int)
        if self.at_cap not in AT_CAP:
            raise BudgetError(f"at_cap must be one of {', '.join(AT_CAP)}, not {self.at_cap!r}")

    @classmethod
    def at(cls, folder: str | Path, max_usd: float | None = None, max_tokens: int | None = None,
           at_cap: str = "stop") -> "Budget | None":
        """The budget of a study folder (its ledger is ``FOLDER/spend.jsonl``), or None without a cap."""
        if max_usd is None and max_tokens is None:
            return None
        return cls(Path(folder) / LEDGER, max_usd, max_tokens, at_cap)

    # ------------------------------------------------------------------ spending
    def charge(self, usd: float | None, tokens: int) -> None:
        """Append one call's spending to the ledger (an unknown price counts its tokens, and no dollars: the
        price check refused a dollar cap on such a model before anything ran)."""
        usd = float(usd or 0.0)
        if usd <= 0 and tokens <= 0:
            return
        self._append({"usd": round(usd, 9), "tokens": int(tokens)})

    def reserve(self, usd: float | None, tokens: int, what: str = "") -> "Ticket":
        """A call about to be sent, in the ledger at an estimate (``usd`` None: an unknown price, its tokens only)
        before it leaves: killed in flight, it stays there, as it stays on the provider's bill."""
        ticket = Ticket(self, f"{_PROCESS}-{next(_TICKETS)}")
        self._append({"pending": ticket.id, "usd": round(float(usd or 0.0), 9), "tokens": int(tokens),
                      **({"model": what} if what else {})})
        return ticket

    def _append(self, entry: dict[str, Any]) -> None:
        # A leading newline ends whatever a process that died mid-write left (that torn line is skipped, this
        # one is whole); empty lines are skipped.
        line = "\n" + json.dumps(entry) + "\n"
        self.ledger.parent.mkdir(parents=True, exist_ok=True)
        # One write of one short line to a file opened O_APPEND: processes appending at once never interleave.
        fd = os.open(self.ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def spent(self) -> tuple[float, int]:
        """(US dollars, tokens) spent so far by every process and every earlier run of the study."""
        with self._lock:
            try:
                with open(self.ledger, "rb") as handle:
                    handle.seek(self._offset)
                    data = handle.read()
            except FileNotFoundError:
                return self._usd, self._tokens
            end = data.rfind(b"\n") + 1  # a line still being written is read next time
            for raw in data[:end].splitlines():
                if not raw.strip():
                    continue
                try:
                    entry = json.loads(raw)
                    usd, tokens = float(entry.get("usd", 0.0)), int(entry.get("tokens", 0))
                except (ValueError, TypeError, AttributeError):
                    continue  # a damaged line (a disk that filled up): it says nothing it could be trusted for
                if "pending" in entry:  # counted at its estimate until it settles
                    self._pending[str(entry["pending"])] = (usd, tokens)
                elif "settles" in entry:  # the estimate replaced by what the call cost
                    before = self._pending.pop(str(entry["settles"]), (0.0, 0))
                    usd, tokens = usd - before[0], tokens - before[1]
                self._usd += usd
                self._tokens += tokens
            self._offset += end
            return self._usd, self._tokens

    def left(self) -> tuple[float | None, int | None]:
        """What remains under each cap (None for a cap that is not set; never below 0)."""
        usd, tokens = self.spent()
        return (None if self.max_usd is None else max(0.0, self.max_usd - usd),
                None if self.max_tokens is None else max(0, self.max_tokens - tokens))

    def would_exceed(self, usd: float = 0.0, tokens: int = 0) -> bool:
        """Spending ``usd`` and ``tokens`` more would pass a cap (with 0 and 0: a cap is already passed)."""
        spent_usd, spent_tokens = self.spent()
        return ((self.max_usd is not None and spent_usd + usd > self.max_usd)
                or (self.max_tokens is not None and spent_tokens + tokens > self.max_tokens))

    def exhausted(self) -> bool:
        """A cap is reached: no new game may start."""
        spent_usd, spent_tokens = self.spent()
        return ((self.max_usd is not None and spent_usd >= self.max_usd)
                or (self.max_tokens is not None and spent_tokens >= self.max_tokens))

    # ------------------------------------------------------------------ checks and the last line
    def check_prices(self, models: Iterable[Any]) -> None:
        """Refuse a dollar cap when a model's price is unknown (its calls would cost "unknown" and the cap
        would never fire). ``models`` are ``toolkit.llm.Model``s; offline backends cost nothing."""
        if self.max_usd is None:
            return
        unknown = sorted({m.spec for m in models if not m.backend.free and price_of(m.name) is None})
        if unknown:
            raise BudgetError(f"a dollar cap (--max-usd, max_usd) needs a price for every model, and "
                              f"{', '.join(unknown)} has none: add it to a TOOLKIT_PRICES file (USD per million "
                              "tokens), or cap tokens with --max-tokens")

    def line(self, stopped: int = 0, skipped: int = 0, unit: str = "game") -> str:
        """``budget: spent $1.23 of $5.00 ($3.77 left), 40,000 of 100,000 tokens (60,000 left)``, and what the
        cap did to this run's games (``unit``: what the run plays, ``session`` for an engineer cell)."""
        text = "budget: " + self.spent_text()
        if skipped or stopped:
            text += (f"; cap reached: {plural(skipped, unit)} not started, {stopped} stopped "
                     "unfinished (a rerun with a higher cap plays them)")
        if pending := len(self._pending):  # read by spent() above: the ledger's tickets with no settles line
            text += (f"; {plural(pending, 'call')} of unknown outcome counted at their estimate (in flight at a "
                     "kill or cut by an endpoint's deadline; the estimate: the prompt, and the answer's limit where "
                     "one is set: the bill may differ by the answers' tokens)")
        return text

    def spent_text(self) -> str:
        """``spent $1.23 of $5.00 ($3.77 left), 40,000 of 100,000 tokens (60,000 left)``."""
        usd, tokens = self.spent()
        parts = []
        if self.max_usd is not None:
            parts.append(f"spent ${usd:.4f} of ${_dollars(self.max_usd)} (${max(0.0, self.max_usd - usd):.4f} left)")
        elif usd > 0:  # no dollar cap: dollars shown where prices were known
            parts.append(f"spent ${usd:.4f}")
        if self.max_tokens is not None:
            parts.append(f"{tokens:,} of {self.max_tokens:,} tokens ({max(0, self.max_tokens - tokens):,} left)")
        else:
            parts.append(f"{tokens:,} tokens")
        return ("" if self.max_usd is not None or usd > 0 else "spent ") + ", ".join(parts)

    def describe(self) -> dict[str, Any]:
        """The caps as a run's config keeps them."""
        return {"max_usd": self.max_usd, "max_tokens": self.max_tokens, "at_cap": self.at_cap,
                "ledger": str(self.ledger)}


_PROCESS = uuid.uuid4().hex[:8]  # tickets of different processes (and reruns) never share an id
_TICKETS = itertools.count(1)


@dataclass
class Ticket:
    """A call in the ledger before it was sent; ``settle`` once, when it is answered or has failed."""

    budget: Budget
    id: str
    settled: bool = False

    def settle(self, usd: float | None, tokens: int) -> None:
        if not self.settled:
            self.settled = True
            self.budget._append({"settles": self.id, "usd": round(float(usd or 0.0), 9), "tokens": int(tokens)})


_SPENDING: ContextVar[Budget | None] = ContextVar("toolkit_budget", default=None)


@contextmanager
def spending(budget: Budget | None) -> Iterator[None]:
    """Every paid model call made inside (this task and the tasks it starts) is reserved in ``budget``'s ledger
    before it is sent and settled when it comes back (``toolkit.llm.model.Model.generate``)."""
    token = _SPENDING.set(budget)
    try:
        yield
    finally:
        _SPENDING.reset(token)


def active_budget() -> Budget | None:
    """The budget the calls made here are reserved in, or None."""
    return _SPENDING.get()


def _dollars(usd: float) -> str:
    """A cap as it was set: cents where it has none finer (``5.00``, ``0.03``), else up to 4 decimals (``0.012``,
    not ``0.01``: a cap rounded down made a stop look overspent)."""
    return f"{usd:.2f}" if round(usd, 2) == usd else f"{usd:.4f}".rstrip("0")
