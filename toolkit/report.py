"""``python -m toolkit report DIR``: the plots as PNGs and a Markdown summary with the tables, in DIR."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from toolkit import analysis as A
from toolkit import plots as P
from toolkit.experiments import run_params
from toolkit.results import load


def markdown_table(df: pd.DataFrame, floats: str = "{:.3f}") -> str:
    if df.empty:
        return "(no rows)\n"
    cols = list(df.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):  # keeps each column's type: counts stay integers
        cells = [floats.format(v) if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def varying(df: pd.DataFrame, candidates: list[str]) -> list[str]:
    return [c for c in candidates if c in df.columns and df[c].astype(str).nunique() > 1]


PARAMS = ["preset", "model", "wolf_model", "village_model", "reflection", "experience", "temperature"]


def write_report(folder: str | Path, out: str | Path | None = None) -> list[Path]:
    folder = Path(folder)
    out = Path(out or folder)
    tables = load(folder, complete_games=True)
    if not len(tables.games) and not len(tables.sessions):
        raise ValueError(f"{folder}: no finished games or sessions to report on")
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    sections = [f"# Report: {folder}\n", f"Runs: {len(tables.runs)}, games: {len(tables.games)}, "
                f"sessions: {len(tables.sessions)}, model calls: {len(tables.calls)}.\n"]
    if len(tables.games):
        games = run_params(tables)
        by = varying(games, PARAMS)
        written.append(P.save(P.plot_win_rates(games, by), out / "win_rates.png"))
        written.append(P.save(P.plot_vote_accuracy_by_day(tables.events, tables.players), out / "vote_accuracy.png"))
        written.append(P.save(P.plot_costs(games, by), out / "costs.png"))
        sections += ["## Win rates (95% Wilson intervals)\n", markdown_table(A.win_rates(games, by)),
                     "![win rates](win_rates.png)\n",
                     "## Village vote accuracy by day\n",
                     markdown_table(A.vote_accuracy(tables.events, tables.players, ["day"])),
                     "![vote accuracy](vote_accuracy.png)\n",
                     "## Voting success, key-role survival, night actions\n",
                     markdown_table(A.voting_success(tables.events, tables.players)),
                     markdown_table(A.key_role_survival(tables.players)),
                     markdown_table(A.night_actions(tables.events, tables.players)),
                     "## Calls, tokens, cost and fallbacks per game (95% bootstrap intervals)\n",
                     markdown_table(A.per_game_costs(games, by)), "![costs](costs.png)\n",
                     f"Games needed for ±5 points on a win rate: {A.sample_size(0.05)}.\n"]
        if tables.players["spec"].nunique() > 1:
            sections += ["## Model ratings (Bradley–Terry, bootstrap intervals)\n",
                         markdown_table(A.ratings(tables.games, tables.players))]
    if len(tables.sessions):
        sessions = tables.sessions.copy()
        written.append(P.save(P.plot_tool_usage(tables.tool_calls, sessions), out / "tool_usage.png"))
        written.append(P.save(P.plot_success_vs_steps(sessions), out / "success_vs_steps.png"))
        sections += ["## Engineer success by model\n", markdown_table(A.engineer_success(sessions)),
                     "## Tool usage by model\n",
                     markdown_table(A.tool_usage(tables.tool_calls, sessions)[
                         ["spec", "tool", "calls", "error_rate", "ci_low", "ci_high"]]),
                     "![tool usage](tool_usage.png)\n", "![success vs steps](success_vs_steps.png)\n"]
    summary = out / "summary.md"
    summary.write_text("\n".join(sections))
    written.append(summary)
    return written

