"""How an engineer step ends and how a session ends: the named exits (Submitted, LimitsExceeded for
max_steps / wall_clock / budget, EvalGit, Stopped), unusable replies (FormatError), exclusive and skipped
commands, repeat nudges, and native tool calls read back into commands. Scripted models, the ``local``
environment (a real bash), real files and git."""

import asyncio
import json
import subprocess

import pytest
import yaml

from toolkit.agent.environments.result import apply

from toolkit.agent.tools.human import ScriptedChannel
from toolkit.agent.loop.steps import STEP, Commands
from toolkit.agent.loop.role import load_role
from toolkit.agent.loop.session import Session, SessionConfig
from toolkit.llm import Request
from toolkit.llm.model import Call, load_prices
from toolkit.llm.request import Completion
from toolkit.record.run_log import Run
from toolkit.record.load import load


def cmd(_name, **args):
    return {"command_name": _name, "args": args}


def step(*commands, thought=""):
    return json.dumps({"thought": thought, "commands": list(commands)})


def sh(line):
    return cmd("Terminal.run_command", cmd=line)


END = step(cmd("end"))


def session(tmp_path, answers, role=None, **kw):
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump({"answers": answers}))
    kw.setdefault("environment", "local")
    return Session(SessionConfig(role or load_role("engineer"), "a test task", tmp_path / "ws", f"scripted:{path}",
                                 **kw))


def applied(s):
    """The user's folder once the session's result is applied (engineer --apply): untouched before."""
    apply(s.workspace.root, s.session_id)
    return s.workspace.root


def observations(s, index=None):
    entries = s.agent.memory.entries if index is None else [s.agent.memory[index]]
    return [o for e in entries for o in e.observations]


# ------------------------------------------------------------------ Submitted
@pytest.mark.slow
def test_end_stops_the_step_where_it_stands(tmp_path):
    s = session(tmp_path, [step(sh("echo a > a.txt"), cmd("end"), sh("echo b > b.txt"))])
    result = asyncio.run(s.run())
    assert (result.ended_by, result.steps) == ("end", 1)
    assert (applied(s) / "a.txt").read_text() == "a\n" and not (applied(s) / "b.txt").exists()
    assert [r.tool for r in result.tool_calls] == ["Terminal.run_command"]


@pytest.mark.slow
def test_a_failure_before_end_skips_the_end_and_the_session_goes_on(tmp_path):
    s = session(tmp_path, [step(sh("sh -c 'exit 3'"), cmd("end")), step(sh("echo later > later.txt")), END])
    result = asyncio.run(s.run())
    assert (result.ended_by, result.steps) == ("end", 3)
    assert observations(s, 0) == ["Command Terminal.run_command failed:\n[exit code 3]",
                                  "Skipped after the failure: end."]
    assert (applied(s) / "later.txt").exists()


# ------------------------------------------------------------------ LimitsExceeded
@pytest.mark.slow
def test_max_steps_comes_from_the_role_unless_the_session_overrides_it(tmp_path):
    role = load_role("engineer").model_copy(update={"max_react_loop": 2})
    answers = [step(sh(f"echo {i} >> n.txt")) for i in range(6)]
    with Run(tmp_path / "res") as run:
        s = session(tmp_path, answers, role=role, run=run)
        by_role = asyncio.run(s.run())
    assert (by_role.ended_by, by_role.steps) == ("max_steps", 2)
    assert (applied(s) / "n.txt").read_text() == "0\n1\n"
    tables = load(tmp_path / "res")
    assert len(tables.calls) == 2 and tables.sessions.iloc[0]["ended_by"] == "max_steps"
    override = asyncio.run(session(tmp_path / "o", answers, role=role, max_steps=4).run())
    assert (override.ended_by, override.steps) == ("max_steps", 4)


@pytest.mark.slow
def test_the_wall_clock_is_checked_before_each_step(tmp_path):
    # the clock starts when the session is made: 2 s leave the first step room under load (0.8 s did not, at ~20)
    s = session(tmp_path, [step(sh("sleep 2.5")), step(sh("touch too_late.txt")), END], wall_clock_s=2)
    result = asyncio.run(s.run())
    assert (result.ended_by, result.steps) == ("wall_clock", 1)
    assert not (applied(s) / "too_late.txt").exists()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["local", pytest.param("bubblewrap", marks=pytest.mark.sandbox)])
def test_the_wall_clock_fires_inside_a_tool(kind, tmp_path):
    """A command that would run for 600 s (the Terminal's own timeout is longer) is cut at the session's
    wall clock of 2 s: the session ends there, not after the command."""
    import time

    from toolkit.agent.environments.environment import bwrap_problem

    if kind == "bubblewrap" and bwrap_problem():
        pytest.skip(bwrap_problem())
    s = session(tmp_path, [step(sh("sleep 600")), step(sh("touch too_late.txt")), END], wall_clock_s=2,
                environment=kind)
    started = time.monotonic()
    result = asyncio.run(s.run())
    assert (result.ended_by, result.steps) == ("wall_clock", 1)
    assert time.monotonic() - started < 300  # 2 s of the command, then the result and the stop; the command
    # alone would run 600 s (300 leaves room for a loaded machine: the stop's kill and the result)
    assert "killed after" in s.agent.memory[0].observations[0]


def test_a_zero_budget_ends_before_the_first_call(tmp_path):
    with Run(tmp_path / "res") as run:
        result = asyncio.run(session(tmp_path, [END], run=run, budget_usd=0).run())
    assert (result.ended_by, result.steps, result.cost_usd) == ("budget", 0, 0.0)
    tables = load(tmp_path / "res")
    assert tables.calls.empty and tables.tool_calls.empty
    assert tables.sessions.iloc[0]["ended_by"] == "budget"


@pytest.fixture
def priced(tmp_path, monkeypatch):
    """A price for the loopback server's ``say`` model: 1000 USD per million tokens (0.001 USD a token)."""
    prices = tmp_path / "prices.yaml"
    prices.write_text("say: {input: 1000.0, output: 1000.0}\n")
    monkeypatch.setenv("TOOLKIT_PRICES", str(prices))
    load_prices.cache_clear()
    yield
    load_prices.cache_clear()


@pytest.mark.slow
def test_the_budget_ends_the_session_once_the_running_cost_reaches_it(tmp_path, server, priced):
    server.say(*[step(sh(f"echo {i}")) for i in range(20)])
    budget = 5.0
    with Run(tmp_path / "res") as run:
        s = Session(SessionConfig(load_role("engineer"), "t", tmp_path / "ws", f"openai:say@{server.base_url}", run=run,
                    budget_usd=budget, environment="local"))
        result = asyncio.run(s.run())
    calls = load(tmp_path / "res").calls.sort_values("seq")
    per_call = [(p + c) * 1000 / 1e6 for p, c in zip(calls["prompt_tokens"], calls["completion_tokens"])]
    assert calls["cost_usd"].tolist() == pytest.approx(per_call)
    running = [sum(per_call[:i + 1]) for i in range(len(per_call))]
    assert result.ended_by == "budget" and result.steps == len(per_call) >= 2
    assert running[-1] >= budget and all(r < budget for r in running[:-1])  # stopped at the first crossing
    assert result.cost_usd == pytest.approx(running[-1])


# ------------------------------------------------------------------ Stopped
@pytest.mark.slow
def test_stop_before_the_first_step_and_between_steps(tmp_path):
    async def drive(s):
        first = await s.step()
        s.stop()
        return first, s.steps, await s.step(), await s.step(), await s.finish()

    with Run(tmp_path / "res") as run:
        s = session(tmp_path, [step(sh("echo 1")), step(sh("echo 2")), END], run=run)
        first, steps_then, second, third, result = asyncio.run(drive(s))
    assert (first, steps_then, second, third) == (None, 1, "stopped", "stopped")  # an ended session stays ended
    assert (result.ended_by, result.steps) == ("stopped", 1)
    tables = load(tmp_path / "res")
    assert len(tables.calls) == 1 and tables.sessions.iloc[0]["ended_by"] == "stopped"
    early = session(tmp_path / "early", [END])
    early.stop()
    assert asyncio.run(early.run()).steps == 0


# ------------------------------------------------------------------ EvalGit
def git_repo(path):
    path.mkdir(parents=True)
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "config", "user.name", "t"],
                 ["git", "config", "user.email", "t@t"], ["git", "commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(argv, cwd=path, check=True, capture_output=True)
    return path


def commits(path):
    out = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=path, check=True, capture_output=True, text=True)
    return int(out.stdout)


@pytest.mark.slow
def test_eval_mode_records_git_commit_without_running_it(tmp_path):
    ws = git_repo(tmp_path / "ws")
    answers = [step(sh("echo x > x.txt && git add x.txt"), cmd("Git.commit", message="m"), sh("touch after"))]
    with Run(tmp_path / "res") as run:
        s = session(tmp_path, answers, run=run, eval_mode=True)
        result = asyncio.run(s.run())
    assert (result.ended_by, result.steps) == ("eval_git", 1)
    assert commits(ws) == 1 and not (ws / "after").exists()
    assert observations(s)[-1] == "Eval mode: the session ends at git pull/push/commit."
    rows = load(tmp_path / "res").tool_calls.sort_values("step")
    assert rows["tool"].tolist() == ["Terminal.run_command", "Git.commit"] and rows["ok"].all()
    assert json.loads(rows.iloc[1]["args"]) == {"message": "m"}


@pytest.mark.slow
def test_outside_eval_mode_git_commit_runs(tmp_path):
    ws = git_repo(tmp_path / "ws")
    s = session(tmp_path, [step(sh("echo x > x.txt && git add x.txt"), cmd("Git.commit", message="add x")), END])
    assert asyncio.run(s.run()).ended_by == "end"
    assert commits(ws) == 1  # the user's branch: the agent's commit comes back as text, never as git's objects
    patch = (ws / ".agent" / "results" / f"{s.session_id}.patch").read_text()
    assert patch.count("\nSubject: [PATCH") == 1 and "Subject: [PATCH] add x" in patch and "+x" in patch
    assert subprocess.run(["git", "for-each-ref", "refs/agent"], cwd=ws, capture_output=True, text=True).stdout == ""
    apply(ws, s.session_id)
    assert (ws / "x.txt").read_text() == "x\n" and commits(ws) == 1


# ------------------------------------------------------------------ unusable replies
@pytest.mark.slow
def test_an_unusable_reply_is_reasked_once_then_becomes_an_observation(tmp_path):
    s = session(tmp_path, ["no json here", '{"thought": "t", "commands": "ls"}', END])
    result = asyncio.run(s.run())
    assert (result.ended_by, result.steps) == ("end", 2)
    first = s.agent.memory[0]
    assert (first.thought, first.commands) == ("", [])
    assert len(first.observations) == 1 and first.observations[0].startswith("Your reply could not be used (")
    assert "commands: Input should be a valid list" in first.observations[0]


@pytest.mark.slow
def test_a_reasked_reply_that_parses_is_used_in_the_same_step(tmp_path):
    s = session(tmp_path, ["oops", step(sh("echo fixed > f.txt")), END])
    result = asyncio.run(s.run())
    assert (result.ended_by, result.steps) == ("end", 2) and (applied(s) / "f.txt").exists()
    assert s.agent.memory[0].commands == [sh("echo fixed > f.txt")]


def test_a_bare_list_and_slightly_broken_json_are_both_accepted(tmp_path):
    s = session(tmp_path, [json.dumps([sh("echo 1 > one.txt")]), '{"commands": [{"command_name": "end"}]'])
    assert asyncio.run(s.run()).ended_by == "end" and (applied(s) / "one.txt").exists()


def native(text, tool_calls):
    """A Call as the OpenAI backend builds it for native tool calls (real data objects, no endpoint)."""
    return Call(Request(), "openai:x", "x", None, "now", completion=Completion(text, "x", tool_calls=tool_calls))


def test_native_tool_calls_become_commands_in_order():
    value, error = STEP.parse(native(None, [{"name": "Plan.append_task", "arguments": '{"task_id": "1"}'},
                                            {"name": "Editor.open_file", "arguments": "[1, 2]"},
                                            {"name": "end"}]), Commands)
    assert error is None and value.thought == ""
    assert [c.model_dump() for c in value.commands] == [cmd("Plan.append_task", task_id="1"),
                                                       cmd("Editor.open_file"), cmd("end")]
    value, error = STEP.parse(native("thinking", [{"name": "Terminal.run_command", "arguments": "{'cmd': ls"}]),
                              Commands)
    assert value is None and error == "the arguments of Terminal.run_command are not JSON"
    value, error = STEP.parse(native(json.dumps([cmd("end")]), []), Commands)  # no tool calls: the text
    assert error is None and value.commands[0].command_name == "end"


# ------------------------------------------------------------------ exclusive and skipped commands
@pytest.mark.slow
def test_two_exclusive_commands_run_nothing_at_all(tmp_path):
    with Run(tmp_path / "res") as run:
        s = session(tmp_path, [step(sh("touch z.txt"), cmd("Editor.create_file", path="a.txt"),
                                    cmd("write_new_code", path="b.py", file_description="x"),
                                    cmd("CodeReview.fix", path="a.txt")), END], run=run)
        asyncio.run(s.run())
    assert observations(s, 0) == ["Rejected: Editor.create_file, write_new_code, CodeReview.fix are exclusive "
                                  "commands; send one of them per step. Nothing was run."]
    assert not any((applied(s) / n).exists() for n in ("z.txt", "a.txt", "b.py"))
    assert load(tmp_path / "res").tool_calls.empty


def test_one_exclusive_command_among_others_runs_them_all(tmp_path):
    s = session(tmp_path, [step(sh("echo a > a.txt"), cmd("Editor.append_file", path="a.txt", content="b"),
                                sh("cat a.txt")), END])
    asyncio.run(s.run())
    assert observations(s, 0)[-1] == "Command Terminal.run_command executed:\na\nb\n[exit code 0]"


@pytest.mark.slow
def test_everything_after_a_failure_is_listed_as_skipped(tmp_path):
    first = step(cmd("Editor.open_file", path="nope.txt"), sh("touch x"), cmd("Plan.finish_current_task"), cmd("end"))
    s = session(tmp_path, [first, END])
    result = asyncio.run(s.run())
    assert observations(s, 0) == ["Command Editor.open_file failed:\nEditor.open_file: nope.txt: no such file",
                                  "Skipped after the failure: Terminal.run_command, Plan.finish_current_task, end."]
    assert result.steps == 2 and not (applied(s) / "x").exists()
    assert s.agent.memory[0].editor_view  # a failed editor command still counts as an editor step


# ------------------------------------------------------------------ repeats
@pytest.mark.slow
def test_repeats_are_nudged_from_the_third_and_the_human_asked_from_the_fifth(tmp_path):
    same = step(cmd("Editor.find_file", name="*.md"))
    channel = ScriptedChannel(["stop looking", "really", "please"])
    s = session(tmp_path, [same] * 7 + [END], channel=channel)
    asyncio.run(s.run())
    nudge = "You have sent the same commands three times in a row. Try something different, or end if the task is done."
    per_step = [e.observations[1:] for e in s.agent.memory.entries[:7]]
    assert per_step[:2] == [[], []] and per_step[2] == [nudge] and per_step[3] == [nudge]
    assert per_step[4:] == [["Human: stop looking"], ["Human: really"], ["Human: please"]]
    assert len(channel.asked) == 3 and all("repeated the same commands 5 times on: a test task" in q
                                           for q in channel.asked)


@pytest.mark.slow
def test_thoughts_do_not_hide_a_repeat_and_alternation_is_not_one(tmp_path):
    a, b = cmd("Editor.find_file", name="*.md"), cmd("Editor.find_file", name="*.txt")
    s = session(tmp_path, [step(a, thought=f"attempt {i}") for i in range(3)] + [END])
    asyncio.run(s.run())
    assert "same commands three times" in observations(s, 2)[-1]
    alternating = session(tmp_path / "alt", [step(a), step(b)] * 3 + [END])
    asyncio.run(alternating.run())
    assert not any("same commands" in o for o in observations(alternating))


@pytest.mark.slow
def test_empty_steps_are_told_so_but_never_count_as_repeats(tmp_path):
    channel = ScriptedChannel()
    s = session(tmp_path, [step()] * 6 + [END], channel=channel)
    assert asyncio.run(s.run()).steps == 7
    assert observations(s) == ["No commands were sent. Send commands, or end if the task is done."] * 6
    assert channel.asked == []


@pytest.mark.slow
def test_a_model_that_cannot_answer_is_not_reasked_and_the_steps_still_count(tmp_path):
    """The script runs out after one answer: each later step is one failed call (a transport-like failure is
    not re-asked) and an observation, until max_steps."""
    with Run(tmp_path / "res") as run:
        s = session(tmp_path, [step(sh("echo one"))], run=run, max_steps=3)
        result = asyncio.run(s.run())
    assert (result.ended_by, result.steps) == ("max_steps", 3)
    calls = load(tmp_path / "res").calls.sort_values("seq")
    assert calls["ok"].tolist() == [True, False, False] and calls["fallback"].tolist() == [False, True, True]
    for later in (1, 2):
        (obs,) = observations(s, later)
        assert obs.startswith("Your reply could not be used (") and "no scripted answer" in obs


@pytest.mark.slow
def test_the_order_of_the_limits_stop_steps_clock_budget(tmp_path):
    s = session(tmp_path, [step(sh("echo 1")), END], max_steps=1, budget_usd=0, wall_clock_s=0)
    s.stop()
    assert asyncio.run(s.run()).ended_by == "stopped"
    t = session(tmp_path / "t", [step(sh("echo 1")), END], max_steps=1, wall_clock_s=60, budget_usd=0.0)
    assert asyncio.run(t.run()).ended_by == "budget"  # before the first step only the budget (0 >= 0) is over
    u = session(tmp_path / "u", [step(sh("sleep 1")), END], max_steps=1, wall_clock_s=0.8)
    assert asyncio.run(u.run()).ended_by == "max_steps"  # both over after the step: steps first
    v = session(tmp_path / "v", [END], wall_clock_s=0, budget_usd=0)
    assert asyncio.run(v.run()).ended_by == "wall_clock"  # the clock before the budget


def test_max_steps_zero_means_no_step(tmp_path):
    result = asyncio.run(session(tmp_path, [END], max_steps=0).run())
    assert (result.ended_by, result.steps) == ("max_steps", 0)
