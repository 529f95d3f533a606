"""The agent's memory as the model reads it: the exact text of a step, which observations are elided
(old and long, unless one of the last editor views) and how many characters, and the budget that drops the
oldest steps (a contiguous suffix survives, no more is dropped than needed, the prompt says how many)."""

import asyncio
import json
import re

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.agent.loop.memory import ELIDE_AFTER, Entry, Memory
from toolkit.agent.loop.role import load_role
from toolkit.agent.loop.session import Session, SessionConfig
from toolkit.record.run_log import Run
from toolkit.record.load import load

HEAD = ELIDE_AFTER // 2


def memory_of(*observation_lengths, budget=10**9, views=()):
    """Steps 1..n, each with one observation of the given length (a letter per step, so heads are telling)."""
    memory = Memory(budget)
    for i, n in enumerate(observation_lengths, 1):
        memory.add(Entry(i, f"thought {i}", [], [chr(ord("a") + i - 1) * n], editor_view=i in views))
    return memory


def test_an_empty_memory_renders_nothing_and_the_container_protocol():
    memory = Memory(100)
    assert memory.render() == "" and len(memory) == 0 and list(memory) == []
    entry = memory.add(Entry(1, "t", []))
    assert memory[0] is entry and memory[-1] is entry and len(memory) == 1


def test_the_exact_text_of_a_step():
    memory = Memory(10_000)
    memory.add(Entry(7, "look around", [{"command_name": "Editor.find_file", "args": {"name": "é*.py"}}],
                     ["Command Editor.find_file executed:\n0 files match 'é*.py'", "second"]))
    assert memory.render() == ("## Step 7\nThought: look around\n"
                               'Commands: [{"command_name": "Editor.find_file", "args": {"name": "é*.py"}}]\n'
                               "Command Editor.find_file executed:\n0 files match 'é*.py'\nsecond")


def test_old_long_observations_keep_their_head_and_say_how_much_is_gone():
    memory = memory_of(500, ELIDE_AFTER, ELIDE_AFTER + 1, 5000, 5000, 5000)
    text = memory.render()
    assert "a" * HEAD + "\n[… 300 characters elided …]" in text and "a" * (HEAD + 1) not in text
    assert "b" * ELIDE_AFTER in text  # exactly at the limit: kept whole
    assert "c" * HEAD + "\n[… 201 characters elided …]" in text
    for letter in "def":  # the three most recent steps: verbatim, however long
        assert letter * 5000 in text
    assert text.count("characters elided") == 2


def test_the_last_editor_views_are_kept_verbatim_even_when_old():
    memory = memory_of(1000, 1000, 1000, 1000, 10, 10, 10, views=(1, 2, 3))
    text = memory.render()
    assert "a" * 1000 not in text and "a" * HEAD + "\n[… 800 characters elided …]" in text
    assert "b" * 1000 in text and "c" * 1000 in text  # the last two views
    assert "d" * 1000 not in text  # old and not a view


def test_the_budget_drops_the_oldest_steps_and_says_how_many():
    memory = memory_of(300, 300, 300, 300, budget=800)
    text = memory.render()
    assert text.startswith("(2 earlier steps omitted)\n")
    assert [int(n) for n in re.findall(r"^## Step (\d+)$", text, re.M)] == [3, 4]


def block_lengths(memory):
    """The length of each step's block, read from the rendering with no budget (blocks do not depend on it)."""
    unbounded = Memory(10**12)
    unbounded.entries = memory.entries
    return [len(b) for b in re.split(r"\n\n(?=## Step \d+\n)", unbounded.render())]


@given(lengths=st.lists(st.integers(0, 1500), min_size=1, max_size=12),
       views=st.sets(st.integers(1, 12), max_size=4),
       budget=st.integers(0, 6000))
@settings(derandomize=True, database=None, deadline=None, max_examples=120)
def test_what_survives_the_budget(lengths, views, budget):
    memory = memory_of(*lengths, budget=budget, views=views)
    blocks = block_lengths(memory)
    assert len(blocks) == len(lengths)
    text = memory.render()
    shown = [int(n) for n in re.findall(r"^## Step (\d+)$", text, re.M)]
    dropped = len(lengths) - len(shown)
    # a contiguous run of the most recent steps, the newest always among them
    assert shown == list(range(dropped + 1, len(lengths) + 1)) and shown[-1] == len(lengths)
    assert text.startswith(f"({dropped} earlier steps omitted)") == (dropped > 0)
    kept = sum(blocks[dropped:])
    assert kept <= budget or len(shown) == 1  # over budget only when the newest step alone is
    if dropped:
        assert kept + blocks[dropped - 1] > budget  # no step was dropped that would have fitted
    if blocks[-1] > max(budget, 400):  # the newest step, alone over budget, is shortened and says so
        assert "characters elided …]" in text.split(f"## Step {len(lengths)}")[1]


def test_the_newest_step_is_never_dropped_whole():
    memory = memory_of(100, 20_000, budget=12_000)
    assert "## Step 2" in memory.render()


def test_a_session_prompt_carries_the_memory_of_earlier_steps(tmp_path):
    answers = [json.dumps([{"command_name": "Editor.create_file", "args": {"path": "n.txt", "content": "hello"}}]),
               json.dumps([{"command_name": "Terminal.run_command", "args": {"cmd": "wc -c n.txt"}}]),
               json.dumps([{"command_name": "end"}])]
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"answers": answers}))
    with Run(tmp_path / "res") as run:
        s = Session(SessionConfig(load_role("engineer"), "t", tmp_path / "ws", f"scripted:{tmp_path / 's.yaml'}",
                                  run=run,
                    environment="local"))
        asyncio.run(s.run())
    assert [e.editor_view for e in s.agent.memory] == [True, False, False]
    prompts = [json.loads(m)[-1]["content"] for m in load(tmp_path / "res").calls.sort_values("seq")["messages"]]
    assert "## Step" not in prompts[0]
    assert "## Step 1" in prompts[1] and "   1|hello" in prompts[1] and "## Step 2" not in prompts[1]
    assert "## Step 2" in prompts[2] and "5 n.txt\n[exit code 0]" in prompts[2]
