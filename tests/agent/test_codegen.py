"""The tools that are model calls of their own — write_new_code, CodeReview.review and CodeReview.fix —
inside real sessions with scripted answers: what their prompts carry (and never carry: secret values), how
their answers reach the disk through the Editor's checks, and how a bad answer fails as one line."""

import asyncio
import json
import subprocess

import pytest
import yaml

from toolkit.agent.environments.result import apply
from toolkit.agent.loop.role import load_role
from toolkit.agent.loop.session import Session, SessionConfig
from toolkit.record.run_log import Run
from toolkit.record.load import load

SECRET = "sk-codegenSECRETvalue0123456789abcdef"


def cmd(_name, **args):
    return {"command_name": _name, "args": args}


def step(*commands):
    return json.dumps({"thought": "", "commands": list(commands)})


END = step(cmd("end"))


def run_session(tmp_path, answers, files=None, task="build the thing"):
    """Runs a scripted engineer session to its end; returns the session and its calls (in asking order)."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    for rel, text in (files or {}).items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"answers": answers}))
    with Run(tmp_path / "res") as run:
        s = Session(SessionConfig(load_role("engineer"), task, ws, f"scripted:{tmp_path / 's.yaml'}", run=run,
                    environment="local"))
        asyncio.run(s.run())
    apply(ws, s.session_id)  # as engineer --apply does: the folder is unchanged until then
    return s, load(tmp_path / "res").calls.sort_values("seq").reset_index(drop=True)


def prompt(calls, i):
    return json.loads(calls.loc[i, "messages"])[-1]["content"]


def results(s):
    return [(r.tool, r.ok, r.output) for r in s.tools.results]


# ------------------------------------------------------------------ write_new_code
@pytest.mark.slow
def test_write_new_code_writes_the_answer_and_logs_its_own_call(tmp_path):
    code = "def add(a, b):\n    return a + b\n"
    s, calls = run_session(tmp_path, [step(cmd("write_new_code", path="pkg/m.py", file_description="adds two")),
                                      json.dumps({"content": code}), END])
    assert (s.workspace.root / "pkg" / "m.py").read_text() == code
    tool, ok, output = results(s)[0]
    assert (tool, ok) == ("write_new_code", True) and output.startswith("[File: pkg/m.py (2 lines total)]")
    assert calls["action"].tolist() == ["step", "write_new_code", "step"]
    assert calls.loc[1, "replay_key"] == f"{s.session_id}/1/write_new_code"
    assert set(calls["session_id"]) == {s.session_id}
    text = prompt(calls, 1)
    assert text.startswith("Write the complete file `pkg/m.py`.") and "What it must do: adds two" in text
    assert "The overall task: build the thing" in text and "Its current text" not in text


def test_write_new_code_shows_the_current_text_and_the_plan(tmp_path):
    answers = [step(cmd("Plan.append_task", task_id="1", instruction="rewrite util")),
               step(cmd("write_new_code", path="util.py", file_description="better")),
               json.dumps({"content": "VALUE = 2\n"}), END]
    s, calls = run_session(tmp_path, answers, files={"util.py": "VALUE = 1\n"})
    text = prompt(calls, 2)
    assert "Its current text (replace it completely):\nVALUE = 1" in text and "[>] 1: rewrite util" in text
    assert "## Step 1" in text  # recent work
    assert (s.workspace.root / "util.py").read_text() == "VALUE = 2\n"
    # the Editor's backup is in the session's copy (.agent/backups there), not in the user's folder


def test_write_new_code_failures_are_one_line_and_leave_the_file_alone(tmp_path):
    answers = [step(cmd("write_new_code", path="a.py", file_description="x")), "not json", "still not json",
               step(cmd("write_new_code", path="a.py", file_description="x")), json.dumps({"content": "def (:\n"}),
               step(cmd("write_new_code", path="a.py", file_description="x")), json.dumps({"content": "  \n"}),
               step(cmd("write_new_code", path="../escape.py", file_description="x")),
               END]
    s, calls = run_session(tmp_path, answers, files={"a.py": "A = 1\n"})
    outs = results(s)
    assert [ok for _, ok, _ in outs] == [False] * 4
    assert outs[0][2].startswith("write_new_code: no usable code came back for a.py: ")
    assert "invalid Python (line 1" in outs[1][2] and "the file is unchanged" in outs[1][2]
    assert outs[2][2] == "write_new_code: refusing to empty a.py; delete it with the terminal if that is really meant"
    assert "outside the workspace" in outs[3][2]
    assert all("\n" not in o for _, _, o in outs)
    assert (s.workspace.root / "a.py").read_text() == "A = 1\n" and not (tmp_path / "escape.py").exists()
    # the escape was refused before any model call: 4 step calls + 2 + 1 + 1 code calls + the end
    assert calls["action"].tolist().count("write_new_code") == 4
    assert calls.loc[calls["action"] == "write_new_code", "fallback"].tolist() == [False, True, False, False]


@pytest.mark.slow
def test_the_code_prompt_never_carries_a_secret_value(tmp_path, server):
    """Against the loopback server, to see the request as sent (the tables mask secrets on their own)."""
    server.say(step(cmd("write_new_code", path="cfg.py", file_description="keep the key")),
               json.dumps({"content": "KEY = 'rotated'\n"}),
               step(cmd("CodeReview.review", path="cfg.py")), json.dumps({"comments": []}), END)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "cfg.py").write_text(f"KEY = '{SECRET}'\n")
    s = Session(SessionConfig(load_role("engineer"), "t", ws, f"openai:say@{server.base_url}", environment="local"))
    asyncio.run(s.run())
    apply(ws, s.session_id)
    sent = [json.dumps(body["messages"]) for body in server.requests]
    assert len(sent) == 5 and all(SECRET not in m for m in sent)
    assert "Its current text" in sent[1] and "KEY = '[redacted key]'" in sent[1]
    assert (ws / "cfg.py").read_text() == "KEY = 'rotated'\n"


# ------------------------------------------------------------------ review and fix
def test_review_numbers_the_code_and_lists_the_comments(tmp_path):
    review = {"comments": [{"line": 2, "severity": "error", "comment": "divides by zero"},
                           {"line": 1, "comment": "name it"}]}
    answers = [step(cmd("CodeReview.review", path="d.py")), json.dumps(review),
               step(cmd("CodeReview.review", path="d.py")), json.dumps({"comments": []}), END]
    s, calls = run_session(tmp_path, answers, files={"d.py": "def f(x):\n    return 1 / 0\n"})
    assert results(s) == [("CodeReview.review", True, "1. line 2 [error] divides by zero\n2. line 1 [warning] name it"),
                          ("CodeReview.review", True, "No comments on d.py.")]
    assert "   1|def f(x):\n   2|    return 1 / 0" in prompt(calls, 1)
    assert "The task it serves: build the thing" in prompt(calls, 1)


def test_review_refusals_need_no_model_call(tmp_path):
    answers = [step(cmd("CodeReview.review", path="missing.py")), step(cmd("CodeReview.review")),
               step(cmd("CodeReview.fix", path="d.py")), END]
    s, calls = run_session(tmp_path, answers, files={"d.py": "x = 1\n"})
    assert [(ok, out) for _, ok, out in results(s)] == [
        (False, "CodeReview.review: missing.py: no such file"),
        (False, "CodeReview.review: no uncommitted diff to review (or not a git repository); give a path"),
        (False, "CodeReview.fix: no review comments to apply for d.py; run CodeReview.review first")]
    assert calls["action"].tolist() == ["step"] * 4


def test_a_review_answer_with_an_unknown_severity_is_reasked(tmp_path):
    answers = [step(cmd("CodeReview.review", path="d.py")),
               json.dumps({"comments": [{"line": 1, "severity": "critical", "comment": "x"}]}),
               json.dumps({"comments": [{"line": 1, "severity": "error", "comment": "x"}]}), END]
    s, calls = run_session(tmp_path, answers, files={"d.py": "x = 1\n"})
    assert results(s) == [("CodeReview.review", True, "1. line 1 [error] x")]
    review_calls = calls[calls["action"] == "review"]
    assert review_calls["ok"].tolist() == [False, True] and "severity" in review_calls.iloc[0]["error"]


def test_fix_applies_the_last_review_of_that_file(tmp_path):
    review = {"comments": [{"line": 2, "severity": "error", "comment": "return x"}]}
    answers = [step(cmd("CodeReview.review", path="d.py")), json.dumps(review),
               step(cmd("CodeReview.fix", path="d.py")), json.dumps({"content": "def f(x):\n    return x\n"}),
               step(cmd("CodeReview.review", path="d.py")), json.dumps({"comments": []}),
               step(cmd("CodeReview.fix", path="d.py")), END]
    s, calls = run_session(tmp_path, answers, files={"d.py": "def f(x):\n    return 0\n"})
    assert (s.workspace.root / "d.py").read_text() == "def f(x):\n    return x\n"
    fix_prompt = prompt(calls, 3)
    assert "Apply these review comments to `d.py`" in fix_prompt and "- line 2 [error] return x" in fix_prompt
    assert "Current text:\ndef f(x):\n    return 0" in fix_prompt
    outs = results(s)
    assert [(t, ok) for t, ok, _ in outs] == [("CodeReview.review", True), ("CodeReview.fix", True),
                                             ("CodeReview.review", True), ("CodeReview.fix", False)]
    assert outs[-1][2].startswith("CodeReview.fix: no review comments to apply for d.py")


def test_a_fix_that_breaks_python_is_not_applied(tmp_path):
    review = {"comments": [{"line": 1, "severity": "style", "comment": "spacing"}]}
    answers = [step(cmd("CodeReview.review", path="d.py")), json.dumps(review),
               step(cmd("CodeReview.fix", path="d.py")), json.dumps({"content": "x = = 1\n"}), END]
    s, _ = run_session(tmp_path, answers, files={"d.py": "x=1\n"})
    assert (s.workspace.root / "d.py").read_text() == "x=1\n"
    assert results(s)[-1][1] is False and "invalid Python" in results(s)[-1][2]


@pytest.mark.slow
def test_review_of_the_uncommitted_diff_masks_secrets_in_the_request(tmp_path, server):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "conf.txt").write_text("token = none\n")
    for argv in (["git", "init", "-q"], ["git", "add", "-A"],
                 ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"]):
        subprocess.run(argv, cwd=ws, check=True, capture_output=True)
    (ws / "conf.txt").write_text(f"token = {SECRET}\n")
    server.say(step(cmd("CodeReview.review")), json.dumps({"comments": [{"line": 1, "comment": "a key!"}]}), END)
    s = Session(SessionConfig(load_role("engineer"), "t", ws, f"openai:say@{server.base_url}", environment="local"))
    asyncio.run(s.run())
    review_prompt = json.dumps(server.requests[1]["messages"])
    assert "Review `the uncommitted diff`" in review_prompt and "+token = [redacted key]" in review_prompt
    assert SECRET not in review_prompt
    assert [(r.tool, r.ok, r.output) for r in s.tools.results] == [("CodeReview.review", True,
                                                                    "1. line 1 [warning] a key!")]
