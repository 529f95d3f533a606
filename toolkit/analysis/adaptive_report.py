"""The report of an adaptive tournament (``toolkit.study.adaptive`` writes it as ``adaptive.md``): the method and
its constants, what was asked and decided, how many games each decision took, what the fixed design of equal
error and power would have needed, the ratings with their anytime intervals and the spend beside each, and —
given a fixed run's tables — both designs' verdicts side by side (``compare_designs``)."""

from __future__ import annotations

import math

import pandas as pd

from toolkit.analysis.ratings import fit_ratings, separation
from toolkit.analysis.sequential import METHOD, Monitor, fixed_games


def _num(x: float, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return "∞" if x == math.inf else "−∞" if x == -math.inf else f"{x:.{digits}f}"


def _md(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(none)\n"
    head = "| " + " | ".join(frame.columns) + " |\n|" + "---|" * len(frame.columns) + "\n"
    return head + "".join("| " + " | ".join(str(v) for v in row) + " |\n" for row in frame.itertuples(index=False))


def costs(tables, monitor: Monitor) -> pd.DataFrame:
    """Per model: games played (either side), US dollars its calls cost, spend per game and per decided
    comparison it is in (None where a price is unknown or nothing was decided)."""
    players = tables.players.drop_duplicates(["game_id", "spec"])
    games = players.groupby("spec")["game_id"].nunique()
    calls = tables.calls
    rows = []
    for model in monitor.models:
        mine = calls[calls["spec"] == model] if len(calls) else calls
        cost = pd.to_numeric(mine.get("cost_usd", pd.Series(dtype=float)), errors="coerce")
        usd = None if cost.isna().any() else float(cost.sum())
        n = int(games.get(model, 0))
        decided = sum(1 for c in monitor.comps if not c.open and c.verdict != "undecided at the horizon"
                      and model in (c.a, c.b))
        rows.append({"spec": model, "games": n, "usd": usd,
                     "usd_per_game": usd / n if usd is not None and n else None,
                     "usd_per_decided": usd / decided if usd is not None and decided else None})
    return pd.DataFrame(rows)


def plug_in_fixed(tables, monitor: Monitor) -> int | None:
    """Games the fixed design of the same error and power would have needed at the strengths the recorded
    games suggest (the Bradley–Terry fit, per preset, summed over presets)."""
    total = 0
    for preset in dict.fromkeys(c.preset for c in monitor.comps):
        g = tables.games[tables.games["preset"] == preset]
        f = fit_ratings(g, tables.players[tables.players["game_id"].isin(set(g["game_id"]))])
        if f is None:
            return None
        est = {name: float(b) for name, b in zip(f.design.names, f.beta[1:])}
        village = {m: est.get((m, "village"), 0.0) for m in monitor.models}
        wolves = {m: est.get((m, "werewolves"), 0.0) for m in monitor.models}
        total += fixed_games(village, wolves, float(f.beta[0]), monitor.plan)
    return total


def adaptive_report(monitor: Monitor, tables, stopped: str, fixed_planned: int, round_games: int) -> str:
    plan = monitor.plan
    t = monitor.table()
    lines = ["# Adaptive tournament\n",
             f"**Method**: {METHOD} (`toolkit.analysis.sequential`; docs/statistics.md, \"Adaptive tournaments\"). "
             f"Family-wise error α = {plan.alpha:g} over the K = {plan.k} comparisons asked (each at "
             f"{plan.alpha / plan.k:.4f}), power {plan.power:g} at a true difference of {plan.delta:g} logits; "
             f"horizon {plan.horizon} discordant pairs per comparison, boundary ±{plan.bound}. Every verdict and "
             "interval below holds whenever the run stopped: the chance that any verdict names the wrong order "
             f"is at most {plan.alpha:g}.\n",
             f"**Stopped**: {stopped}, after {monitor.games} games in {monitor.rounds} rounds "
             f"({round_games} games per round).\n",
             f"**Fixed design of the same error and power** (every ordered pair equally often, one analysis at the "
             f"end): {fixed_planned} games planned at equal models and an even side"]
    plug = plug_in_fixed(tables, monitor) if len(tables.games) else None
    if plug is not None:
        lines[-1] += f"; {plug} at the strengths these games suggest"
    lines[-1] += f". This run played {monitor.games} ({monitor.games / max(fixed_planned, 1):.0%} of the planned).\n"
    lines.append("## What was asked and what was decided\n")
    lines.append("Δ = a − b in logits (positive: a stronger on that side); the interval is the repeated "
                 f"confidence interval (simultaneous over the {plan.k} comparisons and every look); `games` is "
                 "the tournament's games when the verdict came.\n")
    shown = pd.DataFrame({"preset": t["preset"], "side": t["side"], "comparison": t["a"] + " vs " + t["b"],
                          "verdict": t["verdict"], "Δ": t["estimate"].map(_num),
                          "interval": [f"{_num(lo)} to {_num(hi)}" for lo, hi in zip(t["ci_low"], t["ci_high"])],
                          "pairs": t["pairs"],
                          "round": t["decided_round"].map(lambda x: "—" if pd.isna(x) else int(x)),
                          "games": t["decided_games"].map(lambda x: "—" if pd.isna(x) else int(x))})
    lines.append(_md(shown))
    r = monitor.ratings()
    if len(r):
        c = costs(tables, monitor).set_index("spec")
        lines.append("\n## Ratings, with spend\n")
        lines.append("Strength relative to the average model of the side (logits), its interval implied by the "
                     "comparisons' simultaneous intervals; spend per game the model played and per decided "
                     "comparison it is in (its own calls only).\n")
        shown = pd.DataFrame({"preset": r["preset"], "side": r["side"], "spec": r["spec"],
                              "rating": r["rating"].map(_num),
                              "interval": [f"{_num(lo)} to {_num(hi)}" for lo, hi in zip(r["ci_low"], r["ci_high"])],
                              "games": r["spec"].map(c["games"]),
                              "$ per game": r["spec"].map(c["usd_per_game"]).map(lambda x: _num(x, 4)),
                              "$ per decided comparison": r["spec"].map(c["usd_per_decided"]).map(
                                  lambda x: _num(x, 4))})
        lines.append(_md(shown))
    else:  # not every pair of a side was asked, so there is no anytime rating; the spend still is
        c = costs(tables, monitor)
        lines.append("\n## Spend\n")
        lines.append("Per model: the games it played, what its own calls cost, per game and per decided comparison "
                     "it is in (ratings with anytime intervals need every pair of a side asked).\n")
        lines.append(_md(pd.DataFrame({"spec": c["spec"], "games": c["games"], "$": c["usd"].map(lambda x: _num(x, 4)),
                                       "$ per game": c["usd_per_game"].map(lambda x: _num(x, 4)),
                                       "$ per decided comparison": c["usd_per_decided"].map(lambda x: _num(x, 4))})))
    return "\n".join(lines)


def compare_designs(monitor: Monitor, fixed_tables) -> str:
    """Markdown: for every comparison asked, the adaptive verdict and interval beside the fixed run's
    (its Bradley–Terry difference, interval and Holm-separated verdict, as the report prints them), with
    the games each design played."""
    rows = []
    t = monitor.table()
    for preset, part in t.groupby("preset", sort=False):
        g = fixed_tables.games[fixed_tables.games["preset"] == preset]
        sep = separation(g, fixed_tables.players[fixed_tables.players["game_id"].isin(set(g["game_id"]))])
        for r in part.itertuples():
            hit = sep[(sep["side"] == r.side) & (((sep["a"] == r.a) & (sep["b"] == r.b))
                                                 | ((sep["a"] == r.b) & (sep["b"] == r.a)))]
            if len(hit):
                h = hit.iloc[0]
                flip = h["a"] != r.a
                d, lo, hi = h["diff"], h["ci_low"], h["ci_high"]
                if flip:
                    d, lo, hi = -d, -hi, -lo
                fixed = (h["verdict"], _num(d), f"{_num(lo)} to {_num(hi)}")
            else:
                fixed = ("not played", "—", "—")
            rows.append({"preset": preset, "side": r.side, "comparison": f"{r.a} vs {r.b}",
                         "adaptive verdict": r.verdict, "adaptive Δ": _num(r.estimate),
                         "adaptive interval": f"{_num(r.ci_low)} to {_num(r.ci_high)}",
                         "fixed verdict": fixed[0], "fixed Δ": fixed[1], "fixed interval": fixed[2]})
    n_fixed = int(fixed_tables.games["game_id"].nunique())
    agree = sum(1 for r in rows if r["adaptive verdict"] == r["fixed verdict"])
    head = (f"## Adaptive and fixed designs on the same models\n\nAdaptive: {monitor.games} games; fixed: "
            f"{n_fixed} games. Verdicts agree on {agree} of {len(rows)} comparisons. The fixed verdicts are "
            "Holm-separated at 0.05 with one analysis at the end; the adaptive ones hold at family-wise "
            f"{monitor.plan.alpha:g} under their own stopping (a fixed run's intervals are narrower for its "
            "games, but it could not have stopped early).\n\n")
    return head + _md(pd.DataFrame(rows))
