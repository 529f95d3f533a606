"""The report cannot mislead: conditions are split (and named), identical conditions are detected, every
table and plot carries n, count and cost axes start at 0, estimated tokens are marked."""

import json

import pandas as pd
import pytest

from toolkit import analysis as A
from toolkit.analysis import plots as P
from toolkit.study.experiments import run_werewolf_cell
from toolkit.analysis.report import write_report
from toolkit.record.load import games_with_params
from toolkit.record.load import load


def study(root):
    # heuristic players ignore notes: the reflection cells play the very same games
    for wolves in ("heuristic", "random"):
        for reflection in (False, True):
            run_werewolf_cell(str(root / f"w-{wolves}-r-{reflection}"), n_games=8, seed=0, wolf_model=wolves,
                              reflection=reflection)
    return load(root, complete_games=True)


@pytest.mark.slow
def test_report_splits_conditions_and_flags_identical_ones(tmp_path):
    t = study(tmp_path / "res")
    games = games_with_params(t)
    assert A.conditions(games) == ["wolf_model", "reflection"]
    same = A.identical_groups(games, t.events, t.players, ["wolf_model", "reflection"])
    pairs = {(r.a, r.b) for r in same.itertuples()}
    assert ("wolf_model=heuristic, reflection=False", "wolf_model=heuristic, reflection=True") in pairs
    assert (same["identical"] == 8).all() and len(same) == 2  # heuristic-vs-random pairs differ
    write_report(tmp_path / "res", tmp_path / "out")
    text = (tmp_path / "out" / "summary.md").read_text()
    assert "split by" in text and "nothing is pooled across them, except where a line says what it pools" in text
    assert text.count("**Identical games:**") == 2
    assert "**estimated**" in text
    # the reflecting heuristic players guessed roles: the belief metrics are reported, with chance beside them
    assert len(t.beliefs) > 0 and "Identity inference (guessed role = true role)" in text
    assert "best constant guess" in text and "Balanced accuracy" in text
    assert "`beliefs` table is empty" not in text and "Proper scores of the stated confidences" in text
    # 8 games per condition: below MIN_GAMES, so no interval is printed for them
    assert "too few games" in text and "## Robustness" in text and "fallback" in text
    # Elo and OpenSkill are not in the default report: no interval, and their order is unreliable at small gaps
    assert "Elo and OpenSkill: not shown" in text and "| elo |" not in text and "| mu |" not in text
    assert "**Coordination, not skill**" in text and "what random village ballots score" in text
    assert "`chance`: the best strategy that uses no information" in text
    win = A.win_rates(games, A.conditions(games))
    assert len(win[win["side"] == "village"]) == 4 and (win["n"] == 8).all()  # 4 conditions × 8 games, not 32


@pytest.mark.slow
def test_plots_show_n_start_counts_at_zero_and_mark_estimates(tmp_path):
    t = run_werewolf_cell(str(tmp_path / "r"), n_games=6, seed=0, wolf_model="random")
    games = t.games.assign(cond="a")
    fig = P.plot_costs(games, ["cond"], estimated=True)
    for ax in fig.axes:
        assert ax.get_ylim()[0] == 0
        assert any("n=6" in text.get_text() for text in ax.texts)
    assert "ESTIMATED" in fig.axes[1].get_ylabel()
    fig = P.plot_win_rates(games, ["cond"])
    assert any("n=6 games" in label.get_text() for label in fig.axes[0].get_xticklabels())
    fig = P.plot_vote_accuracy_by_day(t.events, t.players)
    assert any(text.get_text().startswith("n=") for text in fig.axes[0].texts)
    assert any("chance" in line.get_label() for line in fig.axes[0].get_lines())
    r = A.ratings(pd.concat([t.games]), t.players, by_side=True, n_boot=20)
    fig = P.plot_ratings(r)
    assert all("n=" in label.get_text() for label in fig.axes[0].get_yticklabels())


@pytest.mark.slow
def test_the_docs_recompute_the_committed_example_with_pandas(monkeypatch, capsys):
    """The pandas recipe of docs/experiments.md reproduces the analysis numbers on the committed example tables, and
    the ratings there put heuristic wolves above random wolves."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    page = (repo / "docs" / "experiments.md").read_text()
    code = page.split("### Recompute the example's numbers with pandas", 1)[1].split("```python", 1)[1]
    code = code.split("```", 1)[0]
    monkeypatch.chdir(repo)
    scope: dict = {}
    exec(code, scope)
    t = load(repo / "results" / "examples" / "tables")
    ours = scope["v"].groupby(["preset", "spec"])[["hit", "chance"]].agg(["sum", "size"])
    for preset in ("classic7", "standard9"):
        games = t.games[t.games["preset"] == preset]
        ids = set(games["game_id"])
        table = A.vote_accuracy(t.events[t.events["game_id"].isin(ids)], t.players[t.players["game_id"].isin(ids)],
                                ["spec", "round"])
        for r in table[table["round"] == "first"].itertuples():
            assert ours.loc[(preset, r.spec), ("hit", "sum")] == r.k
            assert ours.loc[(preset, r.spec), ("hit", "size")] == r.n
            assert ours.loc[(preset, r.spec), ("chance", "sum")] / r.n == pytest.approx(r.chance)
        ratings = A.ratings(games, t.players, by_side=True, n_boot=50).set_index(["spec", "side"])
        assert ratings.loc[("heuristic", "werewolves"), "rating"] > ratings.loc[("random", "werewolves"), "rating"]
    capsys.readouterr()


def test_a_study_without_a_village_ballot_still_gets_its_plot():
    """A game can end before any first-round village ballot (found when the prompts changed: a one-day game
    on the loopback server); the vote-accuracy plot is then empty, not a KeyError that stops the report."""
    events = pd.DataFrame(columns=["game_id", "seq", "day", "phase", "kind", "actor", "target"])
    players = pd.DataFrame(columns=["game_id", "seat", "role", "spec"])
    fig = P.plot_vote_accuracy_by_day(events, players)
    assert fig.axes[0].get_ylabel().startswith("ballots on a wolf") and not fig.axes[0].lines
    fig = P.plot_vote_accuracy_by_day(events, players, by="spec")
    assert not fig.axes[0].lines


def test_conditions_that_share_seeds_get_a_paired_difference():
    """Two sweep cells on the same 40 seeds whose outcomes mostly follow the seed (the role deal): the
    report pairs them by seed and says so; with different seeds it prints no paired section."""
    import numpy as np

    from toolkit.analysis.report_tables import paired_sections

    rng = np.random.default_rng(2)
    deal = rng.random(40) < 0.5
    rows = []
    for cond, flip in (("a", 0.1), ("b", 0.3)):
        won = np.where(rng.random(40) < flip, ~deal, deal)
        rows += [{"game_id": f"{cond}{s}", "seed": s, "cond": cond, "winner": "village" if w else "werewolves"}
                 for s, w in enumerate(won)]
    games = pd.DataFrame(rows)
    text = "".join(paired_sections(None, games, ["cond"]))
    assert "Paired comparisons" in text and "paired bootstrap-t (common seeds)" in text
    assert "| cond=a | cond=b | 40 |" in text
    assert paired_sections(None, games.assign(seed=range(80)), ["cond"]) == []


def test_elo_and_openskill_are_not_shown_in_the_default_report():
    """Their order was right in 0.67-0.70 of simulated tournaments at the example's gaps
    (benchmarks/rating_simulation.py) and they have no interval: the default report leaves them out."""
    from types import SimpleNamespace

    from toolkit.analysis.werewolf_sections import sequential_ratings_section

    players = pd.DataFrame({"game_id": ["g"] * 2, "side": ["village", "werewolves"], "spec": ["a", "b"]})
    text = "".join(sequential_ratings_section(SimpleNamespace(players=players), pd.DataFrame(), []))
    assert text.startswith("Elo and OpenSkill: not shown")


@pytest.mark.slow
def test_a_crafted_results_folder_cannot_make_the_report_write_outside_out(tmp_path):
    """A results folder someone sends you: a run parameter (a condition) holding ``../``, a preset name holding
    ``../``, and a link named like a report file pointing outside. Every file the report writes is named from
    sanitised names inside --out; the link is refused (one FileError), nothing outside changes."""
    from toolkit.core.files import FileError

    for wolves, note in (("heuristic", "../../../escaped-a"), ("random", "b")):
        cell = tmp_path / "res" / wolves
        run_werewolf_cell(str(cell), n_games=4, seed=0, wolf_model=wolves)
        runs_file = next(cell.glob("*/runs.parquet"))
        runs = pd.read_parquet(runs_file)
        config = runs["config"].map(lambda c: json.dumps({**json.loads(c), "note": note}))
        runs.assign(config=config).to_parquet(runs_file, index=False)  # a condition whose value holds ../
    first = next((tmp_path / "res" / "heuristic").glob("*/games.parquet"))
    pd.read_parquet(first).assign(preset="../presets/classic7").to_parquet(first, index=False)
    before = {p for p in tmp_path.rglob("*")}
    out = tmp_path / "deep" / "er" / "out"
    written = write_report(tmp_path / "res", out)
    assert written and all(p.resolve().parent == out.resolve() for p in written)
    assert {p for p in tmp_path.rglob("*") if out not in p.parents and p != out} - before == {
        tmp_path / "deep", tmp_path / "deep" / "er"}  # nothing new outside --out
    names = {p.name for p in written}
    assert any("escaped" in n for n in names) and any("presets-classic7" in n for n in names)
    assert not any("/" in n or n.startswith(".") for n in names)
    text = (out / "summary.md").read_text()
    assert all(f"]({n})" in text for n in names if n.endswith(".png"))  # the summary links what was written

    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    (out / "win_rates.png").unlink()
    (out / "win_rates.png").symlink_to(victim)  # planted in the folder the report writes to
    with pytest.raises(FileError, match="would be written outside"):
        write_report(tmp_path / "res", out)
    assert victim.read_text() == "mine\n"


def test_the_report_loads_only_the_calls_columns_its_sections_read(tmp_path):
    """At 100,000 games the calls table is most of the report's memory: it reads the columns its sections use,
    and those a registered metric says it reads (all but the prompts when it does not say)."""
    from toolkit.analysis.report import Report
    from toolkit.analysis.report_tables import REPORT_CALLS, report_columns
    from toolkit.analysis.sections import METRICS, Metric

    run_werewolf_cell(str(tmp_path / "r"), n_games=2, seed=0)
    report = Report(tmp_path / "r", tmp_path / "out")
    assert list(report.tables.calls.columns) == list(REPORT_CALLS) and len(report.tables.calls) > 20
    assert "model calls: " + str(len(report.tables.calls)) in report.render(report.parts[0])
    rate = pd.DataFrame([{"rate": 0.5, "ci_low": 0.0, "ci_high": 1.0, "n": 1}])
    METRICS["slow_calls"] = Metric("slow_calls", "Slow calls", lambda t: rate, "a note", calls=("latency_ms",))
    try:
        assert report_columns()["calls"] == [*REPORT_CALLS, "latency_ms"]
        METRICS["any_calls"] = Metric("any_calls", "Any", lambda t: rate, "a note")
        columns = report_columns()["calls"]
        assert "response_text" in columns and "latency_ms" in columns and "messages" not in columns
        assert report_columns()["events"] is None  # the other tables whole
    finally:
        METRICS.pop("slow_calls"), METRICS.pop("any_calls", None)


def test_a_description_repeated_down_a_column_is_written_once_below_the_table():
    """The example's night actions repeated the Seer's, the Guard's and the Witch's bar in every row (four lines of
    a notebook's column each), the votes table the ballot's bar in each of its 34 rows: each text now once."""
    from toolkit.analysis.report_tables import markdown_table

    seer = "Seer: never recheck (a uniformly random living player not checked before)"
    guard = "Guard: always protect self (where the rules allow it, else a random legal player)"
    one = markdown_table(pd.DataFrame({"spec": ["a", "b", "c"], "bar": [seer] * 3, "rate": [0.1, 0.2, 0.3]}))
    assert one.count(seer) == 1 and f"`bar` (every row): {seer}" in one and "| spec | rate |" in one
    few = markdown_table(pd.DataFrame({"spec": ["a", "b", "c", "d"], "bar": [seer, guard, None, seer]}))
    assert few.count(seer) == few.count(guard) == 1 and f"`bar`:\n\n- [1] {seer}\n- [2] {guard}\n" in few
    assert few.splitlines()[2:6] == ["| a | [1] |", "| b | [2] |", "| c |  |", "| d | [1] |"]
    # names, short values and texts that do not repeat stay in their cells
    kept = pd.DataFrame({"where": ["preset=classic7, against heuristic villagers"] * 2, "bar": [seer, guard]})
    assert markdown_table(kept).count("preset=classic7, against heuristic villagers") == 2
    assert seer in markdown_table(kept).splitlines()[2] and "`bar`" not in markdown_table(kept)


@pytest.mark.slow
def test_a_condition_one_run_did_not_set_is_reported_as_not_set(tmp_path):
    """One game played with ``--seat`` and one without (session 19's maintainer review, F1): under pandas 3 the
    report raised TypeError (NaN sorted with text); the missing condition reads ``(not set)``, never ``nan``."""
    import subprocess
    import sys

    res = tmp_path / "res"
    for seed, extra in ((1, ["--seat", "Player2=random"]), (2, [])):
        subprocess.run([sys.executable, "-m", "toolkit", "play", "--seed", str(seed), "--quiet", "--out", str(res),
                        *extra], check=True, capture_output=True, timeout=300)
    done = subprocess.run([sys.executable, "-m", "toolkit", "report", str(res), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    text = (tmp_path / "out" / "summary.md").read_text()
    assert "**seat (not set)** (1 games)" in text and "seat: [\"Player2=random\"] − (not set)" in text
    assert "seat nan" not in text and "seat=nan" not in text
