"""``python -m toolkit export`` and ``view`` as a user runs them: a mistake is one line on stderr, exit 2,
nothing written; a good command writes its files."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.export.conftest import example_game

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "results" / "examples"


def toolkit(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "toolkit", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.parametrize("args, message", [
    (["export", "kaggle", "NOWHERE", "--out", "{out}"], "no such results folder"),
    (["export", "kaggle", EXAMPLES], "give --out DIR"),
    (["export", "kaggle", EXAMPLES, "--out", "{out}", "--game", "g-nope"], "--game g-nope: no such game"),
    (["export", "mini", EXAMPLES, "--out", "{out}", "--endpoint", "http://127.0.0.1:1"], "--endpoint is for the otel"),
    (["export", "yaml", EXAMPLES, "--out", "{out}"], "invalid choice"),
    (["export", "kaggle", EXAMPLES, "--out", "{out}", "--json"], "--json is for the inspect format"),
])
@pytest.mark.slow
def test_a_mistake_is_one_line_and_exit_2_and_nothing_written(tmp_path, args, message):
    out = tmp_path / "out"
    done = toolkit(*[str(a).replace("{out}", str(out)) for a in args])
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not out.exists()


@pytest.mark.slow
def test_export_kaggle_writes_one_replay_per_game(tmp_path):
    done = toolkit("export", "kaggle", EXAMPLES, "--out", tmp_path, "--game", example_game())
    assert done.returncode == 0, done.stderr
    replay = json.loads((tmp_path / f"{example_game()}.json").read_text())
    assert replay["info"]["GAME_END"]["winner_team"] == "Werewolves"
    assert "wrote 1 file" in done.stdout


@pytest.mark.slow
def test_view_writes_one_self_contained_page(tmp_path):
    out = tmp_path / "views" / "game.html"
    done = toolkit("view", EXAMPLES, "--game", example_game(), "--out", out)
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert 'id="votes-day-1"' in page and 'id="god-view"' in page and "<script src" not in page


@pytest.mark.parametrize("args, message", [
    (["view", EXAMPLES, "--game", "g-nope", "--out", "{out}"], "--game g-nope: no game 'g-nope'"),
    (["view", EXAMPLES, "--out", "{out}"], "one of the arguments --game --session is required"),
    (["view", EXAMPLES, "--session", "s-nope", "--out", "{out}"], "--session s-nope: no session"),
])
@pytest.mark.slow
def test_view_mistakes_are_one_line(tmp_path, args, message):
    out = tmp_path / "page.html"
    done = toolkit(*[str(a).replace("{out}", str(out)) for a in args])
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not out.exists()
