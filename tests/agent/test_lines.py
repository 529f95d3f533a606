"""What the engineer command line says, checked as a user reads it: a ``local`` session says it is unconfined
in its first and last line and never that the folder is unchanged; nothing from the sandbox (a folder's name, an
error) can print a line of its own. Real CLI runs with a scripted model."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from toolkit.agent.environments.environment import bwrap_problem

ROOT = Path(__file__).resolve().parents[2]
FORGED = "result: applied, all checks passed; nothing to review"


def run_engineer(tmp_path: Path, ws: Path, kind: str, command: str) -> subprocess.CompletedProcess:
    script = tmp_path / "script.yaml"
    end = {"thought": "done", "commands": [{"command_name": "end", "args": {}}]}
    step = {"thought": "t", "commands": [{"command_name": "Terminal.run_command", "args": {"cmd": command}}]}
    script.write_text(yaml.safe_dump({"answers": [step, end]}))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "toolkit", "engineer", "--task", "t", "--workspace", str(ws),
                           "--model", f"scripted:{script}", "--env", kind, "--out", str(tmp_path / "res"),
                           "--max-steps", "5"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["local", pytest.param("bubblewrap", marks=[pytest.mark.sandbox, pytest.mark.skipif(
    bool(bwrap_problem()), reason="needs bubblewrap")])])
def test_a_folder_named_with_a_newline_forges_no_line_and_local_says_it_is_unconfined(tmp_path, kind):
    """The workspace's name carries a newline and a line of the CLI's own; the command (under ``local``) writes
    into the user's folder directly. On 51c499d the forged ``result:`` line printed as a line of its own, and
    ``local`` said "your folder is unchanged" after its command had changed it."""
    ws = tmp_path / f"w\n{FORGED}"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    done = run_engineer(tmp_path, ws, kind, f"echo changed > {shlex.quote(str(ws))}/direct.txt; echo ran")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert not any(line.startswith(FORGED) for line in lines), done.stdout
    assert lines[-1].startswith("result: ") and lines[0].startswith("environment: ")
    if kind == "local":
        assert (ws / "direct.txt").exists()  # unconfined: it wrote to the user's folder
        assert "UNCONFINED" in lines[0] and "UNCONFINED" in lines[-1]
        assert "your folder is unchanged" not in done.stdout
    else:
        assert not (ws / "direct.txt").exists() and "UNCONFINED" not in done.stdout
