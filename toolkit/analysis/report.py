"""``python -m toolkit report DIR``: the plots as PNGs and a Markdown summary with the tables, in DIR.

A report that cannot mislead: every table is split by the conditions (run parameters that differ between
runs, and the preset) — nothing is pooled across them, and the summary says what it split by; conditions
whose games are identical are named as such; every table and plot shows n; count and cost axes start at 0;
estimated token counts are marked.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import pandas as pd

from toolkit import analysis as A
from toolkit.analysis import plots as P
from toolkit.analysis import progress
from toolkit.analysis.conclusions import conclusions, design_matrix, effects, matrix_text, side_models
from toolkit.llm import parse_spec
from toolkit.llm.registry import find
from toolkit.analysis.prompt_cache import cached_share
from toolkit.analysis.sections import METRICS
from toolkit.core.files import inside
from toolkit.analysis.degeneracy import echo_counts
from toolkit.record.load import Results, games_with_params, load, scan
from toolkit.record.tables import TABLES
from toolkit.werewolf.engine.roles import event_kinds


# the engineer table's rows are ``intervals.proportion``: exact below EXACT_BELOW sessions, Wilson from there
ENGINEER_HEADER = ("## Engineer success by model (95% intervals: exact below 30 sessions, else Wilson, as `method` "
                   "says; n = sessions)\n")
# The calls columns the report's own sections read: ids (a condition's cut, a row read twice), token usage and
# cache flags (the estimated-tokens note, the prompt-cache share). The prompts (calls.messages: ~140 KB a game,
# most of a study's bytes) only the template-echo check reads, a batch at a time (_degeneracy_section); the rest
# (answers, errors, times: ~40 MB per 1,000 games in pandas) no section reads.
REPORT_CALLS = ("call_id", "game_id", "session_id", "spec", "model", "prompt_tokens", "cached_tokens",
                "usage_estimated", "cache_hit")
INTERVAL_COLUMNS = ("ci_low", "ci_high", "lift_ci_low", "lift_ci_high", "lift_baseline_ci_low",
                    "lift_baseline_ci_high", "fp_ci_low", "fp_ci_high")


def report_columns() -> dict[str, list[str] | None]:
    """What the report loads: every table whole but the calls, of which the columns its sections read
    (``REPORT_CALLS`` and each registered metric's ``calls``; a metric that does not say gets every column but
    the prompts)."""
    calls = list(REPORT_CALLS)
    for m in METRICS.values():
        wanted = m.calls if m.calls is not None else [c for c in TABLES["calls"] if c != "messages"]
        calls += [c for c in wanted if c not in calls]
    return {**{t: None for t in TABLES}, "calls": calls}


DESCRIPTION_WORDS = 8  # a text of this many words or more describes (a names-only column keeps its names)


def described_once(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The table with each repeated description (a column like ``bar``, the same strategy described in every row,
    four lines of a narrow notebook column each; a description is a text of ``DESCRIPTION_WORDS`` words or more)
    written once: a column with one text in every row leaves the table for a line below it; one with a few texts
    keeps a number per row ([1], [2], …), the texts listed below it by number."""
    notes = []
    for col in df.columns:
        values = df[col]
        filled = values.dropna()
        if not len(filled) or not filled.map(lambda v: isinstance(v, str)).all() or \
                not filled.map(lambda v: len(v.split()) >= DESCRIPTION_WORDS).any():
            continue  # not a description: names, values, short notes
        texts = list(dict.fromkeys(v for v in filled if v))
        if len(texts) == len(filled):
            continue  # each text once already: nothing repeats
        if len(texts) == 1 and values.map(lambda v: v == texts[0]).all():
            df = df.drop(columns=col)
            notes.append(f"`{col}` (every row): {texts[0]}\n")
            continue
        number = {t: f"[{i}]" for i, t in enumerate(texts, 1)}
        df = df.assign(**{col: values.map(lambda v: number.get(v, v), na_action="ignore")})
        notes.append(f"`{col}`:\n\n" + "".join(f"- {number[t]} {t}\n" for t in texts))
    return df, notes


def markdown_table(df: pd.DataFrame, floats: str = "{:.3f}") -> str:
    """A Markdown table; in a row with fewer than ``MIN_GAMES`` games (``n_games``, else ``n`` where the
    units are games) the interval cells read "too few games": no interval is trusted there. A long text repeated
    down a column is written once, below the table (``described_once``)."""
    if df is None or df.empty:
        return "(no rows)\n"
    df, notes = described_once(df)
    cols = list(df.columns)
    games_col = "n_games" if "n_games" in cols else None
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):  # keeps each column's type: counts stay integers
        few = games_col is not None and _few(getattr(row, games_col))
        cells = ["too few games" if few and c in INTERVAL_COLUMNS
                 else ("" if v != v else floats.format(v)) if isinstance(v, float) else str(v)
                 for c, v in zip(cols, row)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" + ("\n" + "\n".join(notes) if notes else "")


def _few(n) -> bool:
    try:
        return int(n) < A.MIN_GAMES
    except (TypeError, ValueError):
        return False


def games_table(df: pd.DataFrame) -> pd.DataFrame:
    """A table whose ``n`` counts games (win rates, ratings): ``n`` doubles as ``n_games`` for the
    too-few-games rule."""
    return df.assign(n_games=df["n"]) if len(df) and "n" in df.columns and "n_games" not in df.columns else df


def tokens_estimated(tables: Results) -> bool:
    """True when any token count comes from an estimate (offline players, providers without usage)."""
    calls = tables.calls
    if len(calls) and "usage_estimated" in calls.columns and calls["usage_estimated"].notna().any():
        return bool(calls["usage_estimated"].fillna(False).astype(bool).any())

    specs = set(tables.players["spec"].dropna()) | set(tables.sessions["spec"].dropna())
    return not all(getattr(find(parse_spec(str(s))[0]), "real_usage", False) for s in specs)  # the provider says


def _first_round_by_day(t: Results) -> pd.DataFrame:
    by = ["spec", "round", "day"] if t.players["spec"].nunique() > 1 else ["round", "day"]
    table = A.vote_accuracy(t.events, t.players, by, games=t.games)
    return table[table["round"] == "first"] if len(table) else table


def one_model_per_side(players: pd.DataFrame) -> bool:
    """Every game has one model on each side (the pairs design): a model's village roles then share every
    outcome, so a win rate by village role says nothing the win rate by side does not."""
    return bool((players.groupby(["game_id", "side"])["spec"].nunique() == 1).all())


def outcomes_table(games: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Decided, drawn and errored games per condition: the ratings use only the decided ones."""
    rows = []
    for key, g in A.groups(games, by):
        w = g["winner"].astype(str)
        fallbacks = pd.to_numeric(g["n_fallbacks"], errors="coerce") if "n_fallbacks" in g.columns else pd.Series()
        rows.append({**key, "games": len(g), "decided": int(w.isin(["village", "werewolves"]).sum()),
                     "draws": int((w == "draw").sum()), "errors": int((w == "error").sum()),
                     "with_fallbacks": int((fallbacks > 0).sum())})
    return pd.DataFrame(rows)


def fallback_rates(t: Results) -> pd.DataFrame:
    """Per model: the share of its decisions that fell back (an answer the model did not give), with a
    cluster interval over games, beside its win rate on each side."""
    decisions = [name for name, kind in event_kinds().items() if kind.decision]  # every role's, declared once
    keep = [c for c in ("game_id", "actor", "fallback") if c in t.events.columns]  # not the speeches' text
    ev = t.events.loc[t.events["kind"].isin(decisions) & t.events["actor"].notna(), keep]
    ev = ev.merge(t.players[["game_id", "seat", "spec"]].rename(columns={"seat": "actor"}), on=["game_id", "actor"])
    if "fallback" not in ev.columns:
        return pd.DataFrame()
    ev = ev.assign(hit=ev["fallback"].fillna(False).astype(bool).astype(int))
    rows = []
    wins = A.role_win_rates(t.games, t.players, ["spec", "side"])
    for spec, g in ev.groupby("spec"):
        per = g.groupby("game_id")["hit"].agg(["sum", "size"])
        r = A.cluster_rate(per["sum"], per["size"])
        row = {"spec": spec, "decisions": r["n"], "fallback_rate": r["rate"], "n_games": r["n_games"],
               "ci_low": r["ci_low"], "ci_high": r["ci_high"]}
        for side in ("village", "werewolves"):
            hit = wins[(wins["spec"] == spec) & (wins["side"] == side)] if {"spec", "side"} <= set(wins) else []
            row[f"win_{side}"] = float(hit["rate"].iloc[0]) if len(hit) else float("nan")  # no decided game: nan
        rows.append(row)
    return pd.DataFrame(rows)


def robustness_sections(tables: Results, games: pd.DataFrame, by: list[str]) -> list[str]:
    """Draws and errors; fallbacks per model beside its win rates; the headline numbers again without the
    games that had a fallback (if surviving the opponents' errors is what wins, this moves them)."""
    s = ["## Robustness\n", "Games per condition and how they ended (only decided games enter the ratings; "
         "`with_fallbacks` = games in which some answer fell back to a default):\n",
         markdown_table(outcomes_table(games, by)), *degraded_line(degraded_count(games), len(games), False),
         "Fallback rate per model (share of its decisions not answered by the model; intervals resample "
         "games) beside its win rate per side:\n",
         markdown_table(per_condition(fallback_rates, games, tables, by))]
    if "n_fallbacks" not in games.columns:
        return s
    clean = games[pd.to_numeric(games["n_fallbacks"], errors="coerce").fillna(0) == 0]
    if len(clean) == len(games):
        s.append("No game had a fallback: the numbers above need no error-survival check.\n")
        return s
    s += [f"The headline numbers again on the {len(clean)} of {len(games)} games without any fallback (the "
          "error-survival check: a model that wins by outlasting its opponents' errors loses that edge here):\n",
          markdown_table(games_table(A.win_rates(clean, by)))]
    if tables.players["spec"].nunique() > 1 and len(clean):
        s.append(markdown_table(games_table(per_condition(lambda t: A.ratings(t.games, t.players, by_side=True),
                                                          clean, tables, by))))
    return s + error_policy_sections(tables, games, by)


def error_policy_sections(tables: Results, games: pd.DataFrame, by: list[str]) -> list[str]:
    """Ratings on all games beside those on the clean ones (``toolkit.analysis.error_policy``), and the study
    rated under two error policies side by side; only where several models play and some game had a failure."""
    from toolkit.analysis.error_policy import clean_games, error_survival, policy_ratings

    if tables.players["spec"].nunique() < 2 or len(clean_games(games)) == len(games):
        return []
    s = ["## Error policies\n", "Each model's rating per side on all decided games (`_all`) beside its rating on "
         "the games with no fallback, error or forfeit (`_clean`); `shift` = clean − all (logits). A model whose "
         "rating moves owes it to how failures were scored (the error-survival confound):\n"]
    sentence = ""
    for key, part in A.groups(games, by):
        players = tables.players[tables.players["game_id"].isin(part["game_id"])]
        events = tables.events[tables.events["game_id"].isin(part["game_id"])]
        where = "**" + ", ".join(f"{k} = {v}" for k, v in key.items()) + "**: " if key else ""
        s += [f"{where}\n" if where else "", markdown_table(error_survival(part, players))]  # a blank line first
        table, sentence = policy_ratings(part, players, events)
        s += [f"{where}ratings {sentence}:\n", markdown_table(table)]
    return s


def paired_sections(tables: Results, games: pd.DataFrame, by: list[str]) -> list[str]:
    """Differences in the village win rate between conditions that played the same seeds (the same role
    deals): a paired interval over the common seeds, sharper than two independent intervals."""
    if not by or "seed" not in games.columns:
        return []
    names = [", ".join(f"{k}={v}" for k, v in zip(by, r)) for r in games[by].itertuples(index=False)]
    g = games.assign(condition=names, win=(games["winner"] == "village").astype(float))
    wide = g.pivot_table(index="seed", columns="condition", values="win", aggfunc="mean")
    same = A.identical_groups(games, tables.events, tables.players, by) if tables is not None else None
    identical = {(r.a, r.b) for r in same.itertuples(index=False) if r.identical == r.games} if same is not None \
        else set()
    rows = []
    for a, b in itertools.combinations(sorted(wide.columns), 2):
        both = wide[[a, b]].dropna()
        if len(both) < A.MIN_GAMES or (a, b) in identical:  # identical games: no difference to estimate
            continue
        one = [1.0] * len(both)
        d = A.paired_difference(both[a], one, both[b], one)
        rows.append({"a": a, "b": b, "common_seeds": len(both), "village_win_a_minus_b": d["diff"],
                     "ci_low": d["ci_low"], "ci_high": d["ci_high"],
                     "seed_correlation": float(both[a].corr(both[b])), "method": d["method"]})
    note = [f"Not compared: {'; '.join(f'`{a}` and `{b}`' for a, b in sorted(identical))} played identical games "
            "(no effect, not a difference of 0 with an interval).\n"] if identical else []
    if not rows:
        return ["## Paired comparisons between conditions\n", *note] if note else []
    return ["## Paired comparisons between conditions\n", *note,
            "Conditions that share seeds share role deals, so their outcomes correlate seed by seed "
            "(`seed_correlation`); the difference in village win rate is paired by seed (resampling seeds), "
            "not two independent intervals:\n", markdown_table(pd.DataFrame(rows))]


def metric_section(m, tables: Results, games: pd.DataFrame, by: list[str]) -> list[str]:
    """The section of one metric a study registered (``toolkit.analysis.sections``), per condition."""
    return [f"## {m.title}\n", f"{m.note}\n",
            markdown_table(per_condition(lambda t: m.check(m.compute(t)), games, tables, by))]


def per_condition(func: Callable[[Results], pd.DataFrame], games: pd.DataFrame, tables: Results,
                  by: list[str]) -> pd.DataFrame:
    """``func`` on each condition's games alone, the condition's values as leading columns."""
    parts = []
    conditions = conditions_of(games, tables, by)
    for i, (key, sub) in enumerate(conditions, 1):
        progress.step(f"{', '.join(f'{k}={v}' for k, v in key.items()) or 'all games'} ({i} of {len(conditions)})")
        out = func(sub)
        if out is not None and len(out):
            parts.append(out.assign(**key)[list(key) + list(out.columns)])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def conditions_of(games: pd.DataFrame, tables: Results, by: list[str]) -> list[tuple[dict, Results]]:
    """Each condition's values and its tables (every table cut to the condition's games), cut once per report
    and kept on ``tables``: the report asks for them once per metric (dozens of times), and cutting the events
    and calls of 100,000 games costs seconds each time."""
    cache = tables.__dict__.setdefault("_conditions", {})
    key = (id(games), tuple(by))
    if key not in cache:
        out = []
        for values, g in A.groups(games, by):
            ids = set(g["game_id"])
            every = len(ids) == len(tables.games) and ids == set(tables.games["game_id"])  # nothing to cut
            sub = Results(**{name: (getattr(tables, name)[getattr(tables, name)["game_id"].isin(ids)]
                                    if not every and "game_id" in getattr(tables, name).columns
                                    else getattr(tables, name))
                             for name in Results.__dataclass_fields__})
            sub.games = g
            out.append((values, sub))
        cache[key] = (games, out)  # the games frame is kept so that its id is not reused
    return cache[key][1]


@dataclass(frozen=True)
class Part:
    """One section of a report: its title and what renders it (Markdown lines; a plot it links is written into
    the report's folder as it renders). ``eager`` parts are the summary a reader sees first (cheap: seconds on
    the committed example); the others are computed when asked for (the results explorer) or all in order
    (``write_report``)."""
    title: str
    render: Callable[[], list[str]]
    eager: bool = False


def degraded_count(games: pd.DataFrame) -> int:
    """Degraded games (``games.degraded``: a seat's decisions were mostly fallbacks)."""
    if "degraded" not in games.columns:
        return 0
    return int(games["degraded"].astype("boolean").fillna(False).sum())


def degraded_line(n: int, total: int, included: bool, what: str = "the table above") -> list[str]:
    """The sentence beside a table that uses games: how many were degraded and whether the ratings count them."""
    if not n:
        return []
    rated = ("and in the ratings (`--include-degraded`)" if included else
             "but not in the ratings, which leave them out by default (`toolkit report --include-degraded` puts "
             "them back)")
    return [f"**Degraded games:** {n} of {total} (a seat's decisions were mostly not its model's: fallbacks for "
            f"invalid or truncated answers or a failing endpoint; `games.degraded_why` says which seat): counted in "
            f"{what} {rated}.\n"]


def _werewolf_parts(tables: Results, out: Path, written: list[Path], folder: Path,
                    include_degraded: bool = False) -> list[Part]:
    n_degraded = degraded_count(tables.games)
    if include_degraded and n_degraded:  # the ratings read games.degraded: cleared, they count every game
        tables = replace(tables, games=tables.games.assign(degraded=False))
    games = games_with_params(tables)
    by = A.conditions(games)
    estimated = tokens_estimated(tables)
    multi = tables.players["spec"].nunique() > 1

    def degraded(what: str = "the table above") -> list[str]:
        return degraded_line(n_degraded, len(games), include_degraded, what)

    def summary() -> list[str]:
        s: list[str] = []
        if by:
            counts = games.groupby(by, dropna=False).size().rename("n").reset_index()
            s += [f"Every table below is split by **{', '.join(by)}** (the conditions that differ between runs); "
                  "nothing is pooled across them, except where a line says what it pools.\n", markdown_table(counts)]
            same = A.identical_groups(games, tables.events, tables.players, by)
            for r in same.itertuples(index=False):
                s.append(f"**Identical games:** `{r.a}` and `{r.b}` played the same {r.identical} of their "
                         f"{r.games} common seeds move for move: what differs between them had no effect on play, "
                         "so they are one sample, not two.\n")
        else:
            s.append(f"One condition: all {len(games)} games share their run parameters.\n")
        s += degraded("every table of this report")
        if estimated:
            s.append("Token counts are **estimated** (offline players or providers that report no usage), not "
                     "measured.\n")
        return s + ((_at_a_glance(games, tables.players, by, out, written) + _conclusions_sections(tables, games, by))
                    if multi or by else [])

    def win_rates() -> list[str]:
        pooled = _pooled_note(games, tables.players, by)
        title = "Win rate by side" + (f" per {', '.join(by)}" if by else "") + (
            f": each point pools {pooled}" if pooled else "")
        written.append(P.save(P.plot_win_rates(games, by, title=title), inside(out, "win_rates", ".png")))
        return ["## Win rates by side (95% intervals: exact below 30 games, else Wilson; n = games)\n",
                *([f"Each row pools {pooled}.\n"] if pooled else []),
                markdown_table(games_table(A.win_rates(games, by))), *degraded(), "![win rates](win_rates.png)\n"]

    def models() -> list[str]:
        s = ["## Models: win rate by side and by role\n",
             "Per seat-game; intervals resample games. `n` counts seat-games, `n_games` games.\n",
             markdown_table(per_condition(lambda t: A.role_win_rates(t.games, t.players, ["spec", "side"]),
                                          games, tables, by)), *degraded()]
        if one_model_per_side(tables.players):
            s.append("By role: not shown — every game has one model per side, so a model's win rate is the "
                     "same for every village role by construction.\n")
        else:
            s.append(markdown_table(per_condition(lambda t: A.role_win_rates(t.games, t.players, ["spec", "role"]),
                                                  games, tables, by)))
        ratings = per_condition(lambda t: A.ratings(t.games, t.players, by_side=True) if rateable(t) else None,
                                games, tables, by)
        unrated = [", ".join(f"{k}={v}" for k, v in key.items()) for key, g in A.groups(games, by)
                   if not rateable(replace(tables, games=g))]
        for key, part in A.groups(ratings, by) if len(ratings) else ():
            name = "_".join(str(v) for v in key.values()) or "all"
            where = ", ".join(f"{k}={v}" for k, v in key.items())
            path = inside(out, f"ratings_{name}", ".png")  # a condition's value may hold '/' or '../'
            written.append(P.save(P.plot_ratings(part, title="Ratings by side" + (f": {where}" if where else "")),
                                  path))
            s.append(f"![ratings]({path.name})\n")
        s += ["## Ratings with a side term\n",
              "Bradley–Terry in logistic form, logit P(village wins) = side term + village strength − wolf "
              "strength, each model weighted by its share of the side's seats; strengths of each side sum to "
              "0; 95% intervals from the fit's curvature (in simulated tournaments of the default design they "
              "cover the true strengths 93–97% of the time). `n` = decided games that inform the rating. (The "
              "overall rating, one strength per model on both sides, is not shown: its coverage was not "
              "checked; `toolkit.analysis.ratings(..., by_side=False)` computes it.)\n",
              markdown_table(games_table(ratings)), *degraded("the win rates above"),
              *([f"Not rated: {'; '.join(unrated) or 'every condition'} — one model per side there, so "
                 "there is no one to rate it against (its win rate above says all there is).\n"] if unrated else []),
              "Which models the data can tell apart: the difference, its 95% interval, `p` and Holm's "
              "adjusted `p_holm` over every pair of the table; the verdict names an order only when "
              "`p_holm` < 0.05 (family-wise):\n",
              markdown_table(per_condition(lambda t: A.separation(t.games, t.players), games, tables, by))]
        return s + _sequential_ratings_section(tables, games, by)

    def votes() -> list[str]:
        vote_by = ["spec", "round"] if multi else ["round"]
        vote_plots = []
        for key, sub in conditions_of(games, tables, by):
            progress.step(f"the plot of {', '.join(f'{k}={v}' for k, v in key.items()) or 'all games'}")
            name = "_".join(str(v) for v in key.values())
            fig = P.plot_vote_accuracy_by_day(sub.events, sub.players,
                                              "spec" if multi else None, games=sub.games,
                                              title="Village vote accuracy by day vs the bar" + (
                                                  ": " + ", ".join(f"{k}={v}" for k, v in key.items()) if key else ""))
            path = inside(out, f"vote_accuracy_{name}" if name else "vote_accuracy", ".png")
            written.append(P.save(fig, path))
            vote_plots.append(f"![vote accuracy]({path.name})\n")
        return ["## Votes against the best information-free ballot\n",
                "Share of village-side ballots cast on a werewolf. Every rate in this report stands beside its bar, "
                "`chance`: the best strategy that uses no information, scored on the same units under the same "
                "rules (the strategy is named in `bar`); `lift` = rate − chance, with its interval (resampling "
                "games); `random` = what uniformly random legal answers (passing, abstaining, voting for oneself "
                "where the rules allow) score on the same units. For a ballot the bar is a random other candidate, "
                "never oneself and never abstaining. First-round and revote ballots are separate (`round`).\n",
                markdown_table(per_condition(lambda t: A.vote_accuracy(t.events, t.players, vote_by, games=t.games),
                                             games, tables, by)),
                "By day (first round, per model): later days are survivors — games still running, and in them the "
                "players still alive — so a day's rate is not the same population as day 1's:\n",
                markdown_table(per_condition(_first_round_by_day, games, tables, by)),
                *vote_plots,
                *_exile_sections(tables, games, by, multi)]

    def survival() -> list[str]:
        return ["## Survival and dominance\n",
                "KSR (seat survived to the end) by model and role — mostly a restatement of the win (a winning "
                "side's seats survive more); margin of win (living share of the winning side) and speed of win "
                "(1 / days) are over **won** seat-games only, so a model that rarely wins and wins only early looks "
                "fast: read them beside the win rate, never alone:\n",
                markdown_table(per_condition(lambda t: A.ksr(t.games, t.players), games, tables, by)),
                markdown_table(per_condition(lambda t: A.win_margin_speed(t.games, t.players), games, tables, by)),
                "Their unconditional counterpart: each model's win rate per side against what its roles win on "
                "average in these games (`adjusted` = rate − role baseline; every seat-game, won or lost; the "
                "interval is the adjusted value's):\n",
                markdown_table(per_condition(lambda t: A.role_adjusted_wins(t.games, t.players), games, tables, by))]

    def night() -> list[str]:
        return ["## Night actions (intervals resample games; `chance` = the bar named in `bar`, `random` = a "
                "uniformly random legal answer, passing included)\n",
                *_night_tables(per_condition(lambda t: A.night_actions(t.events, t.players,
                                                                       ["spec"] if multi else None, t.games),
                                             games, tables, by))]

    def beliefs() -> list[str]:
        s = ["## Beliefs and deception\n"]
        if len(tables.beliefs):
            s += ["Identity inference (guessed role = true role), by model and side: `chance` = the best constant "
                  "guess per model, believer role and day (the role most often true on those rows; a tie shares the "
                  "hit), `lift` the lift over it — the number to read; `random` = a random guess among the roles:\n",
                  markdown_table(per_condition(lambda t: A.identity_accuracy(t.beliefs, t.players, ["spec", "side"]),
                                               games, tables, by)),
                  "Balanced accuracy (the mean over true roles of the share guessed right; a constant guess scores "
                  "1 / roles, like chance):\n",
                  markdown_table(per_condition(lambda t: A.balanced_accuracy(t.beliefs, t.players, ["spec", "side"]),
                                               games, tables, by)),
                  "By day (later days are survivors):\n",
                  markdown_table(per_condition(lambda t: A.identity_accuracy(t.beliefs, t.players, ["spec", "day"]),
                                               games, tables, by)),
                  "Proper scores of the stated confidences (lower is better), and their skill against the no-skill "
                  "forecast that always states the observed accuracy (`brier_skill`, `log_skill`: above 0 the "
                  "confidences carry information):\n",
                  markdown_table(per_condition(lambda t: A.brier(t.beliefs, t.players, ["spec"]), games, tables,
                                               by)),
                  "The village's detection of the wolves by model and day: recall (`rate`: rows about a wolf that "
                  "guess Werewolf) against its bar, the false-positive rate (rows about a village player that guess "
                  "Werewolf: `chance`); `lift` = recall − false-positive rate, 0 for any guess that ignores the "
                  "game, with a paired interval resampling games:\n",
                  markdown_table(per_condition(lambda t: A.wolf_detection(t.beliefs, t.players, ["spec", "day"]),
                                               games, tables, by))]
        else:
            s.append("The `beliefs` table is empty in these results (no player reflected with role guesses), so "
                     "identity inference, Brier scores and detection over time are not reported.\n")
        return s + [
            "Claims in speeches checked against the truth (a role claim is false when it is not the speaker's "
            "role — concealment included; a check claim is false unless the Seer made that check):\n",
            markdown_table(per_condition(lambda t: A.lie_rates(t.events, t.players, ["spec", "side", "kind"]),
                                         games, tables, by)),
            "`by_construction` marks rates that the rules fix (a wolf claiming a village role always lies): counts, "
            "not choices.\n",
            "How often check claims were followed by the other village voters' later ballots that day (false vs "
            "true claims; neither the speaker's nor the accused's ballot counts; chance = 1 / (living − 1)). "
            "`claim_falsity_within_side` is false where every false claim is a wolf's and every true one the "
            "Seer's — there \"false vs true\" is \"wolf vs Seer\", not a test of falsity:\n",
            markdown_table(per_condition(lambda t: A.false_claims_followed(t.events, t.players, t.beliefs,
                                                                           games=t.games), games, tables, by)),
            "Vote swing: share of the other voters' ballots on the player a speech accused or suspected, against "
            "chance (a wolf speaker's fellow wolves are left out: they follow an ally, not an argument):\n",
            markdown_table(per_condition(lambda t: A.vote_swing(t.events, t.players, games=t.games), games, tables,
                                         by))]

    def costs() -> list[str]:
        written.append(P.save(P.plot_costs(games, by, estimated=estimated), inside(out, "costs", ".png")))
        return ["## Calls, tokens, cost and fallbacks per game (95% bootstrap intervals; n = games)\n",
                ("Token counts are estimated.\n" if estimated else ""),
                markdown_table(A.per_game_costs(games, by)), "![costs](costs.png)\n",
                *_cached_share_section(tables),
                f"Games needed for ±5 points on a win rate: {A.sample_size(0.05)} per condition (±10 points: "
                f"{A.sample_size(0.1)}).\n"]

    parts = [Part("Summary: conditions and conclusions", summary, eager=True),
             Part("Win rates by side", win_rates, eager=True)]
    if multi:
        parts.append(Part("Models: win rates by role, ratings, which models differ", models))
    parts += [Part("Votes against the best information-free ballot", votes),
              Part("Survival and dominance", survival),
              Part("Night actions", night),
              Part("Beliefs and deception", beliefs),
              Part("Robustness: draws, errors, fallbacks", lambda: robustness_sections(tables, games, by)),
              Part("Paired comparisons between conditions", lambda: paired_sections(tables, games, by))]
    parts += [Part(m.title, lambda m=m: metric_section(m, tables, games, by)) for m in METRICS.values()]
    return parts + [Part("Calls, tokens, cost and fallbacks per game", costs),
                    Part("Degenerate play per model", lambda: _degeneracy_section(tables, games, by, folder))]


def _night_tables(table: pd.DataFrame) -> list[str]:
    """Rates in one table, the potions' timing (a mean night, not a rate) in another, each column one kind of
    quantity."""
    if not len(table) or "metric" not in table:
        return [markdown_table(table)]
    timing = table["metric"].str.endswith("_night")
    nights = table[timing].rename(columns={"rate": "mean_night"}).dropna(axis=1, how="all")
    out = [markdown_table(table[~timing].dropna(axis=1, how="all"))]
    if len(nights):
        out += ["When the Witch used each potion: the mean night of use (1 = the first night), over the games "
                "it was used in:\n", markdown_table(nights.drop(columns=["k"], errors="ignore"))]
    return out


def rateable(t: Results) -> bool:
    """Whether a condition's ratings mean anything: some side has two models or more (with one model a side,
    every strength is 0 by construction, its interval [0, 0])."""
    m = side_models(t.players[t.players["game_id"].isin(t.games["game_id"])])
    return bool(len(m)) and (m["village_model"].nunique() > 1 or m["wolf_model"].nunique() > 1)


def _pooled_note(games: pd.DataFrame, players: pd.DataFrame, by: list[str]) -> str:
    """What each win rate by side pools, exactly: how many model pairings and how many games each pairing has (a
    range when they differ), when some condition holds more than one pairing; else ""."""
    sizes = [side_models(players[players["game_id"].isin(g["game_id"])]).value_counts(["village_model", "wolf_model"])
             for _, g in A.groups(games, by)]
    if max((len(s) for s in sizes), default=0) < 2:
        return ""
    span = lambda values: f"{min(values)}" + (f"–{max(values)}" if min(values) != max(values) else "")  # noqa: E731
    return (f"{span([len(s) for s in sizes])} model pairings, {span([int(n) for s in sizes for n in s])} games "
            "each (the design matrix splits them)")


def conclusions_pairings(games: pd.DataFrame, players: pd.DataFrame) -> int:
    """How many (village model, wolf model) pairings the games hold."""
    m = side_models(players[players["game_id"].isin(games["game_id"])])
    return len(m.drop_duplicates(["village_model", "wolf_model"]))


def _at_a_glance(games: pd.DataFrame, players: pd.DataFrame, by: list[str], out: Path,
                 written: list[Path]) -> list[str]:
    """The Conclusions as one table and a forest plot of every effect (``effect_table``); the words follow."""
    from toolkit.analysis import effect_table

    progress.step("every effect and its interval (the table at a glance, the forest plot)")
    rows = effect_table.effect_rows(games, players, by)
    if rows.empty:
        return []
    written.append(P.save(effect_table.forest_plot(rows), inside(out, "effects", ".png")))
    return ["## Conclusions at a glance\n",
            "Every effect on the win rate, in percentage points with its 95% interval (paired by seed only where "
            "both values deal every seed the same roles; else two independent samples, Newcombe's interval):\n",
            effect_table.markdown(rows), "![every effect](effects.png)\n"]


def _conclusions_sections(tables: Results, games: pd.DataFrame, by: list[str]) -> list[str]:
    progress.step("the conclusions in words")
    return ["## Conclusions\n", *effects(games, tables.events, tables.players, by),
            *conclusions(games, tables.players, by),
            "## Design: village win rate per village model × wolf model (95% intervals: exact below 30 games, "
            "else Wilson; n = games)\n",
            "Each cell pools nothing: one pairing, one condition. Self-play cells are on the diagonal.\n",
            markdown_table(matrix_text(design_matrix(games, tables.players, by)))]


def _exile_sections(tables: Results, games: pd.DataFrame, by: list[str], multi: bool) -> list[str]:
    """IRP (a ballot-level accuracy) and, beside it only, VSS and voting success (coordination)."""
    return ["IRP (every village ballot on a wolf, as the Kaggle Game Arena werewolf harness counts it: forced "
            "ballots included, an abstention a miss) against the same bar as the ballots above:\n",
            markdown_table(per_condition(lambda t: A.irp(t.events, t.players, games=t.games), games, tables, by)),
            "**Coordination, not skill** — read beside the ballot-level accuracy above, never alone: VSS (on "
            "days a wolf was exiled, the village ballots for that wolf) and voting success (days a wolf was "
            "exiled, per village model). Both reward villagers who vote together: a convention that uses no "
            "information at all (every villager votes the lowest-numbered living seat) has ballots at the bar "
            "yet scores VSS near 1. Their `chance` is what random village ballots score (simulated per day, "
            f"{A.metrics.EXILE_DRAWS} draws a kind of day, Monte-Carlo standard error ≤ 0.007; the wolves' "
            "ballots as cast; the preset's tie rule, self-votes and abstentions):\n",
            markdown_table(per_condition(lambda t: A.vss(t.events, t.players, None, t.games), games, tables, by)),
            markdown_table(per_condition(lambda t: A.voting_success(t.events, t.players,
                                                                    ["village_spec"] if multi else None, t.games),
                                         games, tables, by))]


def _sequential_ratings_section(tables: Results, games: pd.DataFrame, by: list[str]) -> list[str]:
    """Elo and OpenSkill are not in the default report: at the gaps real studies have, their order is no
    unreliable (at the example's wolf gap of 0.15 logits the Elo order was right in 0.70 [0.57, 0.80] of
    simulated tournaments, OpenSkill's in 0.67, in the re-analysis of issue 31), and neither carries an
    interval. ``toolkit.analysis.elo`` and ``openskill_ratings`` compute them on request."""
    return ["Elo and OpenSkill: not shown. Neither has an interval, and at gaps like this study's their order "
            "is right in as few as 0.67–0.70 of simulated tournaments (at a 0.15-logit gap); the "
            "Bradley–Terry ratings above, with their intervals and Holm-corrected verdicts, are the ones to read "
            "(`toolkit.analysis.elo` and `openskill_ratings` compute the others on request).\n"]


def _cached_share_section(tables: Results) -> list[str]:
    """Prompt tokens a server took from its prompt cache, per model (measured usage only; calls answered by
    the response cache or with estimated usage are counted as excluded)."""
    share = cached_share(tables.calls)
    if share.empty or not share["prompt_tokens"].fillna(0).sum():
        return []
    return ["Prompt tokens served from the server's prompt cache, per model (measured usage only):\n",
            markdown_table(share)]


def _degeneracy_section(tables: Results, games: pd.DataFrame, by: list[str], folder: Path) -> list[str]:
    """Per model: answers that parse but are nonsense (toolkit.analysis.degeneracy), so that "0 fallbacks"
    never hides them. The template-echo check reads the prompts once, a batch of calls at a time (the report's
    tables leave them out: they are most of a study's bytes), and each condition takes its games' counts."""
    echo = None
    if len(tables.calls):
        progress.step("reading the prompts (the template-echo check)")
        echo = echo_counts(scan(folder, "calls", ["spec", "game_id", "ok", "fallback", "parsed", "messages"],
                                games=set(tables.games["game_id"])))
    d = per_condition(lambda t: A.degeneracy(t, echo=None if echo is None else
                                             echo[echo["game_id"].isin(t.games["game_id"])]), games, tables, by)
    if d.empty:
        return []
    missing = ("" if len(tables.calls) else " These results have no calls table, so answers are not compared "
               "with their prompts (no template-echo row).")
    return ["## Degenerate play per model (95% cluster-bootstrap intervals over games; n = units checked)\n",
            "A template echo is an answer's text that holds a placeholder or is mostly copied from its own prompt's "
            "instructions (a word changed does not hide it); a repeated speech is a near-duplicate of an earlier one "
            "of the same game (another seat's words plus \"I agree.\" included; a model's stock line, said in two "
            "games or more (seat names aside), and speeches under six words are not); a wolf votes wolf when a "
            "werewolf with a village player to vote for votes "
            "for a fellow werewolf; contradicting potions: a Witch poisons a player she saved. Scripted players "
            f"(scripted = True) repeat fixed sentences by design.{missing}\n",
            markdown_table(d)]


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
            self.parts += _werewolf_parts(tables, self.out, self.written, self.folder, include_degraded)
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
