"""A slow report says where it is: which section renders and at which condition, on the command line (stderr; not
a line with --quiet) and on the results explorer's busy line (issue 44: a folded section took 37 s with no sign of
progress)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolkit.analysis import progress
from toolkit.analysis.report import Report, write_report
from toolkit.study.experiments import run_werewolf_cell

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def two_conditions(tmp_path_factory):
    root = tmp_path_factory.mktemp("progress") / "res"
    for wolves in ("heuristic", "random"):
        run_werewolf_cell(str(root / f"w-{wolves}"), n_games=3, seed=0, wolf_model=wolves)
    return root


class Heard:
    def __init__(self):
        self.said: list[tuple] = []

    def part(self, index, total, title):
        self.said.append(("part", index, total, title))

    def step(self, text):
        self.said.append(("step", text))


@pytest.mark.slow
def test_every_section_and_condition_is_announced_in_order(two_conditions, tmp_path):
    heard = Heard()
    with progress.listening(heard):
        write_report(two_conditions, tmp_path / "out")
    titles = [p.title for p in Report(two_conditions, tmp_path / "again").parts]
    parts = [s for s in heard.said if s[0] == "part"]
    assert parts == [("part", i, len(titles), t) for i, t in enumerate(titles, 1)]
    beliefs = heard.said.index(("part", titles.index("Beliefs and deception") + 1, len(titles),
                                "Beliefs and deception"))
    assert heard.said[beliefs + 1:beliefs + 3] == [("step", "wolf_model=heuristic (1 of 2)"),
                                                   ("step", "wolf_model=random (2 of 2)")]
    with progress.listening(None):  # nobody listening: nothing is said, nothing fails
        write_report(two_conditions, tmp_path / "quiet")


@pytest.mark.slow
def test_the_command_line_shows_the_progress_on_stderr_and_nothing_with_quiet(two_conditions, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    loud = subprocess.run([sys.executable, "-m", "toolkit", "report", str(two_conditions), "--out",
                           str(tmp_path / "a")], capture_output=True, text=True, env=env, timeout=600)
    assert loud.returncode == 0, loud.stderr
    assert "report: 7/" in loud.stderr and "Beliefs and deception: wolf_model=random (2 of 2)" in loud.stderr
    assert "sections done" not in loud.stdout and "summary.md" in loud.stdout
    quiet = subprocess.run([sys.executable, "-m", "toolkit", "report", str(two_conditions), "--out",
                            str(tmp_path / "b"), "--quiet"], capture_output=True, text=True, env=env, timeout=600)
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout.replace(str(tmp_path / "b"), "") == \
        loud.stdout.replace(str(tmp_path / "a"), "")
    from toolkit.record.run_log import Run

    Run(tmp_path / "no_games", "empty").close()  # refused after the tables are read: its one line, no bar before it
    refused = subprocess.run([sys.executable, "-m", "toolkit", "report", str(tmp_path / "no_games")],
                             capture_output=True, text=True, env=env, timeout=600)
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr


@pytest.mark.slow
def test_the_explorer_s_busy_line_names_the_section_and_the_condition(two_conditions, tmp_path, monkeypatch):
    from toolkit.ui import results

    monkeypatch.setenv("TOOLKIT_REPORT_CACHE", str(tmp_path / "cache"))
    lines = []
    busy_line = results.busy_line
    monkeypatch.setattr(results, "busy_line", lambda text, started: lines.append(text) or busy_line(text, started))
    r = results.ResultsExplorer(str(two_conditions))
    r.load()
    assert any(t.startswith("computing the summary: ") and "every effect" in t for t in lines)
    k = [t.split(" (")[0] for t in r.sections.titles].index("Beliefs and deception")
    r.open_section(k)
    assert "computing Beliefs and deception: wolf_model=random (2 of 2)" in lines
