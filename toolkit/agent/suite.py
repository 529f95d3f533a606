"""The offline engineer task suite: each task folder in ``experiments/engineer_tasks/`` holds
``task.yaml`` (the task text, a check command that decides success, optional role, eval mode, human
answers), ``files/`` (the starting workspace) and scripted trajectories (``good.yaml``, ``bad.yaml``).
The runner copies the files into a fresh git workspace with a local bare ``origin``, runs the loop, runs
the check inside the session's own environment, on its copy (a check runs agent-written code),
and records sessions, tool calls and calls like any other run."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from toolkit.agent.environments.environment import Environment
from toolkit.core import data
from toolkit.agent.tools.human import ScriptedChannel
from toolkit.agent.loop.role import load_role
from toolkit.agent.loop.session import Session, SessionConfig, SessionResult
from toolkit.agent.environments.workspace import scrubbed_env
from toolkit.record.run_log import Run

TASKS_DIR = data.path("experiments", "engineer_tasks")


@dataclass
class TaskSpec:
    name: str
    folder: Path
    task: str
    check: str
    role: str = "engineer"
    eval: bool = False
    human_answers: tuple[str, ...] = ()
    # where the human's answers are also written, one a line, for a harness with no way to ask (not committed)
    answers_file: str | None = None
    max_steps: int | None = None


def load_tasks(folder: str | Path = TASKS_DIR, names: list[str] | None = None) -> list[TaskSpec]:
    tasks = []
    for path in sorted(Path(folder).glob("*/task.yaml")):
        data = yaml.safe_load(path.read_text())
        spec = TaskSpec(name=path.parent.name, folder=path.parent, task=data["task"], check=data["check"],
                        role=data.get("role", "engineer"), eval=data.get("eval", False),
                        human_answers=tuple(data.get("human_answers", [])), max_steps=data.get("max_steps"),
                        answers_file=data.get("answers_file"))
        if names is None or spec.name in names:
            tasks.append(spec)
    if names and len(tasks) != len(names):
        raise ValueError(f"unknown tasks {sorted(set(names) - {t.name for t in tasks})}")
    return tasks


def _sh(cmd: list[str], cwd: Path) -> None:
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, env=scrubbed_env())


def prepare_workspace(task: TaskSpec, root: Path) -> Path:
    """``root/<task>/work`` (a git repo with the task's files committed) and ``root/<task>/origin.git``
    (absolute paths, whatever folder the caller was in)."""
    base = Path(root).resolve() / task.name
    if base.exists():
        shutil.rmtree(base)
    work = base / "work"
    shutil.copytree(task.folder / "files", work)
    remote = base / "origin.git"
    _sh(["git", "init", "-q", "--bare", str(remote)], base)
    _sh(["git", "init", "-q", "-b", "main"], work)
    for key, value in (("user.name", "Agent"), ("user.email", "agent@example.invalid")):
        _sh(["git", "config", key, value], work)
    excluded = [".agent/", "__pycache__/", ".pytest_cache/"]
    if task.answers_file:
        (work / task.answers_file).write_text("".join(f"{a}\n" for a in task.human_answers))
        excluded.append(task.answers_file)
    (work / ".git" / "info" / "exclude").write_text("".join(f"{x}\n" for x in excluded))
    _sh(["git", "add", "-A"], work)
    _sh(["git", "commit", "-q", "-m", "start"], work)
    _sh(["git", "remote", "add", "origin", str(remote)], work)
    return work


def check(task: TaskSpec, environment: Environment) -> bool:
    """Run the task's check command in the session's environment, on its copy (after its result was taken)."""
    return environment.run(["bash", "-c", task.check], timeout=120).returncode == 0


async def run_task(task: TaskSpec, model: str, run: Run | None, root: Path,
                   environment: str | None = None, spending: Any = None) -> SessionResult:
    """``model`` may name the task's own folder as ``{task}``, e.g. ``scripted:{task}/good.yaml``;
    ``environment`` is an environment kind (``None``: the role's, by default bubblewrap where it works);
    ``spending``: a study's spending cap the session's calls are charged to (``Session``)."""
    work = prepare_workspace(task, root)
    role = load_role(task.role)
    session = Session(SessionConfig(
        role, task.task, work, model.replace("{task}", str(task.folder)), run=run,
        channel=ScriptedChannel(list(task.human_answers)), eval_mode=task.eval, max_steps=task.max_steps,
        session_id=f"{task.name}-{run.run_id if run else 'adhoc'}", record_spec=model, environment=environment,
        allowed_remotes=[work.parent / "origin.git"], spending=spending))
    return await session.run(check=lambda: check(task, session.environment))


async def run_suite(model: str, run: Run | None, root: Path, folder: str | Path = TASKS_DIR,
                    names: list[str] | None = None, environment: str | None = None) -> dict[str, SessionResult]:
    return {t.name: await run_task(t, model, run, root, environment) for t in load_tasks(folder, names)}
