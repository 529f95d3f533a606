"""Adding a plug-in is one module plus one registration line: a role (the Knight of tests/werewolf/test_roles.py,
with the kind of events row it emits), an exporter and a report metric, all defined in this test, show in the
command line (``play``, ``export --help``, ``export``, ``view``, ``report``), in the report and in the exports with
no file of the package edited; so does a discussion protocol (``play --discussion``, its clause of the rules every seat
is shown, and the order the day's speeches are played in), a tie rule of the day's vote (a preset naming it, its
clause of the rules, the seat a tied vote eliminates) and an environment kind."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from pydantic import ValidationError

from toolkit.werewolf.engine import discussions, votes
from toolkit.werewolf.engine.votes import TieRule
from toolkit.agent.tools.base import tool
from toolkit.werewolf.engine.discussions.base import Discussion, announce_order

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
    from toolkit.analysis.report_tables import fallback_rates
    from toolkit.record.load import load

    t = load(results)
    assert int(fallback_rates(t)["decisions"].sum()) == int(t.events["actor"].notna().sum())


def test_a_metric_without_an_interval_or_n_is_refused_in_the_report():
    bare = Metric("bare", "Bare", lambda t: pd.DataFrame([{"rate": 0.5}]), "a rate with nothing beside it")
    with pytest.raises(ValueError, match="metric bare: its table has no ci_low, ci_high, n or n_games"):
        bare.check(bare.compute(None))
    with pytest.raises(ValueError, match="a note saying what it compares with"):
        register_metric(Metric("silent", "Silent", blessed_the_victim, " "))


def test_a_provider_registered_here_reaches_plays_help_preflight_the_widgets_and_the_reports_usage_note(capsys,
                                                                                                      tmp_path):
    """A model provider's declaration (usage, example, its check, whether it reports real token usage) is what
    ``play --help``, preflight, the werewolf widget's seat boxes and the report's "token counts are estimated"
    read."""
    from toolkit.analysis.report_tables import tokens_estimated
    from toolkit.llm import registry
    from toolkit.llm.offline import RandomBackend
    from toolkit.record.load import Results
    from toolkit.ui.werewolf import model_choices

    def sizes(arg, seats, probe):  # its preflight check: the sizes it serves
        if arg not in ("small", "large"):
            raise ValueError(f"no size {arg!r} (small or large)")

    registry.PROVIDERS.register(registry.Provider("metered", lambda arg, config: RandomBackend(), "metered:NAME",
                                                  arg="required", example="metered:small", real_usage=True,
                                                  check=sizes))
    try:
        with pytest.raises(SystemExit):
            main(["play", "--help"])
        assert "metered:NAME" in " ".join(capsys.readouterr().out.split())
        assert "metered:small" in model_choices() and "human" in model_choices()
        # preflight runs the provider's own check: one line, before any folder is made
        assert main(["play", "--model", "metered:huge", "--out", str(tmp_path / "out")]) == 2
        assert capsys.readouterr().err == "error: --model: metered:huge: no size 'huge' (small or large)\n"
        assert not (tmp_path / "out").exists()
        frame = pd.DataFrame

        def tables(*specs):
            return Results(runs=frame(), games=frame(), players=frame({"spec": list(specs)}), events=frame(),
                           calls=frame(), sessions=frame({"spec": []}), tool_calls=frame(), attempts=frame(),
                           beliefs=frame())

        assert not tokens_estimated(tables("metered:small", "openai:gpt-4o-mini"))
        assert tokens_estimated(tables("metered:small", "random"))
    finally:
        del registry.PROVIDERS["metered"]


class Reverse(Discussion):
    """The protocol a study adds: each seat speaks once, from the last living seat to the first."""

    name = "reverse"
    summary = "one speaker at a time, from the last seat to the first"

    def open(self, game):
        order = game.around(0)[::-1]
        game.speech_queue = list(order)
        announce_order(game, order, " From the last seat to the first.")


REVERSE_PROMPT = """{% macro day() %}everyone speaks once, from the last seat to the first{% endmacro %}
"""


@pytest.fixture
def reverse(tmp_path, monkeypatch):
    import shutil

    prompts = tmp_path / "prompts"
    shutil.copytree(Path(__file__).resolve().parents[1] / "prompts", prompts)
    (prompts / "werewolf" / "discussions" / "reverse.j2").write_text(REVERSE_PROMPT)
    monkeypatch.setenv("TOOLKIT_PROMPTS", str(prompts))
    yield discussions.register(Reverse())
    del discussions.REGISTRY["reverse"]


@pytest.mark.slow
def test_a_discussion_protocol_added_here_reaches_plays_help_the_rules_and_a_played_game(reverse, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["play", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "reverse: one speaker at a time, from the last seat to the first" in shown
    results = tmp_path / "results"
    assert main(["play", "--discussion", "reverse", "--seed", "3", "--max-days", "1", "--quiet",
                 "--out", str(results)]) == 0
    from toolkit.record.load import load

    t = load(results)
    day1 = t.events[(t.events["day"] == 1) & (t.events["kind"] == "speech")]
    speakers = day1["actor"].tolist()
    seats = [f"Player{i}" for i in range(1, 8)]
    assert speakers == [s for s in reversed(seats) if s in speakers] and len(speakers) >= 5
    speak_calls = t.calls[t.calls["action"] == "speak"]
    assert len(speak_calls) == len(speakers)
    assert speak_calls["messages"].str.contains("By day everyone speaks once, from the last seat to the first, "
                                                "then votes").all()
    # refused in one line when not registered
    del discussions.REGISTRY["reverse"]
    with pytest.raises(SystemExit):
        main(["play", "--discussion", "reverse", "--out", str(tmp_path / "none")])
    assert "invalid choice: 'reverse'" in capsys.readouterr().err
    discussions.register(reverse)


class LastSeat(TieRule):
    """The tie rule a study adds: of the tied, the last in seat order is eliminated."""

    name = "last_seat"
    summary = "the last of the tied in seat order is eliminated"

    def settle(self, game, leaders, counted):
        return leaders[-1]


LAST_SEAT_PROMPT = """{% macro tie() %}a tie eliminates the last of the tied in seat order{% endmacro %}
{% macro all_abstain() %}the last seat is eliminated{% endmacro %}
"""


@pytest.fixture
def last_seat(tmp_path, monkeypatch):
    import shutil

    prompts = tmp_path / "prompts"
    shutil.copytree(Path(__file__).resolve().parents[1] / "prompts", prompts)
    (prompts / "werewolf" / "votes" / "ties" / "last_seat.j2").write_text(LAST_SEAT_PROMPT)
    monkeypatch.setenv("TOOLKIT_PROMPTS", str(prompts))
    yield votes.register_tie(LastSeat())
    votes.TIES.pop("last_seat", None)


def test_a_vote_tie_rule_added_here_reaches_the_preset_the_rules_and_a_tied_vote(last_seat):
    from tests.werewolf.test_rules_flags import ROLES7, day, night
    from toolkit.prompting.structured_call import render
    from toolkit.werewolf.engine.preset import Preset, load_preset
    from toolkit.werewolf.engine.rules import Game

    values = {**load_preset("classic7").model_dump(exclude={"models"}), "vote_tie": "last_seat"}
    preset = Preset.model_validate(values)
    rules = render("werewolf/rules.j2", preset={**values, "n_players": preset.n_players})
    assert "; the most votes is eliminated, a tie eliminates the last of the tied in seat order." in rules
    game = Game(preset, 1, dict(ROLES7))
    night(game, hunt="Player3", protect="Player3")  # nobody dies: all seven vote, one vote each (a 7-way tie)
    day(game)
    assert [e.target for e in game.events if e.kind == "elimination"] == ["Player7"]
    # refused in one line when not registered
    del votes.TIES["last_seat"]
    with pytest.raises(ValidationError, match="unknown vote_tie 'last_seat'.*; choose one of none, revote, random"):
        Preset.model_validate(values)


class Clock:
    """The engineer tool a study adds: one ``@tool`` method, made from the session's tool context."""

    def __init__(self, context):
        self.root = context.environment.root

    @tool
    def now(self) -> str:
        """Say the time the study's clock shows."""
        return "12:00"


@pytest.mark.slow
def test_an_engineer_tool_added_here_reaches_a_role_the_tool_listing_and_a_session(tmp_path, monkeypatch):
    import asyncio

    from toolkit.agent.loop import toolset
    from toolkit.agent.loop.role import RoleConfig, load_role
    from toolkit.agent.loop.session import Session, SessionConfig

    toolset.register(Clock)  # named after the class
    role = RoleConfig.model_validate({**load_role("engineer").model_dump(), "tools": ["Clock", "Plan"]})
    script = tmp_path / "s.yaml"
    script.write_text(json.dumps({"answers": [json.dumps([{"command_name": "Clock.now", "args": {}}]),
                                              json.dumps([{"command_name": "end", "args": {}}])]}))
    s = Session(SessionConfig(role, "t", tmp_path / "ws", f"scripted:{script}", environment="local"))
    assert "Clock.now()" in s.agent.system_values["tools"]
    result = asyncio.run(s.run())
    assert [(t.tool, t.output) for t in result.tool_calls] == [("Clock.now", "12:00")] and result.ended_by == "end"
    del toolset.TOOLS["Clock"]  # unregistered, a role naming it is refused in one line
    with pytest.raises(ValidationError, match=r"unknown tools \['Clock'\]"):
        RoleConfig.model_validate({**load_role("engineer").model_dump(), "tools": ["Clock"]})


class Marked:
    """The kind of environment a study adds: the host (as ``local``), every command seeing ``MARKED=yes``. Made
    here as a subclass of the local environment so that it runs on any machine."""

    @staticmethod
    def make(workspace, config, allowed_remotes=()):
        from toolkit.agent.environments.environment import LocalEnvironment

        class MarkedEnvironment(LocalEnvironment):
            name = "marked"

            def env(self, trace_git: bool = True):
                return {**super().env(trace_git), "MARKED": "yes"}

        return MarkedEnvironment(workspace, config, allowed_remotes)


@pytest.fixture
def marked():
    from toolkit.agent.environments import kinds

    kinds.register(kinds.Kind("marked", "the host, every command marked", False, Marked.make))
    kinds.register(kinds.Kind("faraway", "a machine this one cannot reach", True, Marked.make,
                              problem=lambda: "faraway is not reachable from here"))
    yield kinds
    del kinds.KINDS["marked"], kinds.KINDS["faraway"]


@pytest.mark.slow
async def test_an_environment_kind_added_here_reaches_the_cli_preflight_role_files_and_a_session(marked, tmp_path,
                                                                                                  capsys):
    with pytest.raises(SystemExit):
        main(["engineer", "--help"])
    assert "marked: the host, every command marked" in " ".join(capsys.readouterr().out.split())
    # preflight reads the kind's own check: one line, before any folder is made
    (tmp_path / "ws").mkdir()
    assert main(["engineer", "--workspace", str(tmp_path / "ws"), "--task", "t", "--env", "faraway",
                 "--model", "random", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: --env faraway: faraway is not reachable from here; choose one of auto, bubblewrap, local, "
                   "docker, podman, marked") and not (tmp_path / "out").exists()
    # a role file may name it, and a session's commands run in it
    from toolkit.agent.environments.environment import EnvironmentConfig, make_environment

    env = make_environment(None, tmp_path / "ws", EnvironmentConfig(kind="marked"))
    try:
        result = await env.execute("echo $MARKED", 10)
        assert env.name == "marked" and result.output.strip() == "yes" and result.exit_code == 0
    finally:
        await env.stop()
    with pytest.raises(ValueError, match="unknown environment 'vm'; choose one of auto, bubblewrap, local, docker, "
                                         "podman, marked, faraway"):
        EnvironmentConfig(kind="vm")


def test_a_plug_in_cannot_replace_a_built_in_but_may_register_the_same_again(monkeypatch):
    """A declaration under a built-in's name is refused in one line and the built-in stays (before, a
    ``bubblewrap`` kind that confines nothing silently took the sandbox's place; likewise a protocol, a role, an
    exporter); the same declaration again (a notebook cell run twice) is no error, and a plug-in's own name takes
    its new definition."""
    import dataclasses

    from toolkit.agent.environments import kinds
    from toolkit.werewolf.engine import roles

    sandbox = kinds.KINDS["bubblewrap"]
    monkeypatch.setitem(kinds.KINDS, "bubblewrap", sandbox)  # put back as it was, whatever is registered below
    with pytest.raises(ValueError) as err:
        kinds.register(dataclasses.replace(sandbox, confined=False))
    assert str(err.value) == ("environment 'bubblewrap' is built in: a plug-in cannot replace it; register yours "
                              "under another name")
    assert kinds.KINDS["bubblewrap"] is sandbox and kinds.KINDS["bubblewrap"].confined
    assert kinds.register(sandbox) is sandbox  # the same object again
    assert kinds.register(dataclasses.replace(sandbox)).confined  # an equal one (the cell that made it, run again)

    round_robin = discussions.REGISTRY["round_robin"]
    monkeypatch.setitem(discussions.REGISTRY, "round_robin", round_robin)
    discussions.register(type(round_robin)())  # the same class, the same attributes

    class Hijack(Reverse):
        name = "round_robin"

    with pytest.raises(ValueError, match=r"^discussion 'round_robin' is built in: a plug-in cannot replace it"):
        discussions.register(Hijack())
    assert discussions.REGISTRY["round_robin"].summary == round_robin.summary

    class Wolf(roles.REGISTRY["Werewolf"].__class__):
        side = "village"

    with pytest.raises(ValueError, match=r"^role 'Werewolf' is built in: a plug-in cannot replace it"):
        roles.register(Wolf())
    assert roles.REGISTRY["Werewolf"].side == "werewolves"
    with pytest.raises(ValueError, match=r"^exporter 'kaggle' is built in: a plug-in cannot replace it"):
        register_exporter(Exporter("kaggle", write_blessings, "not Kaggle's replays"))
    assert EXPORTERS["kaggle"].write is not write_blessings

    try:
        for run in (1, 2):  # a notebook cell defining and registering a protocol, run twice
            class Again(Reverse):
                summary = f"run {run}"

            discussions.register(Again())
        assert discussions.REGISTRY["reverse"].summary == "run 2"
    finally:
        discussions.REGISTRY.pop("reverse", None)


def test_a_discussion_without_its_prompt_file_is_one_line_naming_the_file(tmp_path, monkeypatch):
    """A protocol registered without ``prompts/werewolf/discussions/<name>.j2``: the game's first rendering of
    the rules says which file is missing from which folder, in one line (before, Jinja's TemplateNotFound and
    its traceback through the rules template)."""
    import shutil

    from toolkit.werewolf.game import GameConfig, GameRunner

    prompts = tmp_path / "prompts"
    shutil.copytree(Path(__file__).resolve().parents[1] / "prompts", prompts)
    monkeypatch.setenv("TOOLKIT_PROMPTS", str(prompts))
    discussions.register(Reverse())
    try:
        with pytest.raises(FileNotFoundError) as err:
            GameRunner(GameConfig(seed=0, discussion="reverse"))
    finally:
        del discussions.REGISTRY["reverse"]
    from toolkit.prompting.structured_call import prompts_dirs

    assert str(err.value) == (f"prompt file werewolf/discussions/reverse.j2 not found in {':'.join(prompts_dirs())} "
                              "(a plug-in's prompt files go in a folder TOOLKIT_PROMPTS names, searched before the "
                              "package's)")


def test_play_refuses_a_missing_prompt_file_before_it_makes_a_run_folder(tmp_path, monkeypatch, capsys):
    """``play --discussion`` of a protocol without its prompt file: exit 2, the one line, and no run folder (before,
    the run folder was made first and kept only runs.parquet: a run with no game, which ``load`` reads as a run)."""
    import shutil

    prompts = tmp_path / "prompts"
    shutil.copytree(Path(__file__).resolve().parents[1] / "prompts", prompts)
    monkeypatch.setenv("TOOLKIT_PROMPTS", str(prompts))
    results = tmp_path / "results"
    results.mkdir()
    discussions.register(Reverse())
    try:
        code = main(["play", "--discussion", "reverse", "--quiet", "--out", str(results)])
    finally:
        del discussions.REGISTRY["reverse"]
    assert code == 2 and list(results.iterdir()) == []
    from toolkit.prompting.structured_call import prompts_dirs

    assert capsys.readouterr().err.strip() == (f"error: prompt file werewolf/discussions/reverse.j2 not found in "
                                               f"{':'.join(prompts_dirs())} (a plug-in's prompt files go in a "
                                               "folder TOOLKIT_PROMPTS names, searched before the package's)")


def test_an_exporter_flag_named_like_exports_own_option_or_anothers_flag_is_refused_at_register():
    """Session 19 review, F5: a flag ``--out`` (export's own) or ``--html`` taking a value (kaggle's is a switch)
    was accepted and broke ``export --help`` for every format."""
    import argparse

    from toolkit.cli import export as export_cli
    from toolkit.export import EXPORTERS, OWN_OPTIONS, Exporter, Flag, register

    def write(results, out, options):
        return []

    for flag, says in ((Flag("out", "mine", metavar="D"), "one of export's own options"),
                       (Flag("html", "mine", metavar="FILE"), "exporter kaggle's with another kind of value")):
        with pytest.raises(ValueError, match=says):
            register(Exporter("clash", write, "clashes", flags=(flag,)))
        assert "clash" not in EXPORTERS
    parser = argparse.ArgumentParser()
    export_cli.add_arguments(parser)
    own = {o.lstrip("-") for a in parser._actions for o in a.option_strings} - set(export_cli.flags())
    assert own == set(OWN_OPTIONS)


def test_unregister_takes_a_plug_in_out_and_another_plug_ins_declaration_under_its_name_warns():
    import warnings

    assert discussions.register(Reverse()) and "reverse" in discussions.REGISTRY
    other = type("Reverse", (Reverse,), {"__module__": "other_plugin", "summary": "another package's"})
    with pytest.warns(UserWarning, match="discussion 'reverse': a plug-in's declaration replaces another"):
        discussions.register(other())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        discussions.register(other())  # the same again (a notebook cell run twice): no warning
    assert discussions.REGISTRY.unregister("reverse").summary == "another package's"
    assert "reverse" not in discussions.REGISTRY
    with pytest.raises(KeyError, match="unknown discussion 'reverse'"):
        discussions.REGISTRY.unregister("reverse")
    with pytest.raises(ValueError, match="^discussion 'round_robin' is built in: it cannot be unregistered"):
        discussions.REGISTRY.unregister("round_robin")


def test_an_exporter_registered_here_is_named_in_the_top_level_help(capsys):
    """``python -m toolkit --help``'s line for export lists the registry's formats (it was a hand list that missed
    a plug-in's: session 19 review, F7)."""
    register_exporter(Exporter("blessings", write_blessings, "the Knight's blessings as one CSV"))
    try:
        with pytest.raises(SystemExit):
            main(["--help"])
    finally:
        EXPORTERS.unregister("blessings")
    shown = " ".join(capsys.readouterr().out.split())
    assert "export export games and sessions in another format: kaggle, inspect, mini, otel, hf, blessings" in shown
