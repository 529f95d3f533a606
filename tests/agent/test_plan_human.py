"""The Plan tool (its status text, its rules, and that done tasks always form a prefix) and the human
channel (ask/reply through a script, through stdin, and as tools the loop dispatches)."""

import asyncio
import io
import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.agent.tools.human import Human, ScriptedChannel, StdinChannel
from toolkit.agent.loop.plan import Plan
from toolkit.agent.loop.role import load_role
from toolkit.agent.loop.session import Session, SessionConfig
from toolkit.agent.tools.base import Toolbox, ToolError


def plan_with(*ids):
    plan = Plan()
    for task_id in ids:
        plan.append_task(task_id, f"do {task_id}")
    return plan


# ------------------------------------------------------------------ the plan
def test_status_marks_done_current_and_later():
    assert Plan().status() == "No plan yet. For a multi-step task, start with Plan.append_task."
    plan = plan_with("1", "2", "3")
    assert plan.status() == "[>] 1: do 1\n[ ] 2: do 2\n[ ] 3: do 3"
    assert plan.finish_current_task() == "[x] 1: do 1\n[>] 2: do 2\n[ ] 3: do 3"
    plan.finish_current_task()
    assert plan.finish_current_task() == "[x] 1: do 1\n[x] 2: do 2\n[x] 3: do 3"
    assert plan.current is None
    with pytest.raises(ToolError, match="there is no unfinished task"):
        plan.finish_current_task()


def test_append_refuses_duplicates_and_unknown_dependencies_and_changes_nothing():
    plan = plan_with("a")
    with pytest.raises(ToolError, match="task a exists; use replace_task"):
        plan.append_task("a", "again")
    with pytest.raises(ToolError, match=r"unknown dependencies \['x', 'y'\]"):
        plan.append_task("b", "needs", ["a", "x", "y"])
    assert [(t.task_id, t.instruction) for t in plan.tasks] == [("a", "do a")]
    plan.append_task("b", "needs a", ["a"])
    assert plan.tasks[1].dependent_task_ids == ["a"]


def test_replace_and_reset_reopen_the_task_and_everything_after_it():
    plan = plan_with("1", "2", "3", "4")
    for _ in range(4):
        plan.finish_current_task()
    assert plan.replace_task("3", "redo three") == "[x] 1: do 1\n[x] 2: do 2\n[>] 3: redo three\n[ ] 4: do 4"
    plan.finish_current_task()
    plan.finish_current_task()
    assert plan.reset_task("2") == "[x] 1: do 1\n[>] 2: do 2\n[ ] 3: redo three\n[ ] 4: do 4"
    with pytest.raises(ToolError, match=r"no task 9; tasks are \['1', '2', '3', '4'\]"):
        plan.reset_task("9")
    with pytest.raises(ToolError, match="no task 9"):
        plan.replace_task("9", "x")


OPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.sampled_from("abcdef")),
    st.tuples(st.just("finish"), st.none()),
    st.tuples(st.just("replace"), st.sampled_from("abcdef")),
    st.tuples(st.just("reset"), st.sampled_from("abcdef")),
), max_size=25)


@given(ops=OPS)
@settings(derandomize=True, database=None, deadline=None, max_examples=150)
def test_the_plan_matches_a_list_model_and_done_tasks_are_a_prefix(ops):
    """A reference model (a list of [id, done]) run beside the Plan: same tasks, same flags, same errors,
    the current task is the first undone one and the done flags are always True…True False…False."""
    plan, model = Plan(), []
    for op, arg in ops:
        ids = [t for t, _ in model]
        expect_error = {"append": arg in ids, "finish": all(d for _, d in model),
                        "replace": arg not in ids, "reset": arg not in ids}[op]
        try:
            if op == "append":
                plan.append_task(arg, f"task {arg}")
            elif op == "finish":
                plan.finish_current_task()
            elif op == "replace":
                plan.replace_task(arg, f"new {arg}")
            else:
                plan.reset_task(arg)
        except ToolError:
            assert expect_error, (op, arg)
            continue
        assert not expect_error, (op, arg)
        if op == "append":
            model.append([arg, False])
        elif op == "finish":
            next(m for m in model if not m[1])[1] = True
        else:
            for m in model[ids.index(arg):]:
                m[1] = False
        flags = [t.done for t in plan.tasks]
        assert [[t.task_id, t.done] for t in plan.tasks] == model
        assert flags == sorted(flags, reverse=True)  # a prefix of done tasks
        assert plan.current is next((t for t in plan.tasks if not t.done), None)
        assert plan.status().count("[>]") == (plan.current is not None)


def test_plan_tools_through_the_toolbox_validate_the_list_argument():
    plan = Plan()
    box = Toolbox().add(plan)
    assert set(box.specs) == {"Plan.append_task", "Plan.replace_task", "Plan.reset_task", "Plan.finish_current_task"}
    ok = asyncio.run(box.call("Plan.append_task", {"task_id": "1", "instruction": "first"}))
    assert ok.ok and ok.output == "[>] 1: first"
    bad = asyncio.run(box.call("Plan.append_task", {"task_id": "2", "instruction": "x", "dependent_task_ids": "1"}))
    assert not bad.ok and "dependent_task_ids: Input should be a valid list" in bad.output
    dup = asyncio.run(box.call("Plan.append_task", {"task_id": "1", "instruction": "again"}))
    assert (dup.ok, dup.output) == (False, "Plan.append_task: task 1 exists; use replace_task")
    assert [t.task_id for t in plan.tasks] == ["1"]
    schema = box.specs["Plan.append_task"].schema()["parameters"]
    assert schema["required"] == ["task_id", "instruction"]
    assert schema["properties"]["dependent_task_ids"]["description"] == "ids of tasks that must be done first."


# ------------------------------------------------------------------ the human
def test_scripted_channel_answers_in_order_then_says_no_answer():
    channel = ScriptedChannel(["yes", "blue"])
    human = Human(channel)
    answers = [asyncio.run(human.ask_human(q)) for q in ("ok?", "colour?", "more?")]
    assert answers == ["Human: yes", "Human: blue", "Human: (no answer)"]
    assert channel.asked == ["ok?", "colour?", "more?"]
    assert asyncio.run(human.reply_to_human("done: 3 files")) == "Sent." and channel.told == ["done: 3 files"]


def test_the_scripted_channel_does_not_consume_the_callers_list():
    answers = ["a"]
    channel = ScriptedChannel(answers)
    asyncio.run(channel.ask("q"))
    assert answers == ["a"] and channel.answers == []


def test_stdin_channel_reads_one_stripped_line_and_prints_to_stderr(monkeypatch, capsys):
    """stdin replaced by a text buffer: the one part of a terminal a test cannot drive."""
    monkeypatch.setattr("sys.stdin", io.StringIO("  use the second file  \nnext line\n"))
    channel = StdinChannel()
    assert asyncio.run(channel.ask("which file?")) == "use the second file"
    asyncio.run(channel.tell("finished"))
    err = capsys.readouterr().err
    assert "[agent asks] which file?" in err and "[agent says] finished" in err


def test_human_tools_inside_a_session(tmp_path):
    answers = [json.dumps([{"command_name": "Human.ask_human", "args": {"question": "Which port?"}},
                           {"command_name": "Human.reply_to_human", "args": {"content": "using 8080"}}]),
               json.dumps([{"command_name": "end"}])]
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"answers": answers}))
    channel = ScriptedChannel(["8080"])
    session = Session(SessionConfig(load_role("engineer"), "t", tmp_path / "ws", f"scripted:{tmp_path / 's.yaml'}",
                      channel=channel, environment="local"))
    result = asyncio.run(session.run())
    assert result.ended_by == "end" and channel.asked == ["Which port?"] and channel.told == ["using 8080"]
    assert session.agent.memory[0].observations == ["Command Human.ask_human executed:\nHuman: 8080",
                                                   "Command Human.reply_to_human executed:\nSent."]
    assert [(r.tool, r.ok, r.step) for r in result.tool_calls] == [("Human.ask_human", True, 1),
                                                                   ("Human.reply_to_human", True, 1)]
