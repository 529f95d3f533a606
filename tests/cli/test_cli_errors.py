"""Every bad input of issue 14 gets one line on stderr and exit code 2, and nothing is written: no run
folder, no output folder. The CLI runs in-process (``toolkit.cli.main``); the files are real."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from toolkit.cli import main

REPO = Path(__file__).resolve().parents[2]
PRESET = REPO / "toolkit" / "werewolf" / "engine" / "presets" / "classic7.yaml"


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own exits
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A working folder with the files the cases point at; the CLI's default results/ is inside it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (tmp_path / "a_file.txt").write_text("not a folder\n")
    (tmp_path / "bad.yaml").write_text("roles: [Player1, \n  - : :\n")
    (tmp_path / "roles_string.yaml").write_text("roles: Player1\ndefault: heuristic\n")
    (tmp_path / "wrong_seat.yaml").write_text("default: heuristic\ndecisions:\n"
                                              "  - {day: 1, action: vote, seat: Player9, target: Player1}\n")
    (tmp_path / "speach.yaml").write_text("decisions:\n  - {day: 1, action: speak, seat: Player1, speach: hi}\n")
    (tmp_path / "broken_preset.yaml").write_text("name: broken\nroles: {Werewolf: 2, Villager: 3\n")
    (tmp_path / "typo_preset.yaml").write_text(PRESET.read_text() + "max_day: 3\n")
    (tmp_path / "empty_dir").mkdir()
    sweeps = {
        "sweep_invalid.yaml": "name: x\nnotebook: experiments/werewolf.ipynb\ngrid: {model: [heuristic\n",
        "sweep_grid_list.yaml": "name: x\nnotebook: experiments/werewolf.ipynb\ngrid: [heuristic, random]\n",
        "sweep_grid_empty.yaml": "name: x\nnotebook: experiments/werewolf.ipynb\ngrid: {model: []}\n",
        "sweep_grid_null.yaml": "name: x\nnotebook: experiments/werewolf.ipynb\ngrid:\n",
        "sweep_repeats0.yaml": ("name: x\nnotebook: experiments/werewolf.ipynb\ngrid: {model: [heuristic]}\n"
                                "repeats: 0\n"),
        "sweep_typo.yaml": "name: x\nnotebook: experiments/werewolf.ipynb\nparamters: {n_games: 1}\n"
                           "grid: {model: [heuristic]}\n",
        "sweep_escape.yaml": "name: ../../escaped-sweep\nnotebook: experiments/werewolf.ipynb\n"
                             "grid: {model: [heuristic]}\n",
        "sweep_param.yaml": "name: x\nnotebook: experiments/werewolf.ipynb\nparameters: {n_game: 1}\n"
                            "grid: {model: [heuristic]}\n",
        "sweep_collide.yaml": "name: x\nnotebook: experiments/werewolf.ipynb\ngrid: {model: [heuristic, heuristic]}\n",
        "sweep_dead_endpoint.yaml": "name: x\nnotebook: experiments/werewolf.ipynb\n"
                                    "grid: {wolf_model: [heuristic, 'openai:x@http://127.0.0.1:1/v1']}\n",
        "sweep_no_notebook.yaml": "name: x\nnotebook: experiments/nope.ipynb\ngrid: {model: [heuristic]}\n",
        # issue 21: values that used to run (all-heuristic games, a cell without games, a kernel grown to 22 GB)
        "sweep_seat99.yaml": "name: x\nnotebook: experiments/werewolf.ipynb\ngrid: {seats: [{Player99: random}]}\n",
        "sweep_negative.yaml": "name: x\nnotebook: experiments/werewolf.ipynb\ngrid: {n_games: [-5]}\n",
        "sweep_zero.yaml": "name: x\nnotebook: experiments/werewolf.ipynb\nparameters: {n_games: 0}\n"
                           "grid: {model: [heuristic]}\n",
        "sweep_huge.yaml": "name: x\nnotebook: experiments/werewolf.ipynb\ngrid: {n_games: [1000000000000]}\n",
        "sweep_type.yaml": "name: x\nnotebook: experiments/werewolf.ipynb\ngrid: {n_games: [ten]}\n",
        "sweep_bool.yaml": "name: x\nnotebook: experiments/werewolf.ipynb\ngrid: {reflection: [0, 1]}\n",
        "sweep_not_notebook.yaml": "name: x\nnotebook: not_a_notebook.ipynb\ngrid: {model: [heuristic]}\n",
        "tournament_twice.yaml": "name: t\nmodels: [heuristic, random]\npresets: [classic7, classic7]\ngames: 1\n",
        "tournament_both.yaml": "name: t\nmodels: [heuristic, random]\npresets: [classic7]\ngames: 4\n"
                                "half_width: 0.1\n",
        "tournament_narrow.yaml": "name: t\nmodels: [heuristic, random]\npresets: [classic7]\nhalf_width: 0.0001\n",
        "tournament_huge.yaml": "name: t\nmodels: [heuristic, random]\npresets: [classic7]\ngames: 1000000\n",
    }
    (tmp_path / "not_a_notebook.ipynb").write_text("print('every cell would run and fail')\n")
    (tmp_path / "wolf_true.yaml").write_text(PRESET.read_text().replace("Werewolf: 2", "Werewolf: true"))
    for name, text in sweeps.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "runs_no_games").mkdir()
    from toolkit.record.run_log import Run

    Run(tmp_path / "runs_no_games", "empty").close()
    return tmp_path


CASES = [
    # (argv, words the one line must contain)
    (["play", "--model", "scripted:/nonexistent.yaml"], "no such scripted file"),
    (["play", "--model", "scripted:bad.yaml"], "invalid YAML at line"),
    (["play", "--model", "scripted:roles_string.yaml"], "roles"),
    (["play", "--model", "scripted:wrong_seat.yaml"], "Player9"),
    (["play", "--model", "scripted:speach.yaml"], "did you mean 'speech'"),
    (["play", "--model", "replay:missing_dir"], "no such replay folder"),
    (["play", "--model", "replay:empty_dir"], "no runs found"),
    (["play", "--out", "a_file.txt"], "is a file"),
    (["play", "--out", "a_file.txt/sub"], "is a file"),
    (["play", "--out", "/proc/foo"], "--out /proc/foo"),
    (["play", "--seat", "Player42=random"], "no such seat"),
    (["play", "--seat", "Player3"], "--seat must look like"),
    (["play", "--max-days", "-1"], "--max-days must be at least 1"),
    (["play", "--max-days", "0"], "--max-days must be at least 1"),
    (["play", "--temperature", "nan"], "--temperature"),
    (["play", "--roles", "Player1=Werewolf"], "do not match"),
    (["play", "--preset", "broken_preset.yaml"], "broken_preset.yaml: invalid YAML"),
    (["play", "--preset", "typo_preset.yaml"], "did you mean 'max_days'"),
    (["play", "--preset", "nope"], "no preset"),
    (["play", "--model", "nonsense"], "unknown model spec"),
    (["play", "--model", "chaos:2"], "chaos:RATE"),
    (["play", "--model", "openai:gpt-x"], "no OPENAI_API_KEY"),
    (["play", "--model", "openai:x@ftp//nowhere"], "malformed URL"),
    (["play", "--model", "openai:x@http://127.0.0.1:1/v1"], "cannot reach 127.0.0.1:1"),
    (["play", "--seed", "x"], "invalid int value"),
    (["play", "--no-such-option"], "unrecognized arguments"),
    (["replay", "missing_dir", "--game", "g"], "no such results folder"),
    (["replay", "runs_no_games", "--game", "g"], "no game 'g'"),
    (["report", "missing_dir"], "no such results folder"),
    (["report", "a_file.txt"], "is a file"),
    (["report", "empty_dir"], "no runs found"),
    (["report", "runs_no_games", "--out", "new_report_dir"], "no finished games or sessions"),
    (["engineer", "--task", "t", "--workspace", "a_file.txt", "--model", "scripted:x.yaml"], "is a file"),
    (["engineer", "--task", "t", "--workspace", "ws", "--role", "broken_preset.yaml"], "invalid YAML"),
    (["engineer", "--task", "t", "--workspace", "ws", "--role", "nope"], "no role"),
    (["engineer", "--task", "t", "--workspace", "./does-not-exist", "--model", "random"],
     "--workspace ./does-not-exist: no such folder"),
    (["engineer-suite", "--task", "nope"], "no such task"),
    (["engineer-suite", "--task", "fix_functoin"], "did you mean 'fix_function'"),
    (["engineer-suite", "--model", "scripted:{task}/nope.yaml"], "no such scripted file"),
    (["engineer-suite", "--model", "bogus"], "unknown model spec"),
    (["play", "--model", "heuristc"], "unknown model spec (did you mean 'heuristic'?)"),
    (["play", "--model", "opnai:gpt-4o"], "(did you mean 'openai:gpt-4o'?)"),
    (["play", "--preset", "clasic7"], "no preset 'clasic7' (did you mean 'classic7'?)"),
    (["sweep", "missing.yaml"], "no such sweep file"),
    (["sweep", "sweep_invalid.yaml"], "invalid YAML"),
    (["sweep", "sweep_grid_list.yaml"], "grid: must be a mapping"),
    (["sweep", "sweep_grid_empty.yaml"], "model has no values"),
    (["sweep", "sweep_grid_null.yaml"], "grid: must be a mapping"),
    (["sweep", "sweep_repeats0.yaml"], "repeats"),
    (["sweep", "sweep_typo.yaml"], "did you mean 'parameters'"),
    (["sweep", "sweep_escape.yaml"], "becomes a folder name"),
    (["sweep", "sweep_param.yaml"], "did you mean 'n_games'"),
    (["sweep", "sweep_collide.yaml"], "would share the folder"),
    (["sweep", "sweep_dead_endpoint.yaml"], "wolf_model: openai:x@http://127.0.0.1:1/v1: cannot reach"),
    (["sweep", "sweep_no_notebook.yaml"], "notebook experiments/nope.ipynb not found"),
    (["sweep", "sweep_typo.yaml", "--results", "a_file.txt"], "is a file"),
    (["sweep", "sweep_typo.yaml", "--out", "a_file.txt"], "--out a_file.txt: is a file"),
    (["sweep", "sweep_typo.yaml", "--workers", "0"], "--workers must be at least 1"),
    (["sweep", "sweep_seat99.yaml"], "seats: 'Player99' is not a seat of classic7"),
    (["sweep", "sweep_negative.yaml"], "n_games must be at least 1, got -5"),
    (["sweep", "sweep_zero.yaml"], "n_games must be at least 1, got 0"),
    (["sweep", "sweep_huge.yaml"], "at most 100000 games per cell"),
    (["sweep", "sweep_type.yaml"], "n_games = 'ten' is a str, but werewolf.ipynb's parameters cell sets n_games = 20"),
    (["sweep", "sweep_bool.yaml"], "reflection = 0 is a int"),
    (["sweep", "sweep_not_notebook.yaml"], "notebook not_a_notebook.ipynb is not a Jupyter notebook"),
    (["play", "--seat", "Player3=random", "--seat", "Player3=heuristic"], "--seat Player3 is given twice"),
    (["play", "--seat", "Player3=random,Player3=heuristic"], "--seat Player3 is given twice"),
    (["play", "--roles", ""], "--roles must look like"),
    (["play", "--preset", "wolf_true.yaml"], "Werewolf: a count must be a whole number, not True"),
    (["tournament", "tournament_twice.yaml", "--plan"], "classic7 listed more than once"),
    (["tournament", "tournament_twice.yaml"], "classic7 listed more than once"),
    (["tournament", "tournament_both.yaml", "--plan"], "games (4) and half_width (0.1) both set"),
    (["tournament", "tournament_narrow.yaml", "--plan"], "at most 100,000 games in one tournament"),
    (["tournament", "tournament_huge.yaml", "--plan"], "plans 4,000,000 games: the plan alone would need ~15.7 GB"),
    (["tournament", "tournament_huge.yaml"], "at most 100,000 games"),
]


@pytest.mark.parametrize("argv,words", CASES, ids=[" ".join(a) for a, _ in CASES])
@pytest.mark.slow
def test_bad_input_is_one_line_exit_2_and_nothing_written(work, capsys, argv, words):
    before = files(work)
    code, out, err = run_cli(argv, capsys)
    assert code == 2, (out, err)
    assert err.endswith("\n") and err.count("\n") == 1, err  # one line
    assert "Traceback" not in err and words in err, err
    assert files(work) == before  # no run folder, no output folder, no results/


@pytest.mark.slow
def test_a_hosted_endpoint_without_key_and_a_dead_loopback_fail_fast_in_a_subprocess(tmp_path):
    """Refused before any game starts (how fast is measured in benchmarks/, not here: a loaded machine broke a
    wall-clock bound)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    for spec, words in (("openai:x@http://127.0.0.1:1/v1", "cannot reach"), ("openai:gpt-x", "OPENAI_API_KEY")):
        out = subprocess.run([sys.executable, "-m", "toolkit", "play", "--model", spec, "--out", str(tmp_path / "o")],
                             cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and words in out.stderr, out.stderr
    assert not (tmp_path / "o").exists()


def test_credentials_in_a_url_are_masked_in_the_message(work, capsys):
    code, _, err = run_cli(["play", "--model", "openai:x@http://user:hunter2@127.0.0.1:1/v1"], capsys)
    assert code == 2 and "hunter2" not in err and "***@127.0.0.1" in err


@pytest.mark.slow
def test_credentials_in_a_url_never_reach_a_table(tmp_path, server):
    """A real game against the loopback test server, with user:password in the URL: accepted, masked."""
    url = server.base_url.replace("http://", "http://user:hunter2@")
    code = main(["play", "--model", f"openai:ok@{url}", "--max-days", "1", "--quiet", "--out", str(tmp_path)])
    assert code == 0
    text = "".join(p.read_bytes().decode("latin-1") for p in tmp_path.rglob("*") if p.is_file())
    assert "hunter2" not in text and "***@127.0.0.1" in text


@pytest.mark.parametrize("status", ["400", "401", "404"])
@pytest.mark.slow
def test_an_endpoint_that_refuses_for_good_stops_the_game_at_once(tmp_path, server, capsys, status):
    """400/401/404 are not retried (one attempt per call) and waiting cannot cure them: the endpoint is down at
    its first refusal, the game stops unfinished (no games row), one line on stderr names it, exit 4; with
    --keep-going too (a dead endpoint stops a game under either)."""
    for extra, out in (([], "wait"), (["--keep-going"], "keep")):
        code = main(["play", "--seat", f"Player3=openai:{status}@{server.base_url}", "--quiet", *extra,
                     "--out", str(tmp_path / out)])
        err = capsys.readouterr().err
        assert code == 4, err
        line = [x for x in err.splitlines() if x.startswith("stopped on day 1: ")]
        assert len(line) == 1 and f"endpoint openai:{status}@{server.base_url} is down: http_error: " in line[0]
        from toolkit.record.load import load

        tables = load(tmp_path / out, complete_games=False)
        calls = tables.calls
        assert tables.games.empty and len(calls[calls["seat"] == "Player3"]) == 1  # asked once, never retried


@pytest.mark.slow
def test_the_transcript_reads_well(tmp_path, capsys):
    assert main(["play", "--seed", "3", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert " is werewolf." not in out and " is a werewolf." in out
    assert "1 fallbacks" not in out and "1 days" not in out
    lines = out.splitlines()
    speeches = [line for line in lines if re.match(r"\[day \d+ (speech|last_words)\] Player", line)]
    assert speeches and all(re.search(r"^\[day \d+ \w+\] Player\d+ \(\w+\): «[^«»]*»$", x) for x in speeches)
    for i, line in enumerate(lines):  # "X died last night." is not followed by a redundant "X died."
        if "died last night." in line:
            assert " died." not in lines[i + 1], lines[i: i + 2]


@pytest.mark.slow
def test_unused_scripted_decisions_are_reported(tmp_path, capsys):
    script = tmp_path / "late.yaml"
    script.write_text("default: heuristic\ndecisions:\n  - {day: 40, action: vote, seat: Player1, target: Player2}\n")
    assert main(["play", "--model", f"scripted:{script}", "--quiet", "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "decision #1 (day 40 vote Player1) was never used" in err


def test_every_option_has_help_text():
    from toolkit.cli import build_parser

    parser = build_parser()
    for name, sub in parser._subparsers._group_actions[0].choices.items():
        if name == "local-server":
            continue
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help text"


SETTINGS = [
    ("TOOLKIT_MAX_CONNECTIONS", "0", "between 1"), ("TOOLKIT_MAX_CONNECTIONS", "-1", "between 1"),
    ("TOOLKIT_MAX_CONNECTIONS", "abc", "not a valid int"), ("TOOLKIT_TIMEOUT_S", "0", "between"),
    ("TOOLKIT_TIMEOUT_S", "-1", "between"), ("TOOLKIT_TIMEOUT_S", "nan", "between"),
    ("TOOLKIT_MAX_RESPONSE_BYTES", "5", "between"), ("TOOLKIT_MAX_TOOL_CALLS", "0", "between"),
    ("TOOLKIT_PRICES", "missing.yaml", "cannot read it"), ("TOOLKIT_PRICES", "bad.yaml", "not valid YAML"),
    ("TOOLKIT_PRICES", "prices_list.yaml", "must map model names"),
    ("TOOLKIT_PRICES", "prices_negative.yaml", "non-negative number"),
    ("TOOLKIT_PRICES", "prices_no_output.yaml", "needs input and output"),
    ("TOOLKIT_CACHE_DIR", "a_file.txt", "TOOLKIT_CACHE_DIR a_file.txt: is a file"),
    ("TOOLKIT_ENDPOINT_DEADLINE_S", "0", "must be above 0"),
    # below 1.5 x the default 60 s timeout: it was raised to 90 s without a word (review s17 D)
    ("TOOLKIT_ENDPOINT_DEADLINE_S", "5", "is below 1.5 x the request timeout (60 s"),
]


@pytest.mark.parametrize("var,value,words", SETTINGS, ids=[f"{v}={x}" for v, x, _ in SETTINGS])
@pytest.mark.slow
def test_a_bad_setting_is_one_line_exit_2_and_nothing_written(work, capsys, monkeypatch, var, value, words):
    (work / "prices_list.yaml").write_text("- gpt-x\n")
    (work / "prices_negative.yaml").write_text("m: {input: -1, output: 2}\n")
    (work / "prices_no_output.yaml").write_text("m: {input: 1}\n")
    monkeypatch.setenv(var, value)
    before = files(work)
    code, out, err = run_cli(["play", "--out", "out"], capsys)
    assert code == 2 and err.count("\n") == 1 and words in err and var in err, err
    assert files(work) == before


@pytest.mark.slow
def test_a_dead_endpoint_is_said_once_on_the_stderr_of_play(tmp_path, server):
    """The CLI as a user runs it: the endpoint's "is down" sentence comes once, in play's "stopped on day N"
    line (it came twice: the health warning, then the same words in play's line)."""
    out = subprocess.run([sys.executable, "-m", "toolkit", "play", "--seat", f"Player3=openai:401@{server.base_url}",
                          "--quiet", "--out", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 4, out.stderr
    assert out.stderr.count("is down") == 1, out.stderr
    assert [x for x in out.stderr.splitlines() if "is down" in x][0].startswith("stopped on day 1: ")
