"""The adaptive tournament in a notebook: ``AdaptiveTournament(FILE).run()`` plays it (``toolkit.study.adaptive``,
the same loop as ``toolkit tournament FILE --adaptive``, with its progress bar) and, after every round, shows
the current ratings per side with their anytime intervals and every comparison asked with its verdict,
interval and the games it took; a line above counts the games as each one ends. A rerun resumes."""

from __future__ import annotations

import html

import ipywidgets as W
import pandas as pd

from toolkit.study.adaptive import Status, adaptive_spec, run_adaptive


def _fmt(x: float) -> str:
    return "∞" if x == float("inf") else "−∞" if x == float("-inf") else f"{x:.2f}"


def status_html(status: Status) -> str:
    """The state after a round as HTML: a line of totals and the comparisons."""
    co = status.coordinator
    nxt, most = status.left()
    spend = "unknown" if status.spend is None else f"${status.spend:.2f}"
    head = (f"<p><b>{html.escape(status.name)}</b>: round {co.rounds}, {status.games} games, spend {spend}; "
            f"{co.decided} of {len(co.comps)} comparisons decided; next round {nxt} games (at most {most} left)"
            + (f"; stopped: {html.escape(status.stopped)}" if status.stopped else "") + "</p>")
    t = co.table()
    rows = "".join(f"<tr><td>{html.escape(x.preset)}</td><td>{html.escape(x.a)} vs "
                   f"{html.escape(x.b)}</td><td>{html.escape(x.verdict)}</td><td>{_fmt(x.estimate)}</td>"
                   f"<td>{_fmt(x.ci_low)} to {_fmt(x.ci_high)}</td><td>{x.pairs}</td>"
                   f"<td>{'' if pd.isna(x.decided_games) else int(x.decided_games)}</td></tr>"
                   for x in t.itertuples())
    comps = ("<table><tr><th>preset</th><th>comparison</th><th>verdict</th><th>μ</th>"
             "<th>interval</th><th>pairs</th><th>games at verdict</th></tr>" + rows + "</table>")
    return head + comps


class AdaptiveTournament(W.VBox):
    def __init__(self, path: str, results_root: str = "results", max_games: int | None = None,
                 max_usd: float | None = None):
        self.spec = adaptive_spec(path)
        self.results_root, self.max_games, self.max_usd = results_root, max_games, max_usd
        self.view = W.HTML(f"<p>{html.escape(self.spec['name'])}: not started</p>")
        self.games = W.HTML()  # games played so far, as each one ends
        self.status: Status | None = None
        super().__init__([self.games, self.view])

    def update(self, status: Status) -> None:
        self.status = status
        self.view.value = status_html(status)

    def game_done(self, played: int) -> None:
        self.games.value = f"<p>{played} games played</p>"

    def run(self) -> Status:
        status = run_adaptive(self.spec, self.results_root, max_games=self.max_games, max_usd=self.max_usd,
                              on_round=self.update, on_game=self.game_done)
        self.update(status)
        return status
