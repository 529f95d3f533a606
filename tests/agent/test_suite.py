"""The offline engineer suite: correct trajectories succeed, wrong ones fail cleanly, and tool usage can
be counted from the tables."""

import asyncio

import pytest

from toolkit.agent.suite import load_tasks, run_suite
from toolkit.record.run_log import Run
from toolkit.record.load import load

pytestmark = pytest.mark.slow  # its module fixture runs the engineer suite

ALL_TOOLS = {"Terminal.run_command", "Editor.open_file", "Editor.search_file", "Editor.search_dir",
             "Editor.find_file", "Editor.create_file", "Editor.write_file", "Editor.edit_file_by_replace",
             "Editor.insert_content_at_line", "Editor.append_file", "write_new_code", "CodeReview.review",
             "CodeReview.fix", "Git.status", "Git.diff", "Git.create_pull", "Git.log", "Deployer.deploy_to_public",
             "ImageGetter.get_image", "Plan.append_task", "Plan.finish_current_task", "Human.ask_human",
             "Human.reply_to_human"}


@pytest.fixture(scope="module")
def suite_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("suite")
    out = {}
    for kind in ("good", "bad"):
        with Run(root / kind, f"suite-{kind}") as run:
            out[kind] = asyncio.run(run_suite(f"scripted:{{task}}/{kind}.yaml", run, root / kind / "ws"))
    return root, out


def test_there_are_at_least_eight_tasks():
    assert len(load_tasks()) >= 8


def test_correct_trajectories_succeed_through_every_tool(suite_runs):
    root, out = suite_runs
    assert {name: r.success for name, r in out["good"].items()} == {t.name: True for t in load_tasks()}
    tables = load(root / "good")
    assert set(tables.tool_calls["tool"]) >= ALL_TOOLS
    assert tables.tool_calls["ok"].all()
    assert dict(tables.sessions.set_index("task")["ended_by"].value_counts()) == {"end": len(out["good"]) - 1,
                                                                                  "eval_git": 1}


def test_wrong_trajectories_fail_cleanly(suite_runs):
    _, out = suite_runs
    assert all(r.success is False for r in out["bad"].values())
    assert all(r.ended_by in ("end", "eval_git") for r in out["bad"].values())


def test_tool_usage_per_tool_from_the_tables(suite_runs):
    root, _ = suite_runs
    tables = load(root)
    usage = tables.tool_calls.merge(tables.sessions[["session_id", "success"]], on="session_id")
    per_tool = usage.groupby("tool").agg(calls=("ok", "size"), errors=("ok", lambda s: int((~s.astype(bool)).sum())))
    assert per_tool.loc["Terminal.run_command", "calls"] >= 8
    assert per_tool.loc["CodeReview.fix", "errors"] == 1  # the bad trajectory's fix without review comments
    assert set(tables.sessions["success"]) == {True, False} and len(tables.sessions) == 2 * len(load_tasks())
