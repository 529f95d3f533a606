"""The report of an adaptive tournament (``toolkit.study.adaptive`` writes it as ``adaptive.md``): the method and
its constants, what was asked and decided, how many games each decision took, what the fixed design of equal
error and power needs and the cap, the spend per model, and — given a fixed run's tables — both designs'
verdicts side by side (``compare_designs``)."""

from __future__ import annotations

import math

import pandas as pd

from toolkit.analysis.ratings import separation
from toolkit.analysis.sequential import METHOD, Coordinator


def _num(x: float, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return "∞" if x == math.inf else "−∞" if x == -math.inf else f"{x:.{digits}f}"


def _md(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(none)\n"
    head = "| " + " | ".join(frame.columns) + " |\n|" + "---|" * len(frame.columns) + "\n"
    return head + "".join("| " + " | ".join(str(v) for v in row) + " |\n" for row in frame.itertuples(index=False))


def costs(tables, coordinator: Coordinator) -> pd.DataFrame:
    """Per model: games played (either side), US dollars its calls cost, spend per game and per decided
    comparison it is in (None where a price is unknown or nothing was decided)."""
    players = tables.players.drop_duplicates(["game_id", "spec"])
    games = players.groupby("spec")["game_id"].nunique()
    calls = tables.calls
    rows = []
    models = list(dict.fromkeys(m for c in coordinator.comps for m in (c.a, c.b)))
    for model in models:
        mine = calls[calls["spec"] == model] if len(calls) else calls
        cost = pd.to_numeric(mine.get("cost_usd", pd.Series(dtype=float)), errors="coerce")
        usd = None if cost.isna().any() else float(cost.sum())
        n = int(games.get(model, 0))
        decided = sum(1 for c in coordinator.comps if c.decided and model in (c.a, c.b))
        rows.append({"spec": model, "games": n, "usd": usd,
                     "usd_per_game": usd / n if usd is not None and n else None,
                     "usd_per_decided": usd / decided if usd is not None and decided else None})
    return pd.DataFrame(rows)


def adaptive_report(coordinator: Coordinator, tables, stopped: str, fixed: int, cap: int) -> str:
    t = coordinator.table()
    d0 = next(iter(coordinator.designs.values()))
    sizes = "; ".join(f"{p}: village rate {d.p_village:.3f}, δ = {d.mu_delta:.3f} in win rate, {d.looks_text()}, "
                      f"fixed design {d.n_fixed} pairs" for p, d in coordinator.designs.items())
    lines = ["# Adaptive tournament\n",
             f"**Method**: {METHOD} (`toolkit.analysis.sequential`; docs/statistics.md, \"Adaptive tournaments\"). "
             f"Family-wise error α = {d0.alpha:g} over the K = {d0.k} comparisons asked (each at "
             f"{d0.alpha / d0.k:.4f}), power {d0.power:g} at a difference of {d0.delta:g} logits on each side "
             f"({sizes}). The chance that any verdict names the wrong order is at most {d0.alpha:g} whenever the "
             "run stopped (a \"within ±δ\" verdict is final: the futility bounds are binding). \"within ±δ\" says "
             "a difference of δ would have been found with the design's power "
             f"(its error is at most {1 - d0.power:.2g} at a true difference of δ, as for a fixed design that "
             "cannot separate two models). \"no order at the cap\": the last look crossed neither bound (its "
             "statistic between the two continuity-corrected ones); no order is named, and no \"within\" was "
             "earned.\n",
             f"**Stopped**: {stopped}, after {coordinator.games} games in {coordinator.rounds} rounds; "
             f"{coordinator.decided} of {len(coordinator.comps)} comparisons decided.\n",
             f"**Fixed design of the same error and power** (every comparison's side-swapped pairs at once, one "
             f"analysis at the end): {fixed} games; this design's cap {cap} games ({cap / max(fixed, 1):.2f} × "
             f"fixed). This run played {coordinator.games} ({coordinator.games / max(fixed, 1):.0%} of the "
             "fixed design).\n",
             "## What was asked and what was decided\n",
             "μ = how much more often a's side won than b's, per game, averaged over the two sides (a side-swapped "
             "pair scores (a's wins − b's wins) / 2); the interval is the repeated confidence interval, "
             f"simultaneous over the {d0.k} comparisons and every look, frozen when the comparison was decided; "
             "`games` is the tournament's games when the verdict came.\n"]
    shown = pd.DataFrame({"preset": t["preset"], "comparison": t["a"] + " vs " + t["b"], "verdict": t["verdict"],
                          "μ": t["estimate"].map(_num),
                          "interval": [f"{_num(lo)} to {_num(hi)}" for lo, hi in zip(t["ci_low"], t["ci_high"])],
                          "pairs": t["pairs"], "looks": t["looks"],
                          "round": t["decided_round"].map(lambda x: "—" if pd.isna(x) else int(x)),
                          "games": t["decided_games"].map(lambda x: "—" if pd.isna(x) else int(x))})
    lines.append(_md(shown))
    c = costs(tables, coordinator)
    lines.append("\n## Spend\n")
    lines.append("Per model: the games it played, what its own calls cost, per game and per decided comparison it "
                 "is in.\n")
    lines.append(_md(pd.DataFrame({"spec": c["spec"], "games": c["games"], "$": c["usd"].map(lambda x: _num(x, 4)),
                                   "$ per game": c["usd_per_game"].map(lambda x: _num(x, 4)),
                                   "$ per decided comparison": c["usd_per_decided"].map(lambda x: _num(x, 4))})))
    return "\n".join(lines)


def compare_designs(coordinator: Coordinator, fixed_tables) -> str:
    """Markdown: for every comparison asked, the adaptive verdict and interval beside the fixed run's (its
    Bradley–Terry difference per side, interval and Holm-separated verdict, as the report prints them), with
    the games each design played."""
    rows = []
    t = coordinator.table()
    for preset, part in t.groupby("preset", sort=False):
        g = fixed_tables.games[fixed_tables.games["preset"] == preset]
        sep = separation(g, fixed_tables.players[fixed_tables.players["game_id"].isin(set(g["game_id"]))])
        for r in part.itertuples():
            fixed = []
            for side in ("village", "werewolves"):
                hit = sep[(sep["side"] == side) & (((sep["a"] == r.a) & (sep["b"] == r.b))
                                                   | ((sep["a"] == r.b) & (sep["b"] == r.a)))]
                if len(hit):
                    h = hit.iloc[0]
                    d, lo, hi = h["diff"], h["ci_low"], h["ci_high"]
                    if h["a"] != r.a:
                        d, lo, hi = -d, -hi, -lo
                    fixed.append(f"{side}: {h['verdict']} ({_num(d)}, {_num(lo)} to {_num(hi)})")
            rows.append({"preset": preset, "comparison": f"{r.a} vs {r.b}", "adaptive verdict": r.verdict,
                         "adaptive μ": _num(r.estimate),
                         "adaptive interval": f"{_num(r.ci_low)} to {_num(r.ci_high)}",
                         "fixed verdicts (Δ logits, interval)": "; ".join(fixed) or "not played"})
    n_fixed = int(fixed_tables.games["game_id"].nunique())
    head = (f"## Adaptive and fixed designs on the same models\n\nAdaptive: {coordinator.games} games; fixed: "
            f"{n_fixed} games. The fixed verdicts are per side, Holm-separated at 0.05 with one analysis at the "
            "end; the adaptive ones are head-to-head over both sides and hold at family-wise "
            f"{next(iter(coordinator.designs.values())).alpha:g} under their own stopping.\n\n")
    return head + _md(pd.DataFrame(rows))
