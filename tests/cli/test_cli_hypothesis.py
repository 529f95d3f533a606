"""Property: whatever a user types, and whatever their sweep, scripted or preset file holds (valid, nearly
valid or junk), the CLI exits 0 or 2 without a traceback (1 only for a game that ran and ended as an
error, issue 14 item 3), and a rejected command creates nothing.

The CLI runs in-process (``toolkit.cli.main``) for speed. Games and replays run for real; three slow
back ends are replaced by test doubles that only record that they were reached, because each takes
seconds and the property is about what happens before them: a sweep's papermill kernels
(``toolkit.study.sweep.run_sweep``; tests/study/test_sweep.py runs them for real), the report's plots
(``toolkit.analysis.report.write_report``; tests/analysis/test_report.py runs it) and an engineer session
(``toolkit.agent.loop.session.Session.run``; tests/agent/test_loop.py runs it)."""

import contextlib
import io
import itertools
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from toolkit.cli import main

REPO = Path(__file__).resolve().parents[2]
PRESET7 = yaml.safe_load((REPO / "toolkit" / "werewolf" / "engine" / "presets" / "classic7.yaml").read_text())
COUNTER = itertools.count()

junk = st.text(st.characters(codec="utf-8", exclude_characters="/\x00"), max_size=12)
ints = st.one_of(st.integers(-3, 12), st.sampled_from(["x", "", "1.5", "99999999999999999999"]))
any_value = st.one_of(st.none(), st.booleans(), st.integers(-5, 50), junk, st.lists(junk, max_size=3),
                      st.dictionaries(junk, junk, max_size=2))


def near(valid: dict, keys: list[str]):
    """A valid mapping, or one with a key dropped, a key misspelt, or a value replaced by junk."""
    def mutate(data, choice, key, value):
        data = dict(data)
        if choice == 1 and key in data:
            del data[key]
        elif choice == 2 and key in data:
            data[key[:-1] + key[-1] * 2] = data.pop(key)
        elif choice == 3:
            data[key] = value
        return data

    return st.builds(mutate, st.just(valid), st.integers(0, 3), st.sampled_from(keys), any_value)


def written(text_or_data, suffix=".yaml") -> str:
    path = Path(f"f{next(COUNTER)}{suffix}")
    path.write_text(text_or_data if isinstance(text_or_data, str) else yaml.safe_dump(text_or_data))
    return str(path)


decision = st.fixed_dictionaries({"day": st.sampled_from([1, 2, 0, "x"]),
                                  "action": st.sampled_from(["vote", "hunt", "speak", "shoot"]),
                                  "seat": st.sampled_from(["Player1", "Player3", "Player9"]),
                                  "target": st.sampled_from(["Player2", None, "Player42"])})
scripted_data = st.one_of(
    near({"default": "heuristic", "decisions": []}, ["default", "decisions", "roles"]),
    st.fixed_dictionaries({"default": st.sampled_from(["heuristic", "random", "error", "smart"]),
                           "decisions": st.lists(decision, max_size=3)}),
    st.builds(lambda d: {"roles": d, "default": "heuristic"},
              st.sampled_from([{f"Player{i + 1}": r for i, r in enumerate(
                  ["Werewolf", "Werewolf", "Villager", "Villager", "Guard", "Witch", "Seer"])}, "Player1", {"x": 1}])),
    any_value)
scripted_file = st.one_of(scripted_data.map(written), junk.map(lambda t: written("roles: [" + t)),
                          st.just("/nonexistent.yaml"))
preset_file = st.one_of(near(PRESET7, list(PRESET7)).map(written), junk.map(written),
                        st.sampled_from(["classic7", "standard9", "nope", "/nonexistent.yaml"]))
specs = st.one_of(st.sampled_from(["heuristic", "random", "chaos:0.3", "chaos:7", "replay:missing", "replay:res",
                                   "openai:x@http://127.0.0.1:1/v1", "openai:gpt-x", "openai:@", "openai:x@ftp:/y",
                                   "bogus", ":", "human"]),
                  scripted_file.map(lambda p: f"scripted:{p}"), junk)
folders = st.one_of(st.sampled_from(["out", "a_file.txt", "a_file.txt/sub", "/proc/foo", "res", "empty"]), junk)


def option(name, values):
    return st.one_of(st.just([]), values.map(lambda v: [name, str(v)]))


def command(name, *options):
    return st.tuples(*options).map(lambda parts: [name] + [x for p in parts for x in p])


play = command("play", option("--preset", preset_file), option("--seed", ints), option("--model", specs),
               option("--seat", st.one_of(specs.map(lambda s: f"Player3={s}"), st.just("Player42=random"), junk)),
               option("--roles", st.sampled_from(["Player1=Werewolf", "Player1=Wolf,Player2=Seer", "x"])),
               option("--max-days", st.sampled_from([1, 2, 0, -1, "x"])),
               option("--temperature", st.sampled_from([0.2, -1, 3, "nan", "x"])),
               st.sampled_from([[], ["--reflection"], ["--experience"], ["--keep-going"]]),
               option("--out", folders), st.just(["--quiet"]))
replay = command("replay", st.one_of(folders.map(lambda f: [f]), st.just([])),
                 option("--game", st.sampled_from(["GAME", "nope", ""])), option("--fork-at", ints),
                 option("--model", specs), option("--out", folders), st.just(["--quiet"]))
engineer = command("engineer", option("--task", st.sampled_from(["fix it", "", " "])),
                   option("--workspace", folders), option("--model", specs),
                   option("--role", st.one_of(st.sampled_from(["engineer", "data_analyst", "nope"]),
                                              any_value.map(lambda v: written({"name": v})))),
                   option("--max-steps", ints), option("--out", folders))
suite = command("engineer-suite", option("--task", st.sampled_from(["nope", "fix_functoin", "", "eval_commit"])),
                option("--model", st.sampled_from(["scripted:{task}/nope.yaml", "bogus",
                                                   "openai:x@http://127.0.0.1:1/v1"])),
                option("--out", folders))
sweep_data = near({"name": "s", "notebook": "experiments/werewolf.ipynb", "parameters": {"n_games": 1},
                   "grid": {"model": ["heuristic", "random"]}, "repeats": 1},
                  ["name", "notebook", "parameters", "grid", "repeats"])
sweep = command("sweep", st.one_of(sweep_data.map(written), junk.map(written), st.sampled_from([["missing.yaml"]])
                                   .map(lambda x: x[0])).map(lambda p: [p]),
                option("--results", folders), option("--workers", ints),
                option("--executor", st.sampled_from(["local", "dask", "nope"])))
report = command("report", st.one_of(folders.map(lambda f: [f]), st.just([])), option("--out", folders))
tokens = st.lists(st.one_of(junk, st.sampled_from(["play", "sweep", "--out", "--seed", "-h", "report", "--"])),
                  max_size=5)
argv = st.one_of(play, play, replay, engineer, suite, sweep, report, tokens)


def snapshot(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # hosted specs fail at once, without a probe
    (tmp_path / "a_file.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    assert main(["play", "--quiet", "--max-days", "1", "--out", "res"]) in (0, 1)
    from toolkit.record.load import load

    game = str(load("res").games["game_id"].iloc[0])
    reached = []
    monkeypatch.setattr("toolkit.study.sweep.run_sweep", lambda *a, **k: reached.append("sweep") or pd.DataFrame(
        [{"cell_id": "c", "ok": True, "error": None}]))
    monkeypatch.setattr("toolkit.analysis.report.write_report", lambda *a, **k: reached.append("report") or [])

    async def session(self, *a, **k):
        raise KeyboardInterrupt  # reached: stop here (the CLI reports it as "interrupted", exit 130)

    monkeypatch.setattr("toolkit.agent.loop.session.Session.run", session)
    return tmp_path, game, reached


@settings(max_examples=500, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(args=argv)
@pytest.mark.slow
def test_the_cli_never_shows_a_traceback_and_a_rejected_command_creates_nothing(workdir, args):
    root, game, _ = workdir
    args = [game if a == "GAME" else a for a in args]
    before = snapshot(root)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exc:  # argparse: usage errors (2) and --help (0)
            code = exc.code or 0
    out, err = out.getvalue(), err.getvalue()
    commands = ("play", "replay", "engineer", "engineer-suite", "sweep", "report")
    # pytest --hypothesis-show-statistics shows the mix
    event(f"{args[0] if args[:1] and args[0] in commands else 'junk'} exit {code}")
    assert "Traceback" not in err and "Traceback" not in out, (args, err)
    engineer_reached = code == 130 and args[:1] in (["engineer"], ["engineer-suite"])
    game_error = code == 1 and "winner: error" in out
    assert code in (0, 2) or game_error or engineer_reached, (args, code, out[-500:], err)
    if code == 2:
        errors = [line for line in err.splitlines() if not line.startswith("warning: ")]
        assert len(errors) == 1, (args, err)
        created = snapshot(root) - before - {p for p in snapshot(root) if p.startswith("f") and p.endswith(".yaml")}
        assert not created, (args, err, sorted(created)[:5])


def test_the_property_reaches_every_runner(workdir):
    """The generated inputs are not all rejected: valid ones reach the sweep and report runners."""
    root, _, reached = workdir
    path = root / "ok.yaml"
    path.write_text(json.dumps({"name": "s", "notebook": "experiments/werewolf.ipynb", "grid": {"model": ["random"]}}))
    assert main(["sweep", str(path)]) == 0 and main(["report", "res"]) == 0
    assert reached == ["sweep", "report"]
