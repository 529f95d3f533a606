"""Clicks that arrive on another thread (ipykernel 7 handles comm messages on a subshell thread with an
event loop of its own) run on the loop the widget was made on. The browser test shows the effect in
JupyterLab; these tests pin the cause: where the callback runs."""

import asyncio
import threading

from toolkit.ui import EngineerSession, WerewolfSession
from toolkit.ui.kernel_loop import KernelLoop


def from_a_subshell(fn):
    """Run ``fn`` the way ipykernel 7 runs a comm handler: in another thread, inside that thread's own loop."""
    async def inside():
        fn()
    thread = threading.Thread(target=lambda: asyncio.run(inside()))
    thread.start()
    thread.join()


async def test_a_callback_from_another_thread_runs_on_the_widget_loop():
    kernel, ran_on = KernelLoop(), []
    done = asyncio.get_running_loop().create_future()
    from_a_subshell(lambda: kernel.call(lambda: (ran_on.append(threading.current_thread()), done.set_result(1))))
    assert ran_on == []  # not run on the clicking thread
    assert await done == 1 and ran_on == [threading.main_thread()]
    here = []
    kernel.call(lambda: here.append(threading.current_thread()))  # on the loop's own thread: at once
    assert here == [threading.main_thread()]


async def test_resolve_is_once_and_on_the_future_loop():
    kernel = KernelLoop()
    future = asyncio.get_running_loop().create_future()
    from_a_subshell(lambda: kernel.resolve(future, "first"))
    from_a_subshell(lambda: kernel.resolve(future, "second"))
    assert await future == "first"


async def test_a_human_seat_answered_from_a_subshell_thread_resumes_the_game(tmp_path):
    s = WerewolfSession(results_dir=str(tmp_path), seed=5)
    s.seat_models["Player1"].value = "human"
    s.buttons["Start"].click()
    s.buttons["Step"].click()  # the night: Player1 is asked
    while not s.waiting_for_human:
        await asyncio.sleep(0.005)
    assert "your turn" in s.status.value
    question = s._pending_human
    from_a_subshell(s.human_submit.click)
    assert not question.done()  # the clicking thread left the answer to the game's loop (it does not wake a loop)
    assert await question is not None  # woken without any other cell or click
    await s.task
    assert not s.waiting_for_human and s.runner.game.phase != "night"
    human = [c for c in s.calls if c["seat"] == "Player1"]
    assert len(human) == 1 and human[0]["model"] == "human"


async def test_stop_from_a_subshell_says_stopped(tmp_path):
    s = WerewolfSession(results_dir=str(tmp_path), seed=7)
    s.buttons["Start"].click()
    s.buttons["Run to end"].click()
    while len(s.calls) < 5:
        await asyncio.sleep(0.005)
    assert "running" in s.status.value
    from_a_subshell(s.buttons["Stop"].click)
    await s.task
    assert not s.runner.finished and s.stopped and "<b>stopped</b>" in s.status.value
    s.buttons["Step"].click()  # going on clears it
    assert "stopped" not in s.status.value
    await s.task
    s.reset()


async def test_the_engineer_answer_from_a_subshell_thread_resumes_the_session(tmp_path):
    import json

    script = tmp_path / "s.yaml"
    script.write_text(json.dumps({"answers": [
        json.dumps([{"command_name": "Human.ask_human", "args": {"question": "Which name?"}}]),
        json.dumps([{"command_name": "end", "args": {}}])]}))
    e = EngineerSession(task="t", workspace=str(tmp_path / "ws"), model=f"scripted:{script}",
                        results_dir=str(tmp_path / "res"))
    from_a_subshell(e.buttons["Run"].click)
    while not e.channel.waiting:
        await asyncio.sleep(0.005)
    assert "the agent asks you" in e.status.value
    e.channel.field.value = "notes.txt"
    from_a_subshell(e.channel.button.click)
    assert not e.channel.future.done()  # resolved on the session's loop, not on the clicking thread
    await e.task
    assert e.ended_by == "end" and "Human: notes.txt" in e.tool_table.value and "ended by <b>end</b>" in e.status.value
