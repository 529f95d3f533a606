"""A Session around the loop: the tools a role gets, the live context, step/stop/finish/run, the
``sessions`` row, the trajectory file after every step (secrets masked), errors recorded rather than raised;
roles as configuration; and the task suite's loading, workspace preparation, check and run."""

import asyncio
import inspect
import json
import os
import random
import re
import subprocess

import pytest

from toolkit.agent.environments.environment import make_environment
import yaml
from pydantic import ValidationError

from toolkit.agent.tools.human import ScriptedChannel
from toolkit.agent.loop.plan import Plan
from toolkit.agent.loop.role import RoleConfig, load_role
from toolkit.agent.loop.session import Session, SessionConfig
from toolkit.agent.loop.steps import Agent
from toolkit.llm import Model
from toolkit.agent.suite import check, load_tasks, prepare_workspace, run_task
from toolkit.agent.recorder import SessionRecorder
from toolkit.agent.tools.base import Failed, Toolbox, ToolError, tool
from toolkit.record.run_log import Run
from toolkit.record.load import load


def cmd(_name, **args):
    return {"command_name": _name, "args": args}


def step(*commands, thought=""):
    return json.dumps({"thought": thought, "commands": list(commands)})


END = step(cmd("end"))


def script(tmp_path, answers):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"answers": answers}))
    return f"scripted:{tmp_path / 's.yaml'}"


def session(tmp_path, answers, role=None, **kw):
    kw.setdefault("environment", "local")
    return Session(SessionConfig(role or load_role("engineer"), kw.pop("task", "a task"), tmp_path / "ws",
                                 script(tmp_path, answers), **kw))


def trajectory(s):
    return json.loads((s.workspace.root / ".agent" / "trajectories" / f"{s.session_id}.json").read_text())


# ------------------------------------------------------------------ wiring
def test_the_engineer_gets_every_tool_set_and_write_new_code_bare(tmp_path):
    s = session(tmp_path, [END])
    names = set(s.tools.specs)
    assert {n.split(".")[0] for n in names if "." in n} == {"Plan", "Editor", "Terminal", "Git", "CodeReview",
                                                           "Deployer", "ImageGetter", "Human"}
    assert "write_new_code" in names and not any(n.startswith("CodeWriter") for n in names)
    exclusive = {n for n, spec in s.tools.specs.items() if spec.exclusive}
    assert exclusive == {"Editor.create_file", "Editor.write_file", "Editor.edit_file_by_replace",
                         "Editor.insert_content_at_line", "Editor.append_file", "write_new_code", "CodeReview.fix",
                         "Git.commit", "Git.create_pull", "Deployer.deploy_to_public"}


def test_a_role_can_name_single_tools(tmp_path):
    role = RoleConfig(name="R", profile="Reader", goal="read", instruction="agent/analyst_instruction.j2",
                      tools=["Editor.open_file", "Editor.search_file", "Terminal"])
    s = session(tmp_path, [END], role=role)
    assert set(s.tools.specs) == {"Editor.open_file", "Editor.search_file", "Terminal.run_command"}
    assert "Editor.write_file" not in s.agent.system_values["tools"]


def test_the_tools_come_from_one_table_and_one_context_and_an_unknown_one_is_one_line(tmp_path):
    """``toolset.TOOLS``: each tool object made once from the session's ToolContext, only the ones the role names
    (a role without the Terminal opens no shell), every command in the session's environment."""
    from toolkit.agent.loop import toolset

    role = RoleConfig(name="W", profile="Writer", goal="write", instruction="agent/analyst_instruction.j2",
                      tools=["CodeWriter", "Git.commit", "Git.status"])
    s = session(tmp_path, [END], role=role)
    assert set(s.tools.specs) == {"write_new_code", "Git.commit", "Git.status"}
    assert set(s.tool_objects) == {"CodeWriter", "Git"} and s.tool_objects["Git"].environment is s.environment
    assert set(toolset.TOOLS) == {"Plan", "Editor", "Terminal", "Git", "CodeWriter", "CodeReview", "Deployer",
                                  "ImageGetter", "Human"}
    with pytest.raises(ValueError, match=r"role R: unknown tools \['Shell'\]; tools are Plan, Editor, Terminal"):
        RoleConfig(name="R", profile="p", goal="g", instruction="agent/analyst_instruction.j2", tools=["Shell"])
    asyncio.run(s.finish())


def test_closing_the_tools_closes_every_one_even_after_one_fails(tmp_path):
    """``toolset.close``: a tool whose close raises does not leave the ones after it open (the Terminal's shell
    here, a real bash); the first error is raised once all are closed, a later one is a warning naming its tool.
    The two failing tools are test doubles (no real tool fails to close on demand)."""
    from toolkit.agent.environments.environment import LocalEnvironment
    from toolkit.agent.environments.workspace import Workspace
    from toolkit.agent.loop import toolset
    from toolkit.agent.tools.terminal import Terminal

    class Broken:
        def __init__(self, message):
            self.message = message

        async def close(self):
            raise RuntimeError(self.message)

    terminal = Terminal(Workspace.on_host(tmp_path / "ws"))
    assert isinstance(terminal.environment, LocalEnvironment)

    async def go():
        await terminal.run_command("echo hi")
        shell = terminal.environment.proc
        assert shell is not None and shell.returncode is None
        made = {"First": Broken("first"), "Terminal": terminal, "Second": Broken("second")}
        with pytest.warns(UserWarning, match=r"^Second.close also failed: RuntimeError: second$"):
            with pytest.raises(RuntimeError, match="^first$"):
                await toolset.close(made)
        return shell

    shell = asyncio.run(go())
    assert terminal.environment.proc is None and shell.returncode is not None  # the shell was ended


def test_no_tool_runs_unconfined_unless_asked_by_name(tmp_path):
    """A workspace needs the environment its tools run in: none is an error of one line, never the host."""
    from toolkit.agent.environments.environment import LocalEnvironment
    from toolkit.agent.environments.workspace import Workspace
    from toolkit.agent.tools.git import Git
    from toolkit.agent.tools.terminal import Terminal

    with pytest.raises(TypeError) as err:
        Terminal(Workspace(tmp_path / "ws", None))
    assert str(err.value).startswith(f"Workspace {tmp_path / 'ws'}: needs the environment its tools run in")
    assert "\n" not in str(err.value)
    with pytest.raises(TypeError, match="environment"):
        Git(Workspace(tmp_path / "ws"))  # the environment left out
    host = Workspace.on_host(tmp_path / "ws")
    assert isinstance(Terminal(host).environment, LocalEnvironment) and not host.environment.confined


@pytest.mark.slow
def test_context_follows_the_plan_and_the_open_file(tmp_path):
    answers = [step(cmd("Plan.append_task", task_id="1", instruction="read it"),
                    cmd("Editor.create_file", path="sub/a.txt", content="x")), END]
    s = session(tmp_path, answers)
    assert s.context() == {"plan": "No plan yet. For a multi-step task, start with Plan.append_task.",
                           "cwd": str(s.environment.root), "open_file": None}
    asyncio.run(s.run())
    assert s.context() == {"plan": "[>] 1: read it", "cwd": str(s.environment.root), "open_file": "sub/a.txt"}


@pytest.mark.slow
def test_session_ids_and_the_role_defaults_for_eval_and_native_tools(tmp_path):
    plain = session(tmp_path / "a", [END])
    assert re.fullmatch(r"s-[0-9a-f]{10}", plain.session_id)
    assert (plain.agent.eval_mode, plain.agent.native_tools, plain.agent.limits.max_steps) == (False, False, 40)
    role = load_role("engineer").model_copy(update={"eval": True, "native_tools": True})
    by_role = session(tmp_path / "b", [END], role=role, session_id="mine")
    assert (by_role.session_id, by_role.agent.eval_mode, by_role.agent.native_tools) == ("mine", True, True)
    overridden = session(tmp_path / "c", [END], role=role, eval_mode=False, native_tools=False)
    assert (overridden.agent.eval_mode, overridden.agent.native_tools) == (False, False)


@pytest.mark.slow  # the unpriced model imports the openai client (~1 s)
def test_a_config_resolves_every_open_choice_once_and_the_agent_reads_only_it(tmp_path):
    """The one way to wire the loop: ``Agent(config, context, tools)`` reads the settled config; every default
    (the role's eval mode, step limit and native tools, a session id, a channel, the recorded spec) is made once by
    ``SessionConfig.resolved``, and resolving again changes nothing."""
    role = load_role("engineer").model_copy(update={"eval": True, "max_react_loop": 7})
    config = SessionConfig(role, "a task", tmp_path / "ws", script(tmp_path, [END])).resolved()
    assert (config.eval_mode, config.max_steps, config.native_tools) == (True, 7, False)
    assert isinstance(config.model, Model) and config.record_spec == config.model.spec
    assert isinstance(config.channel, ScriptedChannel) and re.fullmatch(r"s-[0-9a-f]{10}", config.session_id)
    assert config.resolved() == config
    assert list(inspect.signature(Agent).parameters) == ["config", "context", "tools"]
    with pytest.raises(ValueError, match="budget_usd needs a price for gpt-nobody"):
        SessionConfig(role, "a task", tmp_path / "ws", "openai:gpt-nobody@http://127.0.0.1:9/v1",
                      budget_usd=1.0).resolved()


# ------------------------------------------------------------------ finishing and the sessions row
@pytest.mark.slow
def test_the_sessions_row(tmp_path):
    with Run(tmp_path / "res") as run:
        s = session(tmp_path, [step(cmd("Terminal.run_command", cmd="echo hi")), END], run=run, session_id="sid-1",
                    record_spec="scripted:{task}/good.yaml", task="say hi")
        result = asyncio.run(s.run(check=lambda: "yes"))
    row = load(tmp_path / "res").sessions.iloc[0].to_dict()
    assert {k: row[k] for k in ("session_id", "run_id", "task", "spec", "steps", "ended_by", "success", "cost_usd")} \
        == {"session_id": "sid-1", "run_id": run.run_id, "task": "say hi", "spec": "scripted:{task}/good.yaml",
            "steps": 2, "ended_by": "end", "success": True, "cost_usd": 0.0}
    assert row["wall_s"] == round(result.wall_s, 3) and result.success is True
    rows = load(tmp_path / "res").tool_calls
    assert rows["session_id"].tolist() == ["sid-1"] and len(result.tool_calls) == 1


@pytest.mark.slow
def test_finish_runs_the_check_once_and_writes_one_row(tmp_path):
    checked = []

    async def failing_check():
        checked.append(1)
        return 0

    async def twice(s):
        return await s.finish(failing_check), await s.finish(failing_check)

    with Run(tmp_path / "res") as run:
        s = session(tmp_path, [END], run=run)
        first, second = asyncio.run(twice(s))
    assert first is second and checked == [1]
    assert (first.ended_by, first.steps, first.success) == ("stopped", 0, False)
    assert len(load(tmp_path / "res").sessions) == 1


def test_finish_and_interrupted_end_a_session_through_one_helper():
    """The ``sessions`` row and the ``SessionResult`` are built in one place, so ``finish`` and ``interrupted``
    cannot write rows of different shapes (they each built both before)."""
    source = inspect.getsource(Session)
    assert source.count("self.recorder.session(") == 1 and source.count("SessionResult(") == 1


def running(pattern):
    """Live (not zombie) processes whose command line contains ``pattern``, read from /proc."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if pattern in cmdline and state != "Z":
            found.append(int(pid))
    return found


def test_finish_ends_the_shell_and_everything_it_started(tmp_path):
    # a duration of this run's own: another run of this test on the machine (a second suite) is not counted
    sleeper = f"sleep 301.{random.SystemRandom().randrange(10**6):06d}"

    async def go(s):
        await s.step()
        for _ in range(100):  # the background child may not have exec'd sleep yet when the command returns
            if running(sleeper):
                break
            await asyncio.sleep(0.05)
        before = s.environment.shell_pid(), running(sleeper)
        await s.finish()
        return before

    s = session(tmp_path, [step(cmd("Terminal.run_command", cmd=f"{sleeper} > /dev/null 2>&1 & disown; echo ok"))])
    shell, sleepers = asyncio.run(go(s))
    assert shell is not None and len(sleepers) == 1
    assert running(sleeper) == []
    stat = open(f"/proc/{shell}/stat").read() if os.path.exists(f"/proc/{shell}/stat") else ") Z"
    assert stat.rsplit(")", 1)[1].split()[0] == "Z"  # the shell is gone (at most a zombie awaiting its reaper)


@pytest.mark.slow
def test_ctrl_c_keeps_the_trajectory_and_the_sessions_row_and_closes_the_run(tmp_path):
    """SIGINT to a real ``engineer`` process during its second step (a scripted model; the step's command sleeps):
    exit 130 after its ``ended_by: interrupted`` line, the run folder compacted (no JSONL left), a ``sessions``
    row with ``ended_by`` interrupted after 2 steps (begun), the trajectory with both steps and a last entry saying
    so, and the sleeping command ended. Before, the session wrote no row and its trajectory stopped at step 1."""
    import signal
    import sys
    import time
    from pathlib import Path

    import pandas as pd

    sleeper = f"sleep 297.{random.SystemRandom().randrange(10**6):06d}"  # this run's own, as above
    model = script(tmp_path, [step(cmd("Terminal.run_command", cmd="echo one > one.txt"), thought="first"),
                              step(cmd("Terminal.run_command", cmd=sleeper), thought="second"), END])
    (tmp_path / "ws").mkdir()
    root = Path(__file__).resolve().parents[2]
    # Python installs its Ctrl-C handler only where SIGINT is not ignored (a background job's children ignore it)
    proc = subprocess.Popen([sys.executable, "-m", "toolkit", "engineer", "--task", "t", "--workspace",
                             str(tmp_path / "ws"), "--model", model, "--env", "local", "--out", str(tmp_path / "res")],
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 300  # a busy machine starts Python slowly
        while not running(sleeper) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert running(sleeper), f"the second step never ran: {proc.poll()}"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "interrupted", err[-2000:]
    assert "ended_by: interrupted after 2 steps;" in out, out
    (run,) = (tmp_path / "res").iterdir()
    assert not list(run.glob("*.jsonl")) and (run / "sessions.parquet").exists()  # closed: compacted
    row = load(tmp_path / "res").sessions.iloc[0]
    assert (row["ended_by"], row["steps"]) == ("interrupted", 2) and pd.isna(row["success"])
    (saved,) = (tmp_path / "ws" / ".agent" / "trajectories").glob("*.json")
    memory = json.loads(saved.read_text())["memory"]
    assert [m["thought"] for m in memory] == ["first", "second", ""]
    assert memory[-1]["observations"] == ["interrupted (CancelledError) during step 2; the session's result is not "
                                          "taken"]
    for _ in range(100):
        if not running(sleeper):
            break
        time.sleep(0.05)
    assert running(sleeper) == []


@pytest.mark.slow
def test_a_failing_channel_ends_the_session_as_error_recorded_not_raised(tmp_path):
    """A human channel that breaks (a notebook widget closed, say) during the repeat check: a tiny channel
    class stands in for the widget, which cannot run in a test."""

    class BrokenChannel(ScriptedChannel):
        async def ask(self, question):
            raise RuntimeError("the widget is gone")

    same = step(cmd("Editor.find_file", name="*.txt"))
    with Run(tmp_path / "res") as run:
        s = session(tmp_path, [same] * 6, run=run, channel=BrokenChannel())
        result = asyncio.run(s.run())
    assert (result.ended_by, result.steps) == ("error", 5)
    assert s.agent.memory[-1].observations == ["error: RuntimeError: the widget is gone"]
    assert trajectory(s)["memory"][-1]["observations"] == ["error: RuntimeError: the widget is gone"]
    assert load(tmp_path / "res").sessions.iloc[0]["ended_by"] == "error"


@pytest.mark.slow
def test_an_open_file_swapped_for_a_link_out_does_not_end_the_session(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("not yours")
    answers = [step(cmd("Editor.create_file", path="a.txt", content="x")),
               step(cmd("Terminal.run_command", cmd=f"rm a.txt && ln -s {outside} a.txt")), END]
    s = session(tmp_path, answers)
    result = asyncio.run(s.run())
    assert (result.ended_by, result.steps) == ("end", 3)


# ------------------------------------------------------------------ trajectories
def test_the_trajectory_is_saved_after_every_step(tmp_path):
    async def go(s):
        await s.step()
        one = trajectory(s)
        await s.step()
        return one, trajectory(s)

    answers = [step(cmd("Plan.append_task", task_id="1", instruction="t"), thought="plan"),
               step(cmd("Plan.finish_current_task"), thought="done")]
    s = session(tmp_path, answers, task="the task")
    one, two = asyncio.run(go(s))
    assert (one["steps"], len(one["memory"]), one["plan"]) == (1, 1, "[>] 1: t")
    assert (two["steps"], len(two["memory"]), two["plan"]) == (2, 2, "[x] 1: t")
    assert two["memory"][1] == {"step": 2, "thought": "done", "commands": [cmd("Plan.finish_current_task")],
                                "observations": ["Command Plan.finish_current_task executed:\n[x] 1: t"],
                                "editor_view": False}
    assert (two["session_id"], two["task"], two["spec"]) == (s.session_id, "the task", s.spec)
    assert two["environment"] == s.environment.describe() and two["environment"]


def test_the_trajectory_masks_secrets_wherever_they_appear(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_DEPLOY_TOKEN", "deploy-value-7f3a9c")
    github = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2"
    answers = [step(cmd("Plan.append_task", task_id="1", instruction="push with deploy-value-7f3a9c"),
                    thought=f"the token {github} will do")]
    s = session(tmp_path, answers, task="use deploy-value-7f3a9c", max_steps=1)
    asyncio.run(s.run())
    text = (s.workspace.root / ".agent" / "trajectories" / f"{s.session_id}.json").read_text()
    assert "deploy-value-7f3a9c" not in text and github not in text
    saved = json.loads(text)
    assert saved["task"] == "use [redacted MY_DEPLOY_TOKEN]" and "[redacted MY_DEPLOY_TOKEN]" in saved["plan"]
    assert "deploy-value-7f3a9c" in s.task  # only the saved copy is masked


# ------------------------------------------------------------------ roles
def test_roles_load_by_name_or_path_and_say_what_exists(tmp_path):
    assert load_role("data_analyst").max_react_loop == 20
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"name": "M", "profile": "P", "goal": "g", "instruction": "agent/x.j2",
                                    "tools": ["Terminal"]}))
    role = load_role(str(path))
    assert (role.name, role.max_react_loop, role.memory_chars, role.terminal_timeout_s, role.eval) == \
        ("M", 40, 12_000, 60.0, False)
    with pytest.raises(ValueError, match=r"no role 'enginer'; roles are \['data_analyst', 'engineer'\]"):
        load_role("enginer")
    with pytest.raises(ValueError, match="no role"):
        load_role(str(tmp_path / "absent.yaml"))


def test_role_validation(tmp_path):
    base = {"name": "M", "profile": "P", "goal": "g", "instruction": "agent/x.j2"}
    with pytest.raises(ValueError, match=r"role M: unknown tools \['Browser'\]"):
        RoleConfig(**base, tools=["Terminal", "Browser"])
    with pytest.raises(ValidationError, match="max_steps"):
        RoleConfig(**base, tools=["Terminal"], max_steps=3)  # a misspelt key is an error, not ignored
    with pytest.raises(ValidationError):
        RoleConfig(**{k: v for k, v in base.items() if k != "goal"}, tools=["Terminal"])


def test_a_misspelt_single_tool_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="opn_file"):
        role = RoleConfig(name="M", profile="P", goal="g", instruction="agent/analyst_instruction.j2",
                          tools=["Editor.opn_file", "Terminal"])
        session(tmp_path, [END], role=role)


# ------------------------------------------------------------------ the task suite
def make_task(folder, name, task_yaml, files, good=None):
    root = folder / name
    (root / "files").mkdir(parents=True)
    for rel, text in files.items():
        (root / "files" / rel).write_text(text)
    (root / "task.yaml").write_text(yaml.safe_dump(task_yaml))
    if good is not None:
        (root / "good.yaml").write_text(yaml.safe_dump({"answers": good}))
    return root


def test_load_tasks_reads_defaults_filters_and_refuses_unknown_names(tmp_path):
    make_task(tmp_path, "b_task", {"task": "B", "check": "true", "eval": True, "human_answers": ["x"],
                                   "max_steps": 3, "role": "data_analyst"}, {"a": "1"})
    make_task(tmp_path, "a_task", {"task": "A", "check": "false"}, {"a": "1"})
    (tmp_path / "not_a_task").mkdir()
    tasks = load_tasks(tmp_path)
    assert [t.name for t in tasks] == ["a_task", "b_task"]
    a, b = tasks
    assert (a.task, a.check, a.role, a.eval, a.human_answers, a.max_steps) == ("A", "false", "engineer", False, (),
                                                                               None)
    assert (b.role, b.eval, b.human_answers, b.max_steps, b.folder) == ("data_analyst", True, ("x",), 3,
                                                                       tmp_path / "b_task")
    assert [t.name for t in load_tasks(tmp_path, ["b_task"])] == ["b_task"]
    with pytest.raises(ValueError, match=r"unknown tasks \['c_task'\]"):
        load_tasks(tmp_path, ["b_task", "c_task"])
    assert len(load_tasks()) == 10  # the shipped suite


def git(work, *args):
    return subprocess.run(["git", *args], cwd=work, check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.slow
def test_prepare_workspace_commits_the_files_and_adds_a_bare_origin(tmp_path, monkeypatch):
    make_task(tmp_path / "tasks", "t1", {"task": "T", "check": "true"}, {"a.txt": "alpha\n", "b.py": "B = 1\n"})
    (task,) = load_tasks(tmp_path / "tasks")
    monkeypatch.chdir(tmp_path)
    work = prepare_workspace(task, "runs")  # a relative root: the paths come back absolute
    assert work == tmp_path / "runs" / "t1" / "work" and work.is_absolute()
    assert git(work, "log", "--format=%s %an <%ae>") == "start Agent <agent@example.invalid>"
    assert git(work, "branch", "--show-current") == "main" and git(work, "status", "--porcelain") == ""
    assert sorted(git(work, "ls-files").split()) == ["a.txt", "b.py"]
    assert git(work, "remote", "get-url", "origin") == str(tmp_path / "runs" / "t1" / "origin.git")
    assert git(tmp_path / "runs" / "t1" / "origin.git", "rev-parse", "--is-bare-repository") == "true"
    assert ".agent/" in (work / ".git" / "info" / "exclude").read_text()
    (work / "a.txt").write_text("changed\n")
    (work / "junk").write_text("x")
    again = prepare_workspace(task, tmp_path / "runs")  # a second run starts from scratch
    assert (again / "a.txt").read_text() == "alpha\n" and not (again / "junk").exists()
    assert git(again, "rev-list", "--count", "HEAD") == "1"


def test_check_runs_the_task_command_in_the_workspace(tmp_path):
    make_task(tmp_path / "tasks", "t", {"task": "T", "check": "grep -qx alpha a.txt"}, {"a.txt": "alpha\n"})
    (task,) = load_tasks(tmp_path / "tasks")
    work = prepare_workspace(task, tmp_path / "runs")
    env = make_environment("local", work)
    try:  # in the session's copy: what the agent left there, not the user's folder
        assert check(task, env) is True
        env.run(["bash", "-c", "echo beta > a.txt"])
        assert check(task, env) is False and (work / "a.txt").read_text() == "alpha\n"
    finally:
        env.discard()


@pytest.mark.slow
def test_run_task_wires_answers_limits_and_the_recorded_spec(tmp_path):
    good = [step(cmd("Human.ask_human", question="Name?")),
            step(cmd("Terminal.run_command", cmd="echo Ada > name.txt")), END]
    make_task(tmp_path / "tasks", "ask", {"task": "Write the name", "check": "grep -qx Ada name.txt",
                                          "human_answers": ["Ada"], "max_steps": 5}, {"README": "x\n"}, good)
    (task,) = load_tasks(tmp_path / "tasks")
    with Run(tmp_path / "res") as run:
        result = asyncio.run(run_task(task, "scripted:{task}/good.yaml", run, tmp_path / "runs", environment="local"))
    assert (result.ended_by, result.steps, result.success) == ("end", 3, True)
    assert result.session_id == f"ask-{run.run_id}"
    assert result.tool_calls[0].output == "Human: Ada"
    row = load(tmp_path / "res").sessions.iloc[0]
    assert (row["spec"], row["task"], bool(row["success"])) == ("scripted:{task}/good.yaml", "Write the name", True)
    capped = make_task(tmp_path / "tasks2", "cap", {"task": "loop", "check": "true", "max_steps": 2}, {"f": "x\n"},
                       [step(cmd("Terminal.run_command", cmd=f"echo {i}")) for i in range(5)])
    (task2,) = load_tasks(capped.parent)
    limited = asyncio.run(run_task(task2, "scripted:{task}/good.yaml", None, tmp_path / "runs2", environment="local"))
    assert (limited.ended_by, limited.steps, limited.session_id) == ("max_steps", 2, "cap-adhoc")


# ------------------------------------------------------------------ the toolbox the session builds
@tool
def summarize(path: str, limit: int | None = None, tags: tuple[str, ...] = ()) -> str:
    """Summarize a file.

    Reads it and returns a short summary.

    Args:
        path: the file.
        limit: at most this many words.
    """
    return f"{path}|{limit}|{list(tags)}"


@tool(name="Custom.shout")
async def shout(text: str) -> str:
    return text.upper()


@tool
def broken(x: int) -> str:
    """Always fails."""
    raise ZeroDivisionError("no way")


@tool
def refuses(x: int) -> str:
    """Refuses politely."""
    raise ToolError("not today")


@tool
def fails_softly() -> str:
    """Reports a failure."""
    raise Failed("line one\nline two")


@tool
def silent() -> None:
    """Returns nothing."""


@tool
def leaky() -> str:
    """Prints a key."""
    return "key=" + "sk-" + "leakyleakyleaky1234567890"


def toolbox(run=None):
    box = Toolbox(SessionRecorder(run, "sid"))
    for fn in (summarize, shout, broken, refuses, fails_softly, silent, leaky):
        box.add(fn)
    return box


def test_schemas_and_signatures_come_from_the_declaration():
    box = toolbox()
    spec = box.specs["summarize"]
    assert spec.description == "Summarize a file. Reads it and returns a short summary."
    assert spec.signature() == "summarize(path, limit=…, tags=…)" and not spec.exclusive
    props = spec.schema()["parameters"]["properties"]
    assert props["path"] == {"description": "the file.", "title": "Path", "type": "string"}
    assert {"type": "null"} in props["limit"]["anyOf"] and props["limit"]["description"] == "at most this many words."
    assert props["tags"]["items"] == {"type": "string"} and "description" not in props["tags"]
    assert box.specs["Custom.shout"].description == "Custom.shout"  # no docstring: the name
    assert box.specs["Custom.shout"].args_model.__name__ == "Custom_shout_args"


async def test_dispatch_outcomes_are_one_line_results():
    box = toolbox()
    assert (await box.call("summarize", {"path": "a", "tags": ["x"]})).output == "a|None|['x']"
    assert (await box.call("Custom.shout", {"text": "hey"})).output == "HEY"  # an async tool is awaited
    boom = await box.call("broken", {"x": 1})
    assert (boom.ok, boom.output) == (False, "broken failed: ZeroDivisionError: no way")
    assert (await box.call("refuses", {"x": 1})).output == "refuses: not today"
    soft = await box.call("fails_softly", {})
    assert (soft.ok, soft.output) == (False, "line one\nline two")  # shown in full
    assert (await box.call("silent", {})).output == ""
    assert (await box.call("leaky", {})).output == "key=[redacted key]"
    nulls = await box.call("summarize", None)
    assert nulls.output == "summarize: args must be a JSON object; usage: summarize(path, limit=…, tags=…)"


async def test_unknown_names_get_the_closest_tool_or_the_list():
    box = Toolbox().add(Plan())
    assert (await box.call("Plan.apend_task", {})).output.endswith("Did you mean Plan.append_task?")
    assert (await box.call("reset_task", {})).output.endswith("Did you mean Plan.reset_task?")  # prefix left out
    listing = (await box.call("deploy", {})).output
    assert listing.startswith("Unknown command 'deploy'. Tools: ") and "Plan.finish_current_task" in listing


def test_only_selects_by_method_or_full_name():
    box = Toolbox().add(Plan(), only=["append_task", "Plan.reset_task"])
    assert set(box.specs) == {"Plan.append_task", "Plan.reset_task"}
    assert set(Toolbox().add(Plan(), prefix="P").specs) == {"P.append_task", "P.replace_task", "P.reset_task",
                                                             "P.finish_current_task"}


def test_tool_calls_rows(tmp_path, caplog):
    with Run(tmp_path / "res") as run:
        box = toolbox(run)

        async def calls():
            await box.call("summarize", {"path": "p"}, step=1)
            await box.call("broken", {"x": 2}, step=2)
            await box.call("fails_softly", {}, step=3)

        asyncio.run(calls())
    rows = load(tmp_path / "res").tool_calls.sort_values("step")
    assert rows["tool"].tolist() == ["summarize", "broken", "fails_softly"]
    assert rows["ok"].tolist() == [True, False, False] and set(rows["session_id"]) == {"sid"}
    assert rows["error"].isna().tolist() == [True, False, False]
    assert rows["error"].tolist()[1:] == ["broken failed: ZeroDivisionError: no way", "line one\nline two"]
    assert rows["output_chars"].tolist() == [len("p|None|[]"), 40, 17] and not rows["truncated"].any()
    assert json.loads(rows["args"].tolist()[0]) == {"path": "p"}
    assert "tool broken failed" in caplog.text and "ZeroDivisionError" in caplog.text  # the traceback: the log


def test_the_tool_listing_has_no_doubled_punctuation():
    listing = toolbox().describe()
    assert ".." not in listing and ".;" not in listing
