"""The werewolf report's sections, as data: each a ``Section`` (its name, its title, what renders it from the
report's ``Context``) in the registry ``SECTIONS``, in the order the report shows them; the study's metrics
(``toolkit.analysis.sections.METRICS``) follow them. A section is one function of the ``Context`` (test one alone:
``SECTIONS["votes"].render(context)``), and ``SECTIONS.register(Section(...))`` adds a study's own section to
every report (after the built-in ones and the metrics)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import pandas as pd

from toolkit import analysis as A
from toolkit.analysis import plots as P
from toolkit.analysis import progress
from toolkit.analysis.checks import labels
from toolkit.analysis.conclusions import conclusions, design_matrix, effects, matrix_text, side_models
from toolkit.analysis.degeneracy import echo_counts
from toolkit.analysis.prompt_cache import cached_share
from toolkit.analysis.report_tables import (Part, conditions_of, degraded_count, degraded_line,
                                     games_table, markdown_table, metric_section,
                                     one_model_per_side, paired_sections, per_condition, rateable,
                                     robustness_sections, tokens_estimated)
from toolkit.analysis.sections import METRICS
from toolkit.core.files import inside
from toolkit.core.registry import Registry
from toolkit.record.load import Results, games_with_params, scan

__all__ = ["SECTIONS", "Context", "Section", "parts"]


@dataclass
class Context:
    """What a section reads: the tables (degraded games cleared when the ratings count them), the games with
    their run parameters and the conditions they are split by (``by``), where its plots go (``out``, each path
    added to ``written``), the results folder, and the facts several sections say (degraded games, estimated
    tokens, more than one model)."""

    tables: Results
    games: pd.DataFrame
    by: list[str]
    out: Path
    written: list[Path]
    folder: Path
    n_degraded: int = 0
    include_degraded: bool = False
    estimated: bool = False
    multi: bool = False

    @classmethod
    def of(cls, tables: Results, out: Path, written: list[Path], folder: Path,
           include_degraded: bool = False) -> "Context":
        n_degraded = degraded_count(tables.games)
        if include_degraded and n_degraded:  # the ratings read games.degraded: cleared, they count every game
            tables = replace(tables, games=tables.games.assign(degraded=False))
        games = games_with_params(tables)
        by = A.conditions(games)  # a condition some runs did not set reads "(not set)" in every heading, not "nan"
        games = games.assign(**{c: labels(games[c]) for c in by if games[c].isna().any()})
        return cls(tables, games, by, out, written, folder, n_degraded, include_degraded,
                   tokens_estimated(tables), tables.players["spec"].nunique() > 1)

    def table(self, metric: Callable[[Results], pd.DataFrame]) -> str:
        """A metric of the tables, per condition (``per_condition``), as a markdown table."""
        return markdown_table(per_condition(metric, self.games, self.tables, self.by))

    def degraded(self, what: str = "the table above") -> list[str]:
        return degraded_line(self.n_degraded, len(self.games), self.include_degraded, what)


@dataclass(frozen=True)
class Section:
    """One section of the werewolf report: ``render(context)`` gives its Markdown lines (writing its plots into
    ``context.out``); ``eager``: part of the summary a reader sees first (cheap); ``shown(context)``: whether this
    report has it (None: always)."""

    name: str
    title: str
    render: Callable[[Context], list[str]]
    eager: bool = False
    shown: Callable[[Context], bool] | None = None


def _summary(c: Context) -> list[str]:
    tables, games, by, multi = c.tables, c.games, c.by, c.multi
    estimated, out, written, degraded = c.estimated, c.out, c.written, c.degraded
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


def _win_rates(c: Context) -> list[str]:
    tables, games, by, out = c.tables, c.games, c.by, c.out
    written, degraded = c.written, c.degraded
    pooled = pooled_note(games, tables.players, by)
    title = "Win rate by side" + (f" per {', '.join(by)}" if by else "") + (
        f": each point pools {pooled}" if pooled else "")
    written.append(P.save(P.plot_win_rates(games, by, title=title), inside(out, "win_rates", ".png")))
    return ["## Win rates by side (95% intervals: exact below 30 games, else Wilson; n = games)\n",
            *([f"Each row pools {pooled}.\n"] if pooled else []),
            markdown_table(games_table(A.win_rates(games, by))), *degraded(), "![win rates](win_rates.png)\n"]


def _models(c: Context) -> list[str]:
    tables, games, by, out = c.tables, c.games, c.by, c.out
    written, degraded = c.written, c.degraded
    s = ["## Models: win rate by side and by role\n",
         "Per seat-game; intervals resample games. `n` counts seat-games, `n_games` games.\n",
         c.table(lambda t: A.role_win_rates(t.games, t.players, ["spec", "side"])), *degraded()]
    if one_model_per_side(tables.players):
        s.append("By role: not shown — every game has one model per side, so a model's win rate is the "
                 "same for every village role by construction.\n")
    else:
        s.append(c.table(lambda t: A.role_win_rates(t.games, t.players, ["spec", "role"])))
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
          c.table(lambda t: A.separation(t.games, t.players))]
    return s + sequential_ratings_section(tables, games, by)


def _votes(c: Context) -> list[str]:
    tables, games, by, multi = c.tables, c.games, c.by, c.multi
    out, written = c.out, c.written
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
            c.table(lambda t: A.vote_accuracy(t.events, t.players, vote_by, games=t.games)),
            "By day (first round, per model): later days are survivors — games still running, and in them the "
            "players still alive — so a day's rate is not the same population as day 1's:\n",
            c.table(_first_round_by_day),
            *vote_plots,
            *_exile_sections(c)]


def _survival(c: Context) -> list[str]:
    return ["## Survival and dominance\n",
            "KSR (seat survived to the end) by model and role — mostly a restatement of the win (a winning "
            "side's seats survive more); margin of win (living share of the winning side) and speed of win "
            "(1 / days) are over **won** seat-games only, so a model that rarely wins and wins only early looks "
            "fast: read them beside the win rate, never alone:\n",
            c.table(lambda t: A.ksr(t.games, t.players)),
            c.table(lambda t: A.win_margin_speed(t.games, t.players)),
            "Their unconditional counterpart: each model's win rate per side against what its roles win on "
            "average in these games (`adjusted` = rate − role baseline; every seat-game, won or lost; the "
            "interval is the adjusted value's):\n",
            c.table(lambda t: A.role_adjusted_wins(t.games, t.players))]


def _night(c: Context) -> list[str]:
    tables, games, by, multi = c.tables, c.games, c.by, c.multi
    return ["## Night actions (intervals resample games; `chance` = the bar named in `bar`, `random` = a "
            "uniformly random legal answer, passing included)\n",
            *_night_tables(per_condition(lambda t: A.night_actions(t.events, t.players,
                                                                   ["spec"] if multi else None, t.games),
                                         games, tables, by))]


def _beliefs(c: Context) -> list[str]:
    tables = c.tables
    s = ["## Beliefs and deception\n"]
    if len(tables.beliefs):
        s += ["Identity inference (guessed role = true role), by model and side: `chance` = the best constant "
              "guess per model, believer role and day (the role most often true on those rows; a tie shares the "
              "hit), `lift` the lift over it — the number to read; `random` = a random guess among the roles:\n",
              c.table(lambda t: A.identity_accuracy(t.beliefs, t.players, ["spec", "side"])),
              "Balanced accuracy (the mean over true roles of the share guessed right; a constant guess scores "
              "1 / roles, like chance):\n",
              c.table(lambda t: A.balanced_accuracy(t.beliefs, t.players, ["spec", "side"])),
              "By day (later days are survivors):\n",
              c.table(lambda t: A.identity_accuracy(t.beliefs, t.players, ["spec", "day"])),
              "Proper scores of the stated confidences (lower is better), and their skill against the no-skill "
              "forecast that always states the observed accuracy (`brier_skill`, `log_skill`: above 0 the "
              "confidences carry information):\n",
              c.table(lambda t: A.brier(t.beliefs, t.players, ["spec"])),
              "The village's detection of the wolves by model and day: recall (`rate`: rows about a wolf that "
              "guess Werewolf) against its bar, the false-positive rate (rows about a village player that guess "
              "Werewolf: `chance`); `lift` = recall − false-positive rate, 0 for any guess that ignores the "
              "game, with a paired interval resampling games:\n",
              c.table(lambda t: A.wolf_detection(t.beliefs, t.players, ["spec", "day"]))]
    else:
        s.append("The `beliefs` table is empty in these results (no player reflected with role guesses), so "
                 "identity inference, Brier scores and detection over time are not reported.\n")
    return s + [
        "Claims in speeches checked against the truth (a role claim is false when it is not the speaker's "
        "role — concealment included; a check claim is false unless the Seer made that check):\n",
        c.table(lambda t: A.lie_rates(t.events, t.players, ["spec", "side", "kind"])),
        "`by_construction` marks rates that the rules fix (a wolf claiming a village role always lies): counts, "
        "not choices.\n",
        "How often check claims were followed by the other village voters' later ballots that day (false vs "
        "true claims; neither the speaker's nor the accused's ballot counts; chance = 1 / (living − 1)). "
        "`claim_falsity_within_side` is false where every false claim is a wolf's and every true one the "
        "Seer's — there \"false vs true\" is \"wolf vs Seer\", not a test of falsity:\n",
        c.table(lambda t: A.false_claims_followed(t.events, t.players, t.beliefs, games=t.games)),
        "Vote swing: share of the other voters' ballots on the player a speech accused or suspected, against "
        "chance (a wolf speaker's fellow wolves are left out: they follow an ally, not an argument):\n",
        c.table(lambda t: A.vote_swing(t.events, t.players, games=t.games))]


def _costs(c: Context) -> list[str]:
    tables, games, by, estimated = c.tables, c.games, c.by, c.estimated
    out, written = c.out, c.written
    written.append(P.save(P.plot_costs(games, by, estimated=estimated), inside(out, "costs", ".png")))
    return ["## Calls, tokens, cost and fallbacks per game (95% bootstrap intervals; n = games)\n",
            ("Token counts are estimated.\n" if estimated else ""),
            markdown_table(A.per_game_costs(games, by)), "![costs](costs.png)\n",
            *_cached_share_section(tables),
            f"Games needed for ±5 points on a win rate: {A.sample_size(0.05)} per condition (±10 points: "
            f"{A.sample_size(0.1)}).\n"]


def _first_round_by_day(t: Results) -> pd.DataFrame:
    by = ["spec", "round", "day"] if t.players["spec"].nunique() > 1 else ["round", "day"]
    table = A.vote_accuracy(t.events, t.players, by, games=t.games)
    return table[table["round"] == "first"] if len(table) else table


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


def pooled_note(games: pd.DataFrame, players: pd.DataFrame, by: list[str]) -> str:
    """What each win rate by side pools, exactly: how many model pairings and how many games each pairing has (a
    range when they differ), when some condition holds more than one pairing; else ""."""
    sizes = [side_models(players[players["game_id"].isin(g["game_id"])]).value_counts(["village_model", "wolf_model"])
             for _, g in A.groups(games, by)]
    if max((len(s) for s in sizes), default=0) < 2:
        return ""
    span = lambda values: f"{min(values)}" + (f"–{max(values)}" if min(values) != max(values) else "")  # noqa: E731
    return (f"{span([len(s) for s in sizes])} model pairings, {span([int(n) for s in sizes for n in s])} games "
            "each (the design matrix splits them)")


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


def _exile_sections(c: Context) -> list[str]:
    """IRP (a ballot-level accuracy) and, beside it only, VSS and voting success (coordination)."""
    return ["IRP (every village ballot on a wolf, as the Kaggle Game Arena werewolf harness counts it: forced "
            "ballots included, an abstention a miss) against the same bar as the ballots above:\n",
            c.table(lambda t: A.irp(t.events, t.players, games=t.games)),
            "**Coordination, not skill** — read beside the ballot-level accuracy above, never alone: VSS (on "
            "days a wolf was exiled, the village ballots for that wolf) and voting success (days a wolf was "
            "exiled, per village model). Both reward villagers who vote together: a convention that uses no "
            "information at all (every villager votes the lowest-numbered living seat) has ballots at the bar "
            "yet scores VSS near 1. Their `chance` is what random village ballots score (simulated per day, "
            f"{A.metrics.EXILE_DRAWS} draws a kind of day, Monte-Carlo standard error ≤ 0.007; the wolves' "
            "ballots as cast; the preset's tie rule, self-votes and abstentions):\n",
            c.table(lambda t: A.vss(t.events, t.players, None, t.games)),
            c.table(lambda t: A.voting_success(t.events, t.players, ["village_spec"] if c.multi else None, t.games))]


def sequential_ratings_section(tables: Results, games: pd.DataFrame, by: list[str]) -> list[str]:
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


def _robustness(c: Context) -> list[str]:
    return robustness_sections(c.tables, c.games, c.by)


def _paired(c: Context) -> list[str]:
    return paired_sections(c.tables, c.games, c.by)


def _degeneracy(c: Context) -> list[str]:
    return _degeneracy_section(c.tables, c.games, c.by, c.folder)


def _check(section: Section) -> None:
    if not str(section.title).strip() or not callable(section.render):
        raise ValueError(f"report section {section.name}: it needs a title (its heading) and a render function")


SECTIONS: Registry[Section] = Registry("report section", check=_check)
for _section in (
    Section("summary", "Summary: conditions and conclusions", _summary, eager=True),
    Section("win_rates", "Win rates by side", _win_rates, eager=True),
    Section("models", "Models: win rates by role, ratings, which models differ", _models, shown=lambda c: c.multi),
    Section("votes", "Votes against the best information-free ballot", _votes),
    Section("survival", "Survival and dominance", _survival),
    Section("night", "Night actions", _night),
    Section("beliefs", "Beliefs and deception", _beliefs),
    Section("robustness", "Robustness: draws, errors, fallbacks", _robustness),
    Section("paired", "Paired comparisons between conditions", _paired),
    Section("costs", "Calls, tokens, cost and fallbacks per game", _costs),
    Section("degeneracy", "Degenerate play per model", _degeneracy),
):
    SECTIONS.register(_section)
SECTIONS.seal()


def parts(tables: Results, out: Path, written: list[Path], folder: Path, include_degraded: bool = False) -> list[Part]:
    """The werewolf report's parts: every section this report has, then one per metric, then the sections a
    plug-in added, each under its title as a ``##`` heading (the built-ins write their own)."""
    c = Context.of(tables, out, written, folder, include_degraded)
    shown = [s for s in SECTIONS.values() if s.shown is None or s.shown(c)]
    builtin = [s for s in shown if s.name in SECTIONS.builtin]
    added = [s for s in shown if s.name not in SECTIONS.builtin]
    return ([Part(s.title, lambda s=s: s.render(c), eager=s.eager) for s in builtin]
            + [Part(m.title, lambda m=m: metric_section(m, c.tables, c.games, c.by)) for m in METRICS.values()]
            + [Part(s.title, lambda s=s: headed(s, c), eager=s.eager) for s in added])


def headed(section: Section, context: Context) -> list[str]:
    """A plug-in section's lines under its title as a ``##`` heading."""
    return [f"## {section.title}\n", *section.render(context)]
