"""benchmarks/code_survey.py's row for the ``duplicates`` tool (not a dependency: a stand-in script on PATH plays
it here, as the tool's first lines read)."""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "code_survey.py"
spec = importlib.util.spec_from_file_location("code_survey", SCRIPT)
code_survey = sys.modules["code_survey"] = importlib.util.module_from_spec(spec)  # (its dataclasses look it up)
spec.loader.exec_module(code_survey)


@pytest.mark.parametrize("said, row", [
    ("3 pairs (20 files read)\n...", "3"),
    ("no duplicates (20 files read)\n", "0"),
    ("3 pairs (12 of 20 files read)\nincomplete: time: read 12 of 20 files\n", "3 (incomplete)"),
    ("incomplete: time: 300 s; read 0 of 20 files\n", "? (incomplete)"),  # before: "?" alone
])
def test_the_duplicates_row_says_when_the_tool_ran_out_of_time(said, row, tmp_path, monkeypatch):
    tool = tmp_path / "bin" / "duplicates"
    tool.parent.mkdir()
    (tmp_path / "said.txt").write_text(said)
    tool.write_text(f"#!/bin/sh\ncat '{tmp_path / 'said.txt'}'\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    assert code_survey.duplicates(tmp_path) == row
