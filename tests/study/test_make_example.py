"""`make example` run twice in a git checkout leaves `git status` empty (issue 44, point 3): the same seeds give
byte-identical tables (toolkit.study.stable_tables) and the same report, and the committed tables are replaced
only once the new ones are complete. The real recipe (the Makefile's `example` target, the engineer sweep, both
reports) on a small study (EXAMPLE_TOURNAMENT, EXAMPLE_SWEEP: 8 games, 2 engineer sessions); the committed one is
1,746 games and 20 sessions, ~12-19 min a run."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SMALL = """name: examples-tournament
models: [heuristic, random]
presets: [classic7]
design: pairs
self_play: false
seed: 0
games: 4
games_per_cell: 4
reflection: true
"""
SMALL_SWEEP = """name: examples-engineer
notebook: experiments/engineer.ipynb
parameters:
  tasks: [fix_function]
grid:
  model: ["scripted:{task}/good.yaml", "scripted:{task}/bad.yaml"]
"""


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder,
                          capture_output=True, text=True, check=True).stdout


def make_example(folder: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(["make", "-s", "-f", str(folder / "Makefile"), "example", "STAMP=", f"PY={sys.executable}",
                           "EXAMPLE_TOURNAMENT=experiments/tournaments/small.yaml",
                           "EXAMPLE_SWEEP=experiments/sweeps/small.yaml"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=1800)


@pytest.mark.slow
def test_make_example_twice_leaves_git_status_empty(tmp_path):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in ("Makefile", ".gitignore"):
        shutil.copy(REPO / name, checkout / name)
    shutil.copytree(REPO / "experiments", checkout / "experiments")
    shutil.copytree(REPO / "results" / "examples", checkout / "results" / "examples")
    (checkout / "experiments" / "tournaments" / "small.yaml").write_text(SMALL)
    (checkout / "experiments" / "sweeps" / "small.yaml").write_text(SMALL_SWEEP)
    git(checkout, "init", "-q")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-qm", "the committed example")
    first = make_example(checkout)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "make example:" in first.stdout
    changed = git(checkout, "status", "--porcelain")
    assert "results/examples/tables/games.parquet" in changed and "results/examples/summary.md" in changed
    git(checkout, "add", "-A")
    git(checkout, "commit", "-qm", "the small example")
    second = make_example(checkout)
    assert second.returncode == 0, second.stderr[-3000:]
    assert git(checkout, "status", "--porcelain", "--untracked-files=all") == ""
    assert sorted(p.name for p in (checkout / "results" / "examples" / "tables").iterdir()) == [
        "beliefs.parquet", "events.parquet", "games.parquet", "players.parquet", "runs.parquet"]
