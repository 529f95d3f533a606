"""Metrics a study adds to the report: each one ``Metric`` registered by name, each a section of the werewolf
report (``toolkit.analysis.report``), computed per condition as the report's own tables are.

A metric is a function of one condition's tables (``toolkit.record.load.Results``) returning a frame with one row
per group it measures; the statistics rule holds for it as for the report's own tables: every rate comes with
its interval and its n, so the frame must hold ``ci_low``, ``ci_high`` and ``n`` (or ``n_games``), and the note
says what the rate is compared with (the information-free strategy, or why there is none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import pandas as pd

from toolkit.core.registry import Registry

__all__ = ["METRICS", "Metric", "register"]


@dataclass(frozen=True)
class Metric:
    name: str
    title: str  # the section's heading
    compute: Callable[[Any], pd.DataFrame]  # one condition's Results -> one row per group
    note: str  # what it measures, against what
    # the calls columns compute reads (the report loads only the columns some section reads: at 100,000 games the
    # calls table is most of its memory); None: every column but the prompts (``messages``), which it may name
    calls: tuple[str, ...] | None = None

    def check(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The frame, refused when a rate has no interval or no n (the report's own standard)."""
        missing = [c for c in ("ci_low", "ci_high") if c not in frame.columns]
        if not {"n", "n_games"} & set(frame.columns):
            missing.append("n or n_games")
        if len(frame) and missing:
            raise ValueError(f"metric {self.name}: its table has no {', '.join(missing)} (every rate in the "
                             "report comes with its interval and its n)")
        return frame


def _check(metric: Metric) -> None:
    if not metric.note.strip():
        raise ValueError(f"a metric needs a name and a note saying what it compares with: {metric!r}")


METRICS: Registry[Metric] = Registry("metric", check=_check)
register = METRICS.register
METRICS.seal()  # none built in: a metric is a study's own
