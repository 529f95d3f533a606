"""``python -m toolkit report DIR``: the plots as PNGs and a Markdown summary with the tables, in DIR.

A report that cannot mislead: every table is split by the conditions (run parameters that differ between
runs, and the preset) — nothing is pooled across them, and the summary says what it split by; conditions
whose games are identical are named as such; every table and plot shows n; count and cost axes start at 0;
estimated token counts are marked.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from toolkit import analysis as A
from toolkit.analysis import plots as P
from toolkit.analysis import progress
from toolkit.analysis.report_tables import Part, markdown_table, report_columns
from toolkit.core.files import inside
from toolkit.record.load import load


# the engineer table's rows are ``intervals.proportion``: exact below EXACT_BELOW sessions, Wilson from there
ENGINEER_HEADER = ("## Engineer success by model (95% intervals: exact below 30 sessions, else Wilson, as `method` "
                   "says; n = sessions)\n")


class Report:
    """A results folder's report as its parts, in order (``Part``): the tables are read once, each part is
    rendered when asked for and writes its plots into ``out``. ``write_report`` renders them all; the results
    explorer renders the summary first and the other parts when a reader opens them."""

    def __init__(self, folder: str | Path, out: str | Path | None = None, include_degraded: bool = False):
        self.folder = Path(folder)
        self.out = Path(out or folder)
        self.tables = tables = load(self.folder, complete_games=True, columns=report_columns())
        if not len(tables.games) and not len(tables.sessions):
            raise ValueError(f"{self.folder}: no finished games or sessions to report on")
        self.written: list[Path] = []
        self.parts = [Part("Report", self._header, eager=True)]
        if len(tables.games):
            from toolkit.analysis.werewolf_sections import parts

            self.parts += parts(tables, self.out, self.written, self.folder, include_degraded)
        if len(tables.sessions):
            self.parts.append(Part("Engineer sessions", self._engineer, eager=True))

    def render(self, part: Part) -> str:
        """One part's Markdown (its plots written into ``out``); its start and its steps go to the progress
        listener (``toolkit.analysis.progress``), if any."""
        self.out.mkdir(parents=True, exist_ok=True)
        progress.part(self.parts.index(part) + 1, len(self.parts), part.title)
        return "\n".join(part.render())

    def _header(self) -> list[str]:
        tables, folder = self.tables, self.folder
        calls = f"model calls: {len(tables.calls)}"
        if not len(tables.calls) and len(tables.games):
            calls = (f"model calls: {int(pd.to_numeric(tables.games['n_calls'], errors='coerce').sum())} (counted "
                     "in the games table; these results do not include the calls table)")
        s = [f"# Report: {folder}\n", f"Runs: {len(tables.runs)}, games: {len(tables.games)}, "
             f"sessions: {len(tables.sessions)}, {calls}.\n"]
        adaptive = folder / "adaptive.md"
        if adaptive.exists() and len(tables.games):  # the games of an adaptive tournament stopped on their own data
            s += ["## An adaptive tournament\n",
                  "These games come from an adaptive tournament that chose its games and its stopping time from the "
                  "results as they came. The ratings' intervals and the separation verdicts further down are "
                  "fixed-sample ones and do not account for that. The verdicts and intervals that do are these "
                  "(from `adaptive.md`):\n",
                  adaptive.read_text().replace("# Adaptive tournament\n", "", 1).replace("\n## ", "\n### ")]
        return s

    def _engineer(self) -> list[str]:
        tables, out = self.tables, self.out
        sessions = tables.sessions.copy()
        self.written.append(P.save(P.plot_tool_usage(tables.tool_calls, sessions), inside(out, "tool_usage", ".png")))
        self.written.append(P.save(P.plot_success_vs_steps(sessions), inside(out, "success_vs_steps", ".png")))
        return [ENGINEER_HEADER, markdown_table(A.engineer_success(sessions)), "## Tool usage by model\n",
                markdown_table(A.tool_usage(tables.tool_calls, sessions)[
                    ["spec", "tool", "calls", "n", "error_rate", "ci_low", "ci_high"]]),
                "![tool usage](tool_usage.png)\n", "![success vs steps](success_vs_steps.png)\n"]


def write_report(folder: str | Path, out: str | Path | None = None, include_degraded: bool = False) -> list[Path]:
    """Every part of ``folder``'s report, in order: the plots and ``summary.md`` in ``out`` (default: ``folder``).
    Degraded games (``games.degraded``) are counted beside every table and left out of the ratings unless
    ``include_degraded``."""
    report = Report(folder, out, include_degraded)
    text = "\n".join(t for t in (report.render(p) for p in report.parts) if t)
    summary = inside(report.out, "summary", ".md")
    summary.write_text(text)
    return report.written + [summary]
