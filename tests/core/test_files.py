"""The schemas of user-written files (sweep, scripted, preset, role) and sweep cell ids: unknown keys get
a "did you mean", names cannot leave the results root, and cells never share a folder."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from toolkit.core.files import FileError, ScriptedFile, SweepFile, load_scripted, validate
from toolkit.study.sweep import cell_id, load_sweep
from toolkit.record.load import load

REPO = Path(__file__).resolve().parents[2]
PRESETS = REPO / "toolkit" / "werewolf" / "engine" / "presets"


def sweep(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text("notebook: experiments/werewolf.ipynb\n" + text)
    return path


def test_cells_that_differ_only_after_40_characters_get_their_own_folders(tmp_path):
    a = "openai:Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8001/v1"
    b = "openai:Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8002/v1"
    assert cell_id({"model": a}) != cell_id({"model": b})
    assert cell_id({"model": a}) == cell_id({"model": a})  # stable: a rerun finds its cells
    _, cells = load_sweep(sweep(tmp_path, f"name: s\ngrid: {{model: ['{a}', '{b}']}}\n"), tmp_path / "r")
    assert len({c.folder for c in cells}) == 2


def test_a_colliding_sweep_is_refused(tmp_path):
    with pytest.raises(FileError, match="would share the folder"):
        load_sweep(sweep(tmp_path, "name: s\ngrid: {model: [heuristic, random, heuristic]}\n"), tmp_path / "r")


def test_a_sweep_name_cannot_leave_the_results_root(tmp_path):
    for name in ("../../escaped-sweep", "/abs", "a/b", ".hidden", ".."):
        with pytest.raises(FileError, match="becomes a folder name"):
            load_sweep(sweep(tmp_path, f"name: '{name}'\ngrid: {{model: [heuristic]}}\n"), tmp_path / "r")


def test_sweep_schema_hints_and_ranges(tmp_path):
    base = {"name": "s", "notebook": "n", "grid": {"model": ["heuristic"]}}
    with pytest.raises(FileError, match=r"unknown key 'paramters' \(did you mean 'parameters'\?\)"):
        validate(SweepFile, {**base, "paramters": {"n_games": 1}}, "f", "sweep")
    with pytest.raises(FileError, match="repeats"):
        validate(SweepFile, {**base, "repeats": 0}, "f", "sweep")
    with pytest.raises(FileError, match="both fixed parameters and grid keys"):
        validate(SweepFile, {**base, "parameters": {"model": "random"}}, "f", "sweep")
    assert validate(SweepFile, {**base, "grid": {"model": "random"}}, "f", "sweep").grid == {"model": ["random"]}
    with pytest.raises(FileError, match=r"'n_game' is not a parameter of werewolf.ipynb \(did you mean 'n_games'\?\)"):
        load_sweep(sweep(tmp_path, "name: s\nparameters: {n_game: 3}\ngrid: {model: [heuristic]}\n"), tmp_path)


def test_scripted_schema(tmp_path):
    ok = validate(ScriptedFile, {"roles": {"Player1": "Werewolf"}, "default": "heuristic",
                                 "decisions": [{"day": 1, "action": "vote", "seat": "Player1", "target": None}]},
                  "s", "scripted")
    assert ok.decisions[0].target is None and ok.seats_named() == {"Player1"}
    for data, words in (
        ({"decisions": [{"day": 1, "action": "vote", "seat": "Player1", "tagret": "Player2"}]},
         "decisions #1: unknown key 'tagret' (did you mean 'target'?)"),
        ({"decisions": [{"day": 0, "action": "vote", "target": "Player2"}]}, "decisions #1.day"),
        ({"decisions": [{"action": "dance", "target": "Player2"}]}, "decisions #1.action"),
        ({"decisions": [{"action": "speak"}]}, "needs speech"),
        ({"decisions": [{"action": "speak", "speach": "hi"}]}, "unknown key 'speach' (did you mean 'speech'?)"),
        ({"roles": {"Player1": "Wolf"}}, "roles.Player1"),
        ({"default": "smart"}, "default"),
    ):
        with pytest.raises(FileError) as info:
            validate(ScriptedFile, data, "s", "scripted")
        assert words in str(info.value)
    bare = tmp_path / "answers.yaml"
    bare.write_text("- {thought: hi, commands: []}\n")
    assert load_scripted(bare).answers == [{"thought": "hi", "commands": []}]


def test_role_and_action_names_are_kept_once():
    """The rules, the seats' actions and the scripted-file schema read the same names (toolkit.core.werewolf_names)."""
    from toolkit.core import werewolf_names as names
    from toolkit.werewolf.engine import preset
    from toolkit.werewolf.engine.roles import REGISTRY
    from toolkit.werewolf.seat.decisions import ACTIONS, Target, decision, role_decisions

    assert preset.ROLES is names.ROLES and list(REGISTRY)[:len(names.ROLES)] == list(names.ROLES)
    shipped = {a for name in names.ROLES for a in REGISTRY[name].actions}  # each declared by its role
    assert {*ACTIONS, *shipped} == set(names.ACTIONS) and len(names.ACTIONS) == len(set(names.ACTIONS))
    assert shipped <= set(role_decisions())
    assert {a for a in names.ACTIONS if decision(a).output is Target} == set(names.TARGETED_ACTIONS)
    assert set(names.actions()) >= set(names.ACTIONS) and set(names.roles()) >= set(names.ROLES)  # the registry's


def test_a_scripted_file_names_a_plug_in_role_and_its_decision_while_it_is_registered():
    """A scripted file is checked against the roles registered when it is read (session 19 review, F8: the
    schema's hand lists refused a plug-in role and its decision)."""
    from toolkit.werewolf.engine import roles
    from toolkit.werewolf.engine.roles import Role

    class Bard(Role):  # a role the package does not ship, declared in this test
        name, actions = "Bard", ("sing",)

        @staticmethod
        def heuristic(action, obs, choices, rng):
            return choices[0]

    script = {"roles": {"Player8": "Bard"}, "decisions": [{"day": 1, "action": "sing", "seat": "Player8",
                                                           "target": "Player1"}]}
    roles.register(Bard())
    try:
        read = validate(ScriptedFile, script, "s", "scripted")
        assert read.roles == {"Player8": "Bard"} and read.decisions[0].answer() == {"target": "Player1"}
        with pytest.raises(FileError, match="a sing decision needs target"):  # a role's decision names a seat
            validate(ScriptedFile, {"decisions": [{"action": "sing"}]}, "s", "scripted")
    finally:
        del roles.REGISTRY["Bard"]
    for data, words in (({"roles": {"Player8": "Bard"}}, "roles.Player8: unknown role 'Bard'"),
                        ({"decisions": [{"action": "sing", "target": None}]}, "unknown action 'sing'")):
        with pytest.raises(FileError, match=words):  # unregistered: refused again, in one line
            validate(ScriptedFile, data, "s", "scripted")


def test_a_scripted_decision_matches_the_keys_it_gives_and_answers_with_the_rest():
    script = validate(ScriptedFile, {"decisions": [{"day": "1", "action": "speak", "text": "I am the seer."},
                                                   {"action": "vote", "target": None},
                                                   {"action": "reflect", "reflection": "notes", "beliefs": []}]},
                      "s", "scripted")
    speak, vote, reflect = script.decisions
    assert speak.answer() == {"speech": "I am the seer."} and vote.answer() == {"target": None}  # text: a speech
    assert reflect.answer() == {"summary": "notes", "beliefs": []}
    assert speak.matches({"day": 1, "action": "speak", "seat": "Player3"}) and not speak.matches({"day": 2})


def test_every_shipped_file_passes_its_schema():
    from toolkit.werewolf.engine.preset import available_presets, load_preset

    for name in available_presets():
        assert load_preset(name).n_players >= 5
    scenarios = list((REPO / "tests" / "werewolf" / "scenarios").glob("*.yaml"))
    assert len(scenarios) >= 5  # the glob finds the files (a moved folder would make this test check nothing)
    for path in scenarios:
        load_scripted(path)
    for path in (REPO / "experiments" / "engineer_tasks").glob("*/*.yaml"):
        if path.name not in ("task.yaml", "mini.yaml"):  # mini.yaml: bash commands for mini-swe-agent, not a script
            load_scripted(path)
    for path in (REPO / "experiments" / "sweeps").glob("*.yaml"):
        load_sweep(path)


def test_preset_errors_name_the_file_and_hint(tmp_path):
    from toolkit.werewolf.engine.preset import load_preset

    path = tmp_path / "p.yaml"
    path.write_text((PRESETS / "classic7.yaml").read_text().replace("Werewolf:", "Werwolf:"))
    with pytest.raises(ValueError, match=r"p.yaml: roles: unknown role 'Werwolf' \(did you mean 'Werewolf'\?\)"):
        load_preset(str(path))


@pytest.mark.slow
def test_two_cells_differing_after_40_characters_play_different_games(tmp_path):
    """A real sweep (papermill kernels): two preset paths that share their first 40+ characters."""
    presets = tmp_path / ("a-folder-name-long-enough-to-pass-forty-characters" * 2)
    presets.mkdir()
    for name in ("classic7", "standard9"):
        (presets / f"{name}.yaml").write_text((PRESETS / f"{name}.yaml").read_text())
    path = tmp_path / "long.yaml"
    path.write_text(f"name: long\nnotebook: experiments/werewolf.ipynb\nparameters: {{n_games: 2}}\n"
                    f"grid:\n  preset: ['{presets / 'classic7.yaml'}', '{presets / 'standard9.yaml'}']\n")
    out = subprocess.run([sys.executable, "-m", "toolkit", "sweep", str(path), "--results", str(tmp_path / "r")],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    summary = pd.read_parquet(tmp_path / "r" / "long" / "summary.parquet")
    assert summary["cell_id"].nunique() == 2 and (summary["games"] == 2).all()
    cells = sorted(p for p in (tmp_path / "r" / "long").iterdir() if p.is_dir())
    assert len(cells) == 2
    presets_played = [set(load(c).games["preset"]) for c in cells]
    assert sorted(map(sorted, presets_played)) == [["classic7"], ["standard9"]]


# a URL password long enough that an 80- or 40-character cut falls inside it (no '@' after what is left of it)
PASSWORD = "Pw9-" * 12 + "tail"
LONG = f"openai:gpt-4o-mini@https://alice:{PASSWORD}@llm.example.com/v1"


def test_a_cut_line_never_keeps_half_a_url_password(tmp_path):
    """one_line cuts a long message: what it keeps of a spec's URL password was no credential to the mask the
    printed line went through (the '@' after it was cut away), so the first 40-80 characters of the password
    reached the terminal in '--seat given twice', 'unknown model spec' and a preset's clashing models: names."""
    from toolkit.cli.common import pairs
    from toolkit.cli.preflight import check_spec
    from toolkit.core.files import one_line
    from toolkit.core.printable import printable
    from toolkit.core.secrets import redact
    from toolkit.werewolf.engine.preset import preset_models

    password = PASSWORD
    assert password[:20] not in redact(printable(one_line(f"at {LONG} it failed", 80)))
    assert one_line(f"at {LONG}", 300) == f"at {LONG}"  # a line that is not cut is the same
    with pytest.raises(FileError) as twice:
        pairs([f"Player1={LONG}", "Player1=heuristic"], "--seat")
    with pytest.raises(FileError) as unknown:
        check_spec("opn" + LONG.removeprefix("openai"), probe=False)
    presets = []
    for name, spec in (("one", LONG), ("two", LONG + "?temperature=0.5")):
        presets.append(tmp_path / f"{name}.yaml")
        presets[-1].write_text((PRESETS / "classic7.yaml").read_text().replace("name: classic7", f"name: {name}")
                               + f"\nmodels: {{good: '{spec}'}}\n")
    with pytest.raises(FileError) as clash:
        preset_models(presets)
    for caught in (twice, unknown, clash):
        assert password[:6] not in redact(printable(str(caught.value))), caught.value


def test_the_file_schemas_and_the_commands_offer_the_values_the_budget_and_the_game_take():
    """The schemas live below the model layer and the game, so ``at_cap`` and ``on_endpoint_failure`` are written
    there again (and in the commands' ``--at-cap``, kept light to import): each copy must be the one the budget
    (``AT_CAP``) and the game (``ENDPOINT_MODES``) check, or a value the schema lets through fails mid-study."""
    import argparse
    import typing

    from toolkit.cli.common import add_cap_arguments
    from toolkit.core.files import TournamentFile
    from toolkit.llm.budget import AT_CAP
    from toolkit.werewolf.game import ENDPOINT_MODES

    def literal(model, name):
        annotation = model.model_fields[name].annotation  # Literal[...], or Literal[...] | None
        return next(typing.get_args(a) for a in (annotation, *typing.get_args(annotation))
                    if typing.get_origin(a) is typing.Literal)

    assert literal(SweepFile, "at_cap") == literal(TournamentFile, "at_cap") == AT_CAP
    assert literal(TournamentFile, "on_endpoint_failure") == ENDPOINT_MODES
    parser = argparse.ArgumentParser()
    add_cap_arguments(parser, "the test")
    assert tuple(next(a for a in parser._actions if a.dest == "at_cap").choices) == AT_CAP
