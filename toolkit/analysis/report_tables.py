"""The werewolf report's tables and the pieces every section shares: a table in Markdown (``markdown_table``),
a function run on each condition alone (``per_condition``), the degraded-games line, the robustness and paired
sections, a metric's section, and ``Part`` (one part of a report). ``toolkit.analysis.report`` assembles the
report from them and from the sections (``toolkit.analysis.werewolf_sections``)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable

import pandas as pd

from toolkit import analysis as A
from toolkit.analysis import progress
from toolkit.analysis.conclusions import side_models
from toolkit.llm import parse_spec
from toolkit.llm.registry import find
from toolkit.analysis.sections import METRICS
from toolkit.record.load import Results
from toolkit.record.tables import TABLES
from toolkit.werewolf.engine.roles import event_kinds


@dataclass(frozen=True)
class Part:
    """One section of a report: its title and what renders it (Markdown lines; a plot it links is written into
    the report's folder as it renders). ``eager`` parts are the summary a reader sees first (cheap: seconds on
    the committed example); the others are computed when asked for (the results explorer) or all in order
    (``write_report``)."""
    title: str
    render: Callable[[], list[str]]
    eager: bool = False


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


def rateable(t: Results) -> bool:
    """Whether a condition's ratings mean anything: some side has two models or more (with one model a side,
    every strength is 0 by construction, its interval [0, 0])."""
    m = side_models(t.players[t.players["game_id"].isin(t.games["game_id"])])
    return bool(len(m)) and (m["village_model"].nunique() > 1 or m["wolf_model"].nunique() > 1)


def conclusions_pairings(games: pd.DataFrame, players: pd.DataFrame) -> int:
    """How many (village model, wolf model) pairings the games hold."""
    m = side_models(players[players["game_id"].isin(games["game_id"])])
    return len(m.drop_duplicates(["village_model", "wolf_model"]))
