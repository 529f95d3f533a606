"""What a study found, in words and in its design: the village model × wolf model matrix of village win rates,
and a conclusions paragraph per condition generated from the report's own numbers (side balance, the
Bradley–Terry separation verdicts after Holm's correction, draws and errors). Nothing here is a new estimate:
every sentence quotes a rate with its interval and n, or a verdict of ``ratings.separation``.
"""

from __future__ import annotations

import pandas as pd

from toolkit.analysis.checks import fingerprints, labels
from toolkit.analysis.intervals import MIN_GAMES, groups, paired_difference, proportion
from toolkit.analysis.metrics import win_rates
from toolkit.analysis.ratings import interaction_test, opponent_differences, separation

# run parameters that assign models to seats: the matrix and the ratings are the split over them, so the
# conclusions and the matrix group by the other conditions only (the players table says who played what)
MODEL_PARAMS = ("model", "village_model", "wolf_model", "seats")
NONE = "(none)"


def _conditions(games: pd.DataFrame, by: list[str] | None) -> tuple[pd.DataFrame, list[str]]:
    by = [c for c in (by or []) if c not in MODEL_PARAMS]
    return games.drop(columns=[c for c in MODEL_PARAMS if c in games.columns and c not in by]), by


def side_models(players: pd.DataFrame) -> pd.DataFrame:
    """One row per game: the village's model and the wolves' model (``a+b`` when a side's seats hold several)."""
    wolf = players["role"].eq("Werewolf")
    label = lambda specs: "+".join(sorted({" ".join(str(s).split()) for s in specs}))  # noqa: E731 (one line)
    village = players[~wolf].groupby("game_id")["spec"].agg(label).rename("village_model")
    wolves = players[wolf].groupby("game_id")["spec"].agg(label).rename("wolf_model")
    return pd.concat([village, wolves], axis=1).reset_index()


def design_matrix(games: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Village win rate per (condition, village model, wolf model): k, n games, rate and its 95% interval (exact
    below 30 games, else Wilson). Draws and errors count as games the village did not win. Conditions that only
    assign models (``MODEL_PARAMS``) are not conditions here: the matrix is their split."""
    games, by = _conditions(games, by)
    # a game with no seat of a side (or no players rows) keeps its cell, named "(none)": nothing drops silently
    g = games.merge(side_models(players), on="game_id", how="left").fillna(
        {"village_model": NONE, "wolf_model": NONE})
    rows = []
    for key, part in groups(g, by + ["village_model", "wolf_model"]):
        rows.append(proportion(int((part["winner"] == "village").sum()), len(part), **key))
    return pd.DataFrame(rows)


def matrix_text(table: pd.DataFrame) -> pd.DataFrame:
    """The design matrix as a village-model × wolf-model grid of ``rate [low, high] n=N`` cells, one grid per
    condition stacked (the condition's columns first)."""
    if not len(table):
        return table
    by = [c for c in table.columns if c not in ("village_model", "wolf_model", "k", "n", "rate", "ci_low",
                                                 "ci_high", "method")]
    t = table.assign(cell=[f"{r.rate:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] n={r.n}" for r in table.itertuples()])
    grid = t.pivot_table(index=by + ["village_model"], columns="wolf_model", values="cell", aggfunc="first")
    grid.columns = [f"wolves: {c}" for c in grid.columns]
    return grid.reset_index().rename(columns={"village_model": "village"}).fillna("—")


def _pct(r) -> str:
    return f"{100 * r['rate']:.1f}% [{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}] of {int(r['n'])} games"


def _ranking(sep: pd.DataFrame, side: str) -> str:
    part = sep[sep["side"] == side]
    if not len(part):
        return ""
    ordered = part[part["verdict"] != "cannot separate"]["verdict"].tolist()
    tied = [f"{r.a} and {r.b}" for r in part.itertuples() if r.verdict == "cannot separate"]
    words = []
    if ordered:
        words.append(", ".join(ordered))
    if tied:
        words.append("the data cannot separate " + "; ".join(tied))
    return f"As {side}, " + "; ".join(words) + "."


def _where(key: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in key.items())


def effect(part: pd.DataFrame, var: str, a, b, fp: pd.Series) -> str:
    """The effect of ``var`` going from ``a`` to ``b`` on the village's win rate among ``part`` (games of one
    stratum of the other variables), paired by seed: the same seed deals the same roles at both levels."""
    wins = part.assign(win=(part["winner"] == "village").astype(float), fp=part["game_id"].map(fp))
    at = {v: g.groupby("seed").agg(win=("win", "mean"), fp=("fp", "first"), n=("win", "size"))
          for v, g in wins.groupby(labels(wins[var]))}
    if str(a) not in at or str(b) not in at:
        return "not played at both values here: nothing to compare"
    both = at[str(a)].merge(at[str(b)], left_index=True, right_index=True, suffixes=("_a", "_b"))
    if both.empty:
        return f"no seed in common between {var}={a} and {var}={b}: nothing to pair, no effect estimated"
    same = int((both["fp_a"] == both["fp_b"]).sum())
    if same == len(both) and (both["n_a"] == 1).all() and (both["n_b"] == 1).all():
        return (f"**no effect: identical games** — all {len(both)} shared seeds played move for move the same "
                f"at both values, so {var} changed nothing in these games")
    if len(both) < MIN_GAMES:
        return f"only {len(both)} shared seeds (fewer than {MIN_GAMES}): no interval is trusted"
    one = [1.0] * len(both)
    d = paired_difference(both["win_b"], one, both["win_a"], one)
    verdict = ("the village wins more" if d["ci_low"] > 0 else "the village wins less" if d["ci_high"] < 0
               else "no difference beyond the interval")
    identical = f"; {same} of them played identically" if same else ""
    return (f"{100 * d['diff']:+.1f} points [{100 * d['ci_low']:+.1f}, {100 * d['ci_high']:+.1f}] over "
            f"{len(both)} shared seeds{identical}: {verdict}")


def effects(games: pd.DataFrame, events: pd.DataFrame, players: pd.DataFrame, by: list[str]) -> list[str]:
    """Each grid variable's effect on the village's win rate, first: per value against the first value, within
    each combination of the other variables (never pooled across them), paired by seed (a paired bootstrap-t
    interval over the shared seeds), or said plainly to be none where the games are identical."""
    if not by:
        return []
    fp = fingerprints(events[events["game_id"].isin(games["game_id"])],
                      players[players["game_id"].isin(games["game_id"])])
    lines = ["**What each grid variable did** (the village's win rate at a value minus at the first value, in "
             "percentage points, paired by seed with a 95% interval; within each combination of the other "
             "variables, never pooled across them):\n"]
    for var in by:
        others = [c for c in by if c != var]
        values = sorted(labels(games[var]).unique())
        for key, part in groups(games, others):
            where = f" at {_where(key)}" if key else ""
            for b in values[1:]:
                lines.append(f"- **{var}** {b} − {values[0]}{where}: {effect(part, var, values[0], b, fp)}.")
    return ["\n".join(lines) + "\n"]


def conclusions(games: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> list[str]:
    """One paragraph per condition, every number from the tables (see the module docstring)."""
    paragraphs = []
    full = games
    games, by = _conditions(games, by)
    for key, part in groups(games, by):
        where = ", ".join(f"{k} {v}" for k, v in key.items()) or "this study"
        rates = win_rates(part).set_index("side")
        village = rates.loc["village"] if "village" in rates.index else None
        mine = full[full["game_id"].isin(part["game_id"])]  # (with the model columns _conditions set aside)
        pooled = [f"{c} ({', '.join(sorted(labels(mine[c]).unique()))})" for c in MODEL_PARAMS
                  if c in mine.columns and labels(mine[c]).nunique() > 1]
        text = [f"**{where}** ({len(part)} games" + (f"; pooling {' and '.join(pooled)}, which the design matrix "
                                                     "below splits" if pooled else "") + ")."]
        if village is not None:
            favours = ("the wolves" if village["ci_high"] < 0.5 else "the village" if village["ci_low"] > 0.5
                       else "neither side beyond its interval")
            text.append(f"The village won {_pct(village)}: this design favours {favours}.")
        other = [s for s in ("draw", "error") if s in rates.index]
        if other:
            text.append("Not decided: " + ", ".join(f"{int(rates.loc[s, 'k'])} {s}s" for s in other)
                        + " (they leave the ratings).")
        p = players[players["game_id"].isin(part["game_id"])]
        if p["spec"].nunique() > 1:
            sep = separation(part, p)
            text += [s for s in (_ranking(sep, "village"), _ranking(sep, "werewolves")) if s]
            text.append("(Bradley–Terry strengths with a side term; an order is named only where Holm's adjusted "
                        "p < 0.05.)")
            text += opponent_sentences(part, p)
            m = design_matrix(part, p)
            m = m[m["village_model"] != m["wolf_model"]]
            if len(m) > 1:
                hi, lo = m.loc[m["rate"].idxmax()], m.loc[m["rate"].idxmin()]
                text.append(f"Across pairings the village's win rate runs from {_pct(lo)} ({lo['village_model']} "
                            f"villagers against {lo['wolf_model']} wolves) to {_pct(hi)} ({hi['village_model']} "
                            f"villagers against {hi['wolf_model']} wolves).")
        else:
            text.append("One model plays every seat: there is nothing to rank.")
        paragraphs.append(" ".join(text) + "\n")
    return paragraphs


def _signed(d) -> str:
    return f"{d['diff']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]"


def opponent_sentences(games: pd.DataFrame, players: pd.DataFrame) -> list[str]:
    """Where an order depends on the opponent: for each pair of models on a side whose difference in win rate
    tells a different story against different opponents (its interval excludes 0 against one and not against
    another, or the signs of two such differ), the difference against each opponent; and the interaction test
    (main-effects model against one rate per pairing) for the condition. The Bradley–Terry order is an average
    over the opponents of the design: this says where that average hides a reversal or a null."""
    diffs = opponent_differences(games, players)
    if diffs.empty:
        return []
    test = interaction_test(games, players)
    out = []
    for (side, a, b), part in diffs.groupby(["side", "a", "b"], sort=True):
        if len(part) < 2:
            continue
        verdicts = {("+" if r.ci_low > 0 else "-" if r.ci_high < 0 else "0") for r in part.itertuples()}
        if len(verdicts) > 1:
            against = "; ".join(f"{_signed(r)} against {r['opponent']} {'wolves' if side == 'village' else 'villagers'}"
                                f" (n = {r['n_a']}, {r['n_b']})" for r in part.to_dict("records"))
            out.append(f"As {side}, the order of {a} and {b} is not the same against every opponent ({a} − {b} in "
                       f"win rate, 95% interval per opponent, unadjusted): {against}.")
    if out or test["df"] > 0:
        verdict = ("the pairings do not fit one strength per model and side" if test["p"] < 0.05
                   else "the main-effects model is not rejected, which does not show the orders hold against every "
                   "opponent")
        out.append(f"Interaction test (main-effects model against one rate per pairing): LR = {test['lr']:.2f} on "
                   f"{test['df']} df, p = {test['p']:.3f}: {verdict}.")
    return out
