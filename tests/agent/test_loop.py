"""The think → act loop with scripted models (real files, a real bash, real git)."""

import asyncio
import json

import yaml

import pytest
from toolkit.agent.tools.human import ScriptedChannel
from toolkit.agent.loop.role import load_role
from toolkit.agent.loop.session import Session, SessionConfig
from toolkit.record.run_log import Run
from toolkit.record.load import load


def script(tmp_path, answers):
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump({"answers": answers}))
    return f"scripted:{path}"


def cmd(_name, **args):
    return {"command_name": _name, "args": args}


def agent(tmp_path, answers, run=None, **kw):
    return Session(SessionConfig(load_role("engineer"), "a test task", tmp_path / "ws", script(tmp_path, answers),
                                 run=run, **kw))


def observations(a):
    return [o for e in a.agent.memory for o in e.observations]


def test_bad_replies_become_observations_and_the_loop_goes_on(tmp_path):
    answers = [
        "this is not JSON", "{still not json",                               # step 1 (and its re-ask)
        json.dumps({"commands": [cmd("Terminal.explode", cmd="ls")]}),       # unknown command
        json.dumps({"commands": [cmd("Editor.open_file", line_number="x")]}),  # wrong arguments
        json.dumps({"commands": [cmd("Editor.create_file", path="a.txt", content="a"),
                                 cmd("Editor.create_file", path="b.txt", content="b")]}),  # two exclusive
        json.dumps([cmd("Terminal.run_command", cmd="false"), cmd("Editor.create_file", path="c.txt")]),
        json.dumps([cmd("end")]),
    ]
    with Run(tmp_path / "res") as run:
        a = agent(tmp_path, answers, run)
        result = asyncio.run(a.run())
    obs = observations(a)
    assert result.ended_by == "end" and result.steps == 6
    assert "Your reply could not be used" in obs[0]
    assert "Unknown command 'Terminal.explode'" in obs[1]
    assert "Editor.open_file: path: Field required" in obs[2]
    assert "Rejected: Editor.create_file, Editor.create_file are exclusive" in obs[3]
    assert not (a.workspace.root / "a.txt").exists()
    assert "failed:\n[exit code 1]" in obs[4] and "Skipped after the failure: Editor.create_file." in obs[5]
    assert not (a.workspace.root / "c.txt").exists()
    tables = load(tmp_path / "res")
    assert tables.sessions.iloc[0]["ended_by"] == "end" and len(tables.tool_calls) == 3
    assert list(tables.calls["ok"])[:2] == [False, False] and tables.calls["fallback"].sum() == 1


@pytest.mark.slow
def test_eval_mode_ends_at_git_commit_without_crashing(tmp_path):
    answers = [json.dumps([cmd("Editor.create_file", path="x.txt", content="x")]),
               json.dumps([cmd("Terminal.run_command", cmd="git init -q && git add -A && git commit -qm x")])]
    with Run(tmp_path / "res") as run:
        result = asyncio.run(agent(tmp_path, answers, run, eval_mode=True).run())
    assert result.ended_by == "eval_git" and result.steps == 2
    assert load(tmp_path / "res").sessions.iloc[0]["ended_by"] == "eval_git"


def test_max_steps_and_trajectory_saved_every_step(tmp_path):
    a = agent(tmp_path, [json.dumps([cmd("Plan.append_task", task_id=str(i), instruction="t")]) for i in range(10)],
              max_steps=3)
    result = asyncio.run(a.run())
    assert result.ended_by == "max_steps" and result.steps == 3
    saved = json.loads((a.workspace.root / ".agent" / "trajectories" / f"{a.session_id}.json").read_text())
    assert saved["steps"] == 3 and len(saved["memory"]) == 3 and "[ ] 2: t" in saved["plan"]


@pytest.mark.slow
def test_repeated_actions_get_a_nudge_then_the_human_is_asked(tmp_path):
    same = json.dumps([cmd("Editor.find_file", name="*.txt")])
    channel = ScriptedChannel(["try ending"])
    a = agent(tmp_path, [same] * 5 + [json.dumps([cmd("end")])], channel=channel)
    asyncio.run(a.run())
    obs = observations(a)
    assert any("same commands three times" in o for o in obs)
    assert channel.asked and "repeated the same commands 5 times" in channel.asked[0]
    assert "Human: try ending" in obs


@pytest.mark.slow
def test_the_prompt_stays_bounded_as_the_session_grows(tmp_path):
    """60 steps that each print 20 kB: the prompt per step levels off below the role's budget."""
    steps = [json.dumps([cmd("Terminal.run_command", cmd=f"python3 -c \"print('{i}' * 20000)\"")]) for i in range(60)]
    with Run(tmp_path / "res") as run:
        asyncio.run(agent(tmp_path, steps, run, max_steps=60).run())
    calls = load(tmp_path / "res").calls.sort_values("seq")
    sizes = [sum(len(m["content"]) for m in json.loads(x)) for x in calls["messages"]]
    assert len(sizes) == 60
    assert max(sizes) < 12_000 + 8_000  # memory budget + system prompt and state
    assert max(sizes[30:]) <= max(sizes[10:20]) * 1.1  # flat, not growing with the session


def test_a_second_role_is_only_a_config_file(tmp_path):
    a = Session(SessionConfig(load_role("data_analyst"), "count lines", tmp_path / "ws", script(tmp_path,
                              [json.dumps([cmd("end")])])))
    assert set(a.tools.specs) >= {"Terminal.run_command", "Editor.open_file", "Human.ask_human"}
    assert not any(n.startswith(("Git.", "Deployer.")) for n in a.tools.specs)
    assert a.role.name == "David" and "analyse data files" in a.agent.system_values["instruction"]
    assert "Terminal.run_command(cmd" in a.agent.system_values["tools"]  # the listing (prompts/agent/tools.j2)


@pytest.mark.slow
def test_native_tool_calls_drive_the_same_loop(tmp_path, server):
    """Against an endpoint that answers with native tool calls (the loopback test server)."""
    with Run(tmp_path / "res") as run:
        a = Session(SessionConfig(load_role("engineer"), "plan something", tmp_path / "ws",
                                  f"openai:toolcall@{server.base_url}",
                    run=run, native_tools=True))
        result = asyncio.run(a.run())
    sent = server.requests[0]
    names = [t["function"]["name"] for t in sent["tools"]]
    assert "Plan__append_task" in names and "end" in names and "response_format" not in sent
    assert result.ended_by == "end" and result.steps == 2
    tools = load(tmp_path / "res").tool_calls
    assert list(tools["tool"]) == ["Plan.append_task"] and tools["ok"].all()


def test_code_review_of_the_uncommitted_diff(tmp_path):
    import subprocess

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    for git in (["git", "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"]):
        subprocess.run(git, cwd=ws, check=True)
    (ws / "a.py").write_text("x = 2\n")
    answers = [json.dumps([cmd("CodeReview.review")]),
               json.dumps({"comments": [{"line": 1, "severity": "style", "comment": "name x better"}]}),
               json.dumps([cmd("end")])]
    a = agent(tmp_path, answers)
    asyncio.run(a.run())
    obs = observations(a)
    assert "1. line 1 [style] name x better" in obs[0]
    calls = a.tools.results
    assert calls[0].ok and calls[0].tool == "CodeReview.review"
