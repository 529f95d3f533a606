"""The notebook widgets, driven directly: set values, click buttons, read the transcript and tables."""

import asyncio
import json


from toolkit.report import write_report
from toolkit.results import load
from toolkit.ui import EngineerSession, ResultsExplorer, WerewolfSession


def write_report_text(folder):
    import tempfile
    with tempfile.TemporaryDirectory() as out:
        return next(p.read_text() for p in write_report(folder, out) if p.suffix == ".md")


async def wait_for(predicate, timeout=30):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise TimeoutError
        await asyncio.sleep(0.01)


async def test_step_run_and_god_view(tmp_path):
    s = WerewolfSession(results_dir=str(tmp_path), seed=3)
    s.buttons["Start"].click()
    assert "Night 1 falls" in s.transcript.value
    before = len(s.transcript_lines())
    s.buttons["Step"].click()
    await s.task
    assert len(s.transcript_lines()) >= before  # night actions are private: hidden until god view
    s.god_view.value = True
    assert "private to" in s.transcript.value and "(Werewolf)" in s.transcript.value
    s.buttons["Run to end"].click()
    await s.task
    assert "winner:" in s.status.value and s.runner.game.over
    tables = load(tmp_path, complete_games=True)
    assert len(tables.games) == 1 and tables.games.iloc[0]["winner"] in ("village", "werewolves", "draw")
    # the call inspector shows any call: messages, raw answer, parsed result, tokens, latency, fallback
    s.call_picker.value = 0
    assert "messages" in s.call_view.value and "raw answer" in s.call_view.value and "tokens" in s.call_view.value


async def test_a_human_seat_plays_a_whole_game_through_the_widgets(tmp_path):
    s = WerewolfSession(results_dir=str(tmp_path), seed=5)
    s.seat_models["Player2"].value = "human"
    s.buttons["Start"].click()
    s.buttons["Run to end"].click()
    answered = 0
    while not s.task.done():
        await asyncio.sleep(0.005)
        if s.waiting_for_human:
            field = s.human_field
            if hasattr(field, "options"):
                assert "Player2" not in field.options or s.runner.game.phase == "night"  # legal choices only
                field.value = field.options[0]
            else:
                field.value = f"I am Player2, turn {answered}."
            s.human_submit.click()
            answered += 1
    await s.task
    assert s.runner.game.over and answered >= 2
    tables = load(tmp_path, complete_games=True)
    human_calls = tables.calls[tables.calls["seat"] == "Player2"]
    assert len(human_calls) == answered and (human_calls["model"] == "human").all()
    assert tables.players.set_index("seat").loc["Player2", "spec"] == "human"
    speeches = [e.text for e in s.events if e.kind == "speech" and e.actor == "Player2"]
    assert speeches and all(t.startswith("I am Player2, turn") for t in speeches)


async def test_stop_halts_within_one_phase_and_tables_stay_consistent(tmp_path):
    s = WerewolfSession(results_dir=str(tmp_path), seed=7)
    s.buttons["Start"].click()
    s.buttons["Run to end"].click()
    await wait_for(lambda: len(s.calls) >= 10)
    s.buttons["Stop"].click()
    calls_at_stop = len(s.calls)
    await asyncio.wait_for(s.task, 10)
    assert not s.runner.game.over
    assert len(s.calls) - calls_at_stop <= 9  # at most the phase in progress (7 votes, or a speech)
    s.run.close()
    tables = load(tmp_path, complete_games=False)  # the stopped game has no games row
    assert len(tables.calls) == len(s.calls) and tables.calls["ok"].all()
    assert list(tables.events["seq"]) == list(range(len(tables.events)))  # every event, in order, once
    assert len(load(tmp_path, complete_games=True).games) == 0  # an unfinished game is not counted


async def test_engineer_session_with_ask_human(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text(json.dumps({"answers": [
        json.dumps([{"command_name": "Human.ask_human", "args": {"question": "File name?"}}]),
        json.dumps([{"command_name": "Editor.create_file", "args": {"path": "notes.txt", "content": "hi"}}]),
        json.dumps([{"command_name": "end", "args": {}}])]}))
    e = EngineerSession(task="write notes", workspace=str(tmp_path / "ws"), model=f"scripted:{script}",
                        results_dir=str(tmp_path / "res"))
    e.buttons["Run"].click()
    await wait_for(lambda: e.channel.future is not None)
    e.channel.field.value = "notes.txt"
    e.channel.button.click()
    await e.task
    assert e.ended_by == "end" and (tmp_path / "ws" / "notes.txt").read_text() == "hi"
    assert "Human.ask_human" in e.tool_table.value and "Human: notes.txt" in e.tool_table.value
    assert "notes.txt" in e.open_file.value
    # the widget runs the same Session as the CLI: the sessions row is written and the run closed
    assert e.run.closed
    tables = load(tmp_path / "res")
    assert list(tables.sessions["ended_by"]) == ["end"] and tables.sessions.iloc[0]["steps"] == 3
    assert len(tables.tool_calls) == 2 and len(tables.calls) == 3


async def test_engineer_stop_ends_the_session_and_writes_its_row(tmp_path):
    script = tmp_path / "s.yaml"
    step = json.dumps([{"command_name": "Plan.append_task", "args": {"task_id": "1", "instruction": "x"}}])
    script.write_text(json.dumps({"answers": [step] * 50}))
    e = EngineerSession(task="loop", workspace=str(tmp_path / "ws"), model=f"scripted:{script}",
                        results_dir=str(tmp_path / "res"))
    await e.step()
    assert e.session.steps == 1 and e.ended_by is None and not e.run.closed
    e.stop()
    await e.task
    assert e.ended_by == "stopped" and e.run.closed
    assert list(load(tmp_path / "res").sessions["ended_by"]) == ["stopped"]


async def test_a_widget_game_and_a_cli_game_with_the_same_seed_have_identical_events(tmp_path):
    from toolkit.cli import main

    s = WerewolfSession(results_dir=str(tmp_path / "widget"), seed=11, model="random")
    s.buttons["Start"].click()
    while not s.runner.finished:
        s.buttons["Step"].click()
        await s.task
    argv = ["play", "--seed", "11", "--model", "random", "--out", str(tmp_path / "cli"), "--quiet"]
    assert await asyncio.to_thread(main, argv) == 0  # the CLI runs its own event loop
    columns = ["seq", "day", "phase", "kind", "actor", "target", "text", "visibility", "fallback"]
    widget, cli = load(tmp_path / "widget").events[columns], load(tmp_path / "cli").events[columns]
    assert len(widget) > 20 and widget.equals(cli)


def test_results_explorer_shows_tables_and_plots(tmp_path):
    import asyncio as aio

    from toolkit.record import Run
    from toolkit.werewolf.game import GameConfig, play_games

    with Run(tmp_path, "x") as run:
        aio.run(play_games([GameConfig(seed=s) for s in range(5)], run))
    r = ResultsExplorer(str(tmp_path))
    r.load_button.click()
    assert "5 games" in r.summary.value and "village" in r.markdown and "Win rates" in r.markdown
    assert r.images.children and all(i.value[:4] == b"\x89PNG" for i in r.images.children)
    assert r.markdown == (write_report_text(tmp_path))  # the same report `toolkit report` writes
    r.folder.value = str(tmp_path / "missing")
    r.load_button.click()
    assert "no folder" in r.summary.value
