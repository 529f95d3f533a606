"""Where a report is while it renders, for a reader waiting on a slow section (the example's beliefs section takes
about a minute): the report says which part it starts (``part``) and, inside a part, each table it computes
condition by condition (``step``, from ``toolkit.analysis.report.per_condition``); whoever listens shows it: the
command line's progress bar on stderr (``toolkit report``, silent with ``--quiet``), the results explorer's busy
line. Nobody listening, nothing is done. The listener is a context variable, so a part rendered in another thread
(the explorer's) reports only to the listener that thread set."""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Iterator, Protocol


class Listener(Protocol):
    def part(self, index: int, total: int, title: str) -> None: ...  # part ``index`` (1-based) of ``total`` starts
    def step(self, text: str) -> None: ...  # what the part computes now


_listener: ContextVar[Listener | None] = ContextVar("toolkit_report_progress", default=None)


@contextlib.contextmanager
def listening(listener: Listener | None) -> Iterator[None]:
    """Within the block, the report's progress goes to ``listener`` (None: nowhere)."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def part(index: int, total: int, title: str) -> None:
    listener = _listener.get()
    if listener is not None:
        listener.part(index, total, title)


def step(text: str) -> None:
    listener = _listener.get()
    if listener is not None:
        listener.step(text)
