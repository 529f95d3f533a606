"""Adding a plug-in is one module plus one registration line: a role (the Knight of tests/werewolf/test_roles.py,
with the kind of events row it emits), an exporter and a report metric, all defined in this test, show in the
command line (``play``, ``export --help``, ``export``, ``view``, ``report``), in the report and in the exports with
no file of the package edited. (A discussion protocol is not yet a plug-in: the four are branches of the rules.)"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from tests.werewolf.test_roles import Knight, knight  # noqa: F401  (the fixture: the Knight's prompt files)
from toolkit.analysis.intervals import cluster_rate
from toolkit.analysis.sections import METRICS, Metric
from toolkit.analysis.sections import register as register_metric
from toolkit.cli import main
from toolkit.export import EXPORTERS, Exporter
from toolkit.export import register as register_exporter


def write_blessings(results, out: Path, options) -> list[Path]:
    """The exporter a study adds: the Knight's blessings as one CSV."""
    rows = results.events[results.events["kind"] == "bless"]
    path = out / "blessings.csv"
    rows[["game_id", "day", "actor", "target"]].to_csv(path, index=False)
    return [path]


def blessed_the_victim(t) -> pd.DataFrame:
    """The metric a study adds: the share of the Knight's blessings that fell on the wolves' victim of the night,
    with a cluster interval over games (chance: one living player in the number the Knight could bless)."""
    ev = t.events
    kills = ev[ev["kind"] == "kill"].set_index(["game_id", "day"])["target"]
    bless = ev[ev["kind"] == "bless"].assign(hit=lambda d: [int(kills.get((g, day)) == target) for g, day, target
                                                           in zip(d["game_id"], d["day"], d["target"])])
    if bless.empty:
        return pd.DataFrame()
    per = bless.groupby("game_id")["hit"].agg(["sum", "size"])
    r = cluster_rate(per["sum"], per["size"])
    return pd.DataFrame([{"rate": r["rate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"], "n": r["n"],
                          "n_games": r["n_games"]}])


@pytest.fixture
def plugins(knight):  # noqa: F811
    register_exporter(Exporter("blessings", write_blessings, "the Knight's blessings as one CSV"))
    register_metric(Metric("blessed_victim", "The Knight's blessings on the wolves' victim", blessed_the_victim,
                           "Share of blessings on the night's victim (95% cluster interval over games; n = "
                           "blessings); chance is one over the players the Knight may bless."))
    yield knight
    del EXPORTERS["blessings"], METRICS["blessed_victim"]


@pytest.mark.slow
def test_a_role_an_exporter_and_a_metric_added_here_reach_the_cli_the_report_and_the_exports(plugins, tmp_path,
                                                                                             capsys):
    preset = tmp_path / "knight7.yaml"
    preset.write_text(json.dumps(plugins.model_dump()))  # JSON is YAML
    results = tmp_path / "results"
    for seed in (0, 1, 2):
        assert main(["play", "--preset", str(preset), "--seed", str(seed), "--quiet", "--out", str(results)]) == 0
    capsys.readouterr()

    # the exporter: in export's help, and run by export
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    assert "blessings  the Knight's blessings as one CSV" in capsys.readouterr().out
    assert main(["export", "blessings", str(results), "--out", str(tmp_path / "csv")]) == 0
    with (tmp_path / "csv" / "blessings.csv").open() as f:
        blessings = list(csv.DictReader(f))
    assert len(blessings) >= 3 and all(b["target"].startswith("Player") for b in blessings)

    # the role's kind of row: in the Kaggle export (a moderator entry: Kaggle has no Knight) and the HTML view
    assert main(["export", "kaggle", str(results), "--out", str(tmp_path / "kaggle")]) == 0
    entries = [json.loads(e["json_str"]) for p in (tmp_path / "kaggle").glob("*.json")
               for step in json.loads(p.read_text())["info"]["MODERATOR_OBSERVATION"] for e in step
               if e["data_type"] == "dict"]
    assert sum(e["data"].get("kind") == "bless" for e in entries) >= 1
    game = (tmp_path / "kaggle").glob("*.json").__next__().stem
    assert main(["view", str(results), "--game", game, "--out", str(tmp_path / "game.html")]) == 0
    assert 'data-kind="bless"' in (tmp_path / "game.html").read_text()

    # the report: the metric's section, and the Knight's blessings among the decisions of the fallback rates
    assert main(["report", str(results), "--out", str(tmp_path / "report")]) == 0
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert "## The Knight's blessings on the wolves' victim" in summary
    section = summary.split("## The Knight's blessings on the wolves' victim")[1].split("\n## ")[0]
    assert "| rate | ci_low | ci_high | n | n_games |" in section
    from toolkit.analysis.report import fallback_rates
    from toolkit.record.load import load

    t = load(results)
    assert int(fallback_rates(t)["decisions"].sum()) == int(t.events["actor"].notna().sum())


def test_a_metric_without_an_interval_or_n_is_refused_in_the_report():
    bare = Metric("bare", "Bare", lambda t: pd.DataFrame([{"rate": 0.5}]), "a rate with nothing beside it")
    with pytest.raises(ValueError, match="metric bare: its table has no ci_low, ci_high, n or n_games"):
        bare.check(bare.compute(None))
    with pytest.raises(ValueError, match="a note saying what it compares with"):
        register_metric(Metric("silent", "Silent", blessed_the_victim, " "))


def test_a_provider_registered_here_reaches_plays_help_the_widgets_and_the_reports_usage_note(capsys):
    """A model provider's declaration (usage, example, whether it reports real token usage) is what ``play
    --help``, the werewolf widget's seat boxes and the report's "token counts are estimated" read."""
    from toolkit.analysis.report import tokens_estimated
    from toolkit.llm import registry
    from toolkit.llm.offline import RandomBackend
    from toolkit.record.load import Results
    from toolkit.ui.werewolf import model_choices

    registry.PROVIDERS["metered"] = registry.Provider("metered", lambda arg, config: RandomBackend(),
                                                      "metered:NAME", arg="required", example="metered:small",
                                                      real_usage=True)
    try:
        with pytest.raises(SystemExit):
            main(["play", "--help"])
        assert "metered:NAME" in " ".join(capsys.readouterr().out.split())
        assert "metered:small" in model_choices() and "human" in model_choices()
        frame = pd.DataFrame

        def tables(*specs):
            return Results(runs=frame(), games=frame(), players=frame({"spec": list(specs)}), events=frame(),
                           calls=frame(), sessions=frame({"spec": []}), tool_calls=frame(), attempts=frame(),
                           beliefs=frame())

        assert not tokens_estimated(tables("metered:small", "openai:gpt-4o-mini"))
        assert tokens_estimated(tables("metered:small", "random"))
    finally:
        del registry.PROVIDERS["metered"]
