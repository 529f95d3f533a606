"""The mini-swe-agent export opened by mini-swe-agent's own inspector (its Textual app, driven headless by
Textual's test pilot): every exported session loads, with one step per toolkit step."""

import asyncio
import json
import os
import tempfile

import pytest

from toolkit.export import html, mini
from toolkit.record.load import load

pytestmark = pytest.mark.interop

# mini-swe-agent writes its global config folder on import: keep it out of the home folder
os.environ.setdefault("MSWEA_GLOBAL_CONFIG_DIR", tempfile.mkdtemp(prefix="mswea-"))
inspector = pytest.importorskip("minisweagent.run.utilities.inspector",
                                reason="the interop extra (mini-swe-agent) is not installed")


def test_its_inspector_opens_every_exported_session(session_folder, tmp_path):
    results = load(session_folder)
    trajectories = {s: html.find_trajectory(session_folder, s) for s in results.sessions["session_id"]}
    paths = mini.write(results, tmp_path, trajectories)
    assert len(paths) == len(results.sessions) == 2

    async def browse():
        app = inspector.TrajectoryInspector(paths)
        seen = []
        async with app.run_test() as pilot:
            for _ in paths:
                seen.append((app.current_trajectory_name, app.n_steps, app.title))
                await pilot.press("L")  # next trajectory
        return seen

    seen = asyncio.run(browse())
    for (name, steps, title), path in zip(seen, paths):
        sid = path.name.removesuffix(".traj.json")
        assert name == path.name and "No Data" not in title
        n_memory = len(trajectories[sid]["memory"])
        assert steps == n_memory + 1  # the opening messages, then one page per assistant step
        data = json.loads(path.read_text())
        assert data["trajectory_format"] == "mini-swe-agent-1.1" and data["info"]["exit_status"] == "Submitted"


def test_a_terminal_command_is_a_bash_action():
    assert mini.action({"command_name": "Terminal.run_command", "args": {"cmd": "ls -la"}}) == "ls -la"
    assert mini.action({"command_name": "Editor.open_file", "args": {"path": "a.py"}}) == \
        'Editor.open_file {"path": "a.py"}'


def test_every_task_has_a_bash_only_script_that_submits():
    import yaml

    from toolkit.agent.suite import load_tasks

    for task in load_tasks():
        commands = yaml.safe_load((task.folder / "mini.yaml").read_text())["commands"]
        assert all(isinstance(c, str) for c in commands), task.name
        assert commands[-1] == "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", task.name
