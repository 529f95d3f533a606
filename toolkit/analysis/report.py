"""``python -m toolkit report DIR``: the plots as PNGs and a Markdown summary with the tables, in DIR.

A report that cannot mislead: every table is split by the conditions (run parameters that differ between
runs, and the preset) — nothing is pooled across them, and the summary says what it split by; conditions
whose games are identical are named as such; every table and plot shows n; count and cost axes start at 0;
estimated token counts are marked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pandas as pd

from toolkit import analysis as A
from toolkit.analysis import plots as P
from toolkit.llm import parse_spec
from toolkit.analysis.prompt_cache import cached_share
from toolkit.record.load import Results, load


def markdown_table(df: pd.DataFrame, floats: str = "{:.3f}") -> str:
    if df is None or df.empty:
        return "(no rows)\n"
    cols = list(df.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):  # keeps each column's type: counts stay integers
        cells = [("" if v != v else floats.format(v)) if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# Kept for toolkit.widgets (ResultsExplorer); the report itself finds conditions with analysis.conditions.
def tokens_estimated(tables: Results) -> bool:
    """True when any token count comes from an estimate (offline players, providers without usage)."""
    calls = tables.calls
    if len(calls) and "usage_estimated" in calls.columns and calls["usage_estimated"].notna().any():
        return bool(calls["usage_estimated"].fillna(False).astype(bool).any())

    specs = set(tables.players["spec"].dropna()) | set(tables.sessions["spec"].dropna())
    return any(parse_spec(str(s))[0] not in ("openai", "local") for s in specs)


def games_with_params(tables: Results) -> pd.DataFrame:
    """The games table with each run's parameters as columns (a parameter the games table already has,
    such as ``preset``, keeps the games table's value)."""

    if tables.runs.empty:
        return tables.games.copy()
    params = pd.DataFrame([{"run_id": r.run_id, **{k: (json.dumps(v) if isinstance(v, (dict, list)) else v)
                                                   for k, v in json.loads(r.config or "{}").items()}}
                           for r in tables.runs.itertuples()])
    params = params.drop(columns=[c for c in params.columns if c in tables.games.columns and c != "run_id"])
    return tables.games.merge(params, on="run_id", how="left")


def _first_round_by_day(t: Results) -> pd.DataFrame:
    table = A.vote_accuracy(t.events, t.players, ["round", "day"])
    return table[table["round"] == "first"] if len(table) else table


def per_condition(func: Callable[[Results], pd.DataFrame], games: pd.DataFrame, tables: Results,
                  by: list[str]) -> pd.DataFrame:
    """``func`` on each condition's games alone, the condition's values as leading columns."""
    parts = []
    for key, g in A.groups(games, by):
        ids = set(g["game_id"])
        sub = Results(**{name: (getattr(tables, name)[getattr(tables, name)["game_id"].isin(ids)]
                                if "game_id" in getattr(tables, name).columns else getattr(tables, name))
                         for name in Results.__dataclass_fields__})
        sub.games = g
        out = func(sub)
        if out is not None and len(out):
            parts.append(out.assign(**key)[list(key) + list(out.columns)])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _werewolf_sections(tables: Results, out: Path, written: list[Path]) -> list[str]:
    games = games_with_params(tables)
    by = A.conditions(games)
    estimated = tokens_estimated(tables)
    s: list[str] = []
    if by:
        counts = games.groupby(by, dropna=False).size().rename("n").reset_index()
        s += [f"Every table below is split by **{', '.join(by)}** (the conditions that differ between runs); "
              "nothing is pooled across them.\n", markdown_table(counts)]
        same = A.identical_groups(games, tables.events, tables.players, by)
        for r in same.itertuples(index=False):
            s.append(f"**Identical games:** `{r.a}` and `{r.b}` played the same {r.identical} of their {r.games} "
                     "common seeds move for move: what differs between them had no effect on play, so they "
                     "are one sample, not two.\n")
    else:
        s.append(f"One condition: all {len(games)} games share their run parameters.\n")
    if estimated:
        s.append("Token counts are **estimated** (offline players or providers that report no usage), not "
                 "measured.\n")
    multi = tables.players["spec"].nunique() > 1

    written.append(P.save(P.plot_win_rates(games, by), out / "win_rates.png"))
    s += ["## Win rates by side (95% Wilson intervals; n = games)\n", markdown_table(A.win_rates(games, by)),
          "![win rates](win_rates.png)\n"]
    if multi:
        s += ["## Models: win rate by side and by role\n",
              "Per seat-game; intervals resample games. `n` counts seat-games, `n_games` games.\n",
              markdown_table(per_condition(lambda t: A.role_win_rates(t.games, t.players, ["spec", "side"]),
                                           games, tables, by)),
              markdown_table(per_condition(lambda t: A.role_win_rates(t.games, t.players, ["spec", "role"]),
                                           games, tables, by))]
        ratings = per_condition(lambda t: A.ratings(t.games, t.players, by_side=True), games, tables, by)
        for key, part in A.groups(ratings, by):
            name = "_".join(str(v) for v in key.values()) or "all"
            where = ", ".join(f"{k}={v}" for k, v in key.items())
            written.append(P.save(P.plot_ratings(part, title="Ratings by side" + (f": {where}" if where else "")),
                                  out / f"ratings_{name}.png"))
            s.append(f"![ratings](ratings_{name}.png)\n")
        s += ["## Ratings with a side term\n",
              "Bradley–Terry in logistic form, logit P(village wins) = side term + village strength − wolf "
              "strength; strengths of each side sum to 0; 95% intervals: bootstrap over games, never narrower "
              "than the fit's curvature. `n` = decided games.\n", markdown_table(ratings),
              "Overall (one strength per model on both sides, plus the side term):\n",
              markdown_table(per_condition(lambda t: A.ratings(t.games, t.players, by_side=False), games, tables,
                                           by)),
              "Which models the data can tell apart:\n",
              markdown_table(per_condition(lambda t: A.separation(t.games, t.players), games, tables, by)),
              "Elo per side (start 1200, K = 32; median and 95% interval over bootstrap replicates of the "
              "games in shuffled order, since Elo depends on the order; `elo_seed_order` = one pass in seed "
              "order):\n", markdown_table(per_condition(lambda t: A.elo(t.games, t.players), games, tables, by))]
        try:
            s += ["OpenSkill (Plackett–Luce) per side; interval mu ± 1.96 sigma:\n",
                  markdown_table(per_condition(lambda t: A.openskill_ratings(t.games, t.players), games, tables,
                                               by))]
        except ImportError:
            s.append("OpenSkill ratings: not computed (`pip install openskill` to add them).\n")

    vote_by = ["spec", "round"] if multi else ["round"]
    vote_plots = []
    for key, g in A.groups(games, by):
        name = "_".join(str(v) for v in key.values())
        ids = set(g["game_id"])
        fig = P.plot_vote_accuracy_by_day(tables.events[tables.events["game_id"].isin(ids)],
                                          tables.players[tables.players["game_id"].isin(ids)],
                                          "spec" if multi else None,
                                          title="Village vote accuracy by day vs chance" + (f": {key}" if key else ""))
        path = out / (f"vote_accuracy_{name}.png" if name else "vote_accuracy.png")
        written.append(P.save(fig, path))
        vote_plots.append(f"![vote accuracy]({path.name})\n")
    s += ["## Votes against chance\n",
          "Share of village-side ballots cast on a werewolf; `chance` = the share of wolves among the candidates "
          "each voter could pick; `lift` = rate − chance; intervals resample games. First-round and revote "
          "ballots are separate (`round`).\n",
          markdown_table(per_condition(lambda t: A.vote_accuracy(t.events, t.players, vote_by), games, tables, by)),
          "By day (first round, all village voters of the condition together; per model in the plot):\n",
          markdown_table(per_condition(_first_round_by_day, games, tables, by)),
          *vote_plots,
          "IRP (every village ballot on a wolf) and VSS (on days a wolf was exiled, ballots for that wolf), as the "
          "Kaggle Game Arena werewolf harness defines them; voting success = days a wolf was exiled:\n",
          markdown_table(per_condition(lambda t: A.irp(t.events, t.players), games, tables, by)),
          markdown_table(per_condition(lambda t: A.vss(t.events, t.players), games, tables, by)),
          markdown_table(per_condition(lambda t: A.voting_success(t.events, t.players), games, tables, by)),
          "## Survival and dominance\n",
          "KSR (seat survived to the end) by model and role; margin of win (living share of the winning side) "
          "and speed of win (1 / days) over won seat-games:\n",
          markdown_table(per_condition(lambda t: A.ksr(t.games, t.players), games, tables, by)),
          markdown_table(per_condition(lambda t: A.win_margin_speed(t.games, t.players), games, tables, by)),
          "## Night actions (intervals resample games; chance where a random choice scores)\n",
          markdown_table(per_condition(lambda t: A.night_actions(t.events, t.players, ["spec"] if multi else None),
                                       games, tables, by))]
    s += ["## Beliefs and deception\n"]
    if len(tables.beliefs):
        s += ["Identity inference (guessed role = true role) against chance, by model and day:\n",
              markdown_table(per_condition(lambda t: A.identity_accuracy(t.beliefs, t.players, ["spec", "day"]),
                                           games, tables, by)),
              "Brier score of the stated confidences (lower is better; `reference` = a guesser stating its "
              "accuracy):\n",
              markdown_table(per_condition(lambda t: A.brier(t.beliefs, t.players, ["spec"]), games, tables, by)),
              "The village's detection of the wolves by day:\n",
              markdown_table(per_condition(lambda t: A.wolf_detection(t.beliefs, t.players), games, tables, by))]
    else:
        s.append("The `beliefs` table is empty in these results (no player reflected with role guesses), so "
                 "identity inference, Brier scores and detection over time are not reported.\n")
    s += ["Claims in speeches checked against the truth (a role claim is false when it is not the speaker's "
          "role — concealment included; a check claim is false unless the Seer made that check):\n",
          markdown_table(per_condition(lambda t: A.lie_rates(t.events, t.players, ["spec", "side", "kind"]),
                                       games, tables, by)),
          "How often check claims were followed by the other village voters that day (false vs true claims; "
          "chance = 1 / (living − 1)):\n",
          markdown_table(per_condition(lambda t: A.false_claims_followed(t.events, t.players, t.beliefs),
                                       games, tables, by)),
          "Vote swing: share of the other voters' ballots on the player a speech accused or suspected, against "
          "chance:\n",
          markdown_table(per_condition(lambda t: A.vote_swing(t.events, t.players), games, tables, by))]
    written.append(P.save(P.plot_costs(games, by, estimated=estimated), out / "costs.png"))
    s += ["## Calls, tokens, cost and fallbacks per game (95% bootstrap intervals; n = games)\n",
          ("Token counts are estimated.\n" if estimated else ""),
          markdown_table(A.per_game_costs(games, by)), "![costs](costs.png)\n",
          *_cached_share_section(tables),
          f"Games needed for ±5 points on a win rate: {A.sample_size(0.05)} per condition (±10 points: "
          f"{A.sample_size(0.1)}).\n"]
    return s


def _cached_share_section(tables: Results) -> list[str]:
    """Prompt tokens a server took from its prompt cache, per model (measured usage only; calls answered by
    the response cache or with estimated usage are counted as excluded)."""
    share = cached_share(tables.calls)
    if share.empty or not share["prompt_tokens"].fillna(0).sum():
        return []
    return ["Prompt tokens served from the server's prompt cache, per model (measured usage only):\n",
            markdown_table(share)]


def write_report(folder: str | Path, out: str | Path | None = None) -> list[Path]:
    folder = Path(folder)
    out = Path(out or folder)
    tables = load(folder, complete_games=True)
    if not len(tables.games) and not len(tables.sessions):
        raise ValueError(f"{folder}: no finished games or sessions to report on")
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    calls = f"model calls: {len(tables.calls)}"
    if not len(tables.calls) and len(tables.games):
        calls = (f"model calls: {int(pd.to_numeric(tables.games['n_calls'], errors='coerce').sum())} (counted in "
                 "the games table; these results do not include the calls table)")
    sections = [f"# Report: {folder}\n", f"Runs: {len(tables.runs)}, games: {len(tables.games)}, "
                f"sessions: {len(tables.sessions)}, {calls}.\n"]
    if len(tables.games):
        sections += _werewolf_sections(tables, out, written)
    if len(tables.sessions):
        sessions = tables.sessions.copy()
        written.append(P.save(P.plot_tool_usage(tables.tool_calls, sessions), out / "tool_usage.png"))
        written.append(P.save(P.plot_success_vs_steps(sessions), out / "success_vs_steps.png"))
        sections += ["## Engineer success by model (Wilson; n = sessions)\n",
                     markdown_table(A.engineer_success(sessions)),
                     "## Tool usage by model\n",
                     markdown_table(A.tool_usage(tables.tool_calls, sessions)[
                         ["spec", "tool", "calls", "n", "error_rate", "ci_low", "ci_high"]]),
                     "![tool usage](tool_usage.png)\n", "![success vs steps](success_vs_steps.png)\n"]
    summary = out / "summary.md"
    out.mkdir(parents=True, exist_ok=True)
    summary.write_text("\n".join(sections))
    written.append(summary)
    return written
