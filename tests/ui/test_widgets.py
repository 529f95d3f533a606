"""The notebook widgets, driven directly: set values, click buttons, read the transcript and tables."""

import asyncio
import base64
import html
import json
import os
import re
import threading
import time


import pandas as pd
import pytest
from toolkit.analysis.report import write_report
from toolkit.export import html as html_export
from toolkit.record.load import load
from toolkit.ui import EngineerSession, ResultsExplorer, WerewolfSession
from toolkit.ui.engineer import WidgetChannel


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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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
    assert e.ended_by == "end" and not (tmp_path / "ws" / "notes.txt").exists()  # until applied
    e.buttons["Apply"].click()
    assert (tmp_path / "ws" / "notes.txt").read_text() == "hi" and "unpacked 1 new or changed entries" in e.status.value
    assert "Human.ask_human" in e.tool_table.value and "Human: notes.txt" in e.tool_table.value
    assert "notes.txt" in e.open_file.value
    # the widget runs the same Session as the CLI: the sessions row is written and the run closed
    assert e.run.closed
    tables = load(tmp_path / "res")
    assert list(tables.sessions["ended_by"]) == ["end"] and tables.sessions.iloc[0]["steps"] == 3
    assert len(tables.tool_calls) == 2 and len(tables.calls) == 3


@pytest.mark.slow
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


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:  # gone since listed
        return b""


@pytest.mark.slow
async def test_a_cancelled_engineer_widget_task_keeps_the_trajectory_and_the_sessions_row(tmp_path):
    """Cancelling the widget's task (the user stops the cell) mid-step leaves what ``Session.run``'s Ctrl-C
    leaves: a ``sessions`` row ``ended_by`` interrupted with success unknown, the trajectory ending with the
    interruption, the run closed and the shell gone (before, no row and an open run)."""
    e = EngineerSession(task="t", workspace=str(tmp_path / "ws"), results_dir=str(tmp_path / "res"),
                        model=script(tmp_path, {"command_name": "Plan.append_task",
                                                "args": {"task_id": "1", "instruction": "x"}},
                                     {"command_name": "Terminal.run_command", "args": {"cmd": "sleep 61.7"}}),
                        environment="local")
    task = e.run_all()
    await wait_for(lambda: e.session.steps == 2)
    await asyncio.sleep(0.5)  # in the sleep
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert e.ended_by == "interrupted" and e.run.closed and e.session.result.success is None
    assert not any(b"sleep\x0061.7" in cmdline(pid) for pid in os.listdir("/proc") if pid.isdigit())
    row = load(tmp_path / "res").sessions.iloc[0]
    assert (row["ended_by"], row["steps"]) == ("interrupted", 2) and pd.isna(row["success"])
    memory = json.loads((e.session.workspace.root / ".agent" / "trajectories" / f"{e.session.session_id}.json")
                        .read_text())["memory"]
    assert memory[-1]["observations"][0].startswith("interrupted (CancelledError) during step 2")


@pytest.mark.slow
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


@pytest.mark.slow
def test_results_explorer_shows_tables_and_plots(tmp_path):
    import asyncio as aio

    from toolkit.record.run_log import Run
    from toolkit.werewolf.game import GameConfig, play_games

    with Run(tmp_path, "x") as run:
        aio.run(play_games([GameConfig(seed=s) for s in range(5)], run))
    r = ResultsExplorer(str(tmp_path))
    r.load_button.click()  # Load reads in a thread (the kernel stays responsive)
    r.thread.join(120)
    assert "5 games" in r.summary.value and "village" in r.markdown and "Win rates" in r.markdown
    assert "loaded in" in r.progress.value and not r.load_button.disabled
    # the summary shows first; every other section is listed, computed only when opened
    assert "## Votes" not in r.markdown and "Degenerate play" not in r.markdown
    titles = r.sections.titles
    assert len(titles) == len(r.sections.children) >= 6 and all(t.endswith("(computed when opened)") for t in titles)
    assert not any(o.outputs for o in r.sections.children)
    r.sections.selected_index = 0  # opened in the accordion: computed in a thread, then shown
    deadline = time.monotonic() + 60
    while "## Votes" not in r.markdown and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "## Votes" in r.markdown and r.sections.titles[0].startswith("Votes against")
    assert "computed when opened" not in r.sections.titles[0] and r.sections.children[0].outputs
    r.open_all()
    assert r.markdown == write_report_text(tmp_path)  # every section opened: the report `toolkit report` writes
    assert r.images and all(data[:4] == b"\x89PNG" for data in r.images.values())
    # each plot is embedded where the report links it, none is left as a link to a file the notebook lacks
    shown = "\n".join(o["data"].get("text/markdown", "") for out in (r.report, *r.sections.children)
                      for o in out.outputs)
    assert "](win_rates.png)" in r.markdown and "](win_rates.png)" not in shown
    assert shown.count("](data:image/png;base64,") == r.markdown.count(".png)") == len(r.images)
    # pick a game: its replay shows inline, with a link that saves the same page `toolkit view` writes
    games = load(tmp_path).games
    assert r.pick.options == tuple(games["game_id"]) and not r.view_button.disabled
    gid = games["game_id"].iloc[2]
    r.pick.value = gid
    r.view_button.click()
    link, inline = (o["data"]["text/html"] for o in r.replay.outputs)
    page = html_export.game_page(load(tmp_path), gid)
    href = re.search(r'href="data:text/html;charset=utf-8;base64,([^"]+)"', link).group(1)
    assert base64.b64decode(href).decode() == page and f'download="{gid}.html"' in link
    assert inline.startswith('<iframe class="toolkit-replay"') and html.unescape(
        re.search(r'srcdoc="([^"]*)"', inline).group(1)) == page and 'id="votes-day-1"' in page
    assert r.view("g999-nope") is None and "no game or session" in r.replay.outputs[0]["data"]["text/html"]
    # a mistyped folder: one line, and the report shown stays (it was wiped)
    before = r.report.outputs
    r.folder.value = str(tmp_path / "missing")
    r.load()
    assert r.progress.value.count("no folder") == 1 and f"still showing {tmp_path}" in r.progress.value
    assert r.report.outputs == before and r.pick.options == tuple(games["game_id"])


@pytest.mark.slow
def test_the_explorer_shows_a_report_it_made_before_at_once_and_finds_relative_folders(tmp_path, monkeypatch):
    import asyncio as aio
    import time

    from toolkit.record.run_log import Run
    from toolkit.ui import results
    from toolkit.werewolf.game import GameConfig, play_games

    study = tmp_path / "notebooks" / "study"
    with Run(study, "x") as run:
        aio.run(play_games([GameConfig(seed=s) for s in range(4)], run))
    monkeypatch.chdir(tmp_path / "notebooks")  # a notebook's kernel runs in the notebook's folder
    r = ResultsExplorer("study")
    r.load()
    assert "computed" in r.progress.value and "study: from the notebook's folder" in r.progress.value
    first = r.markdown
    computed = write_report_text(study)
    assert computed.startswith(first) and len(computed) > len(first)
    made = []
    r.open_all()
    assert r.markdown == computed
    monkeypatch.setattr(results, "Report", lambda *a: made.append(a))  # a second open computes nothing
    started = time.process_time()  # CPU time (this process's threads): wall time under load says nothing
    r.load()
    assert "from the cache" in r.progress.value and r.markdown == first
    assert not any("computed when opened" in t for t in r.sections.titles)  # every section is in the cache
    r.open_all()
    assert made == [] and r.markdown == computed
    assert time.process_time() - started < 10
    # new games change the folder's fingerprint: the report is computed again
    with Run(study, "y") as run:
        aio.run(play_games([GameConfig(seed=9)], run))
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path / "notebooks")
    r.load()
    assert "computed" in r.progress.value and "5 games" in r.summary.value
    # a path relative to the repository, typed in a notebook elsewhere, is found there and said to be
    folder, how = results.resolve("experiments/sweeps")
    assert folder is not None and folder.is_dir() and how.startswith("experiments/sweeps: from the repository")
    assert results.resolve("no/such/folder")[0] is None and "then in the repository" in results.resolve("nope")[1]


def test_inline_images_leaves_a_link_it_cannot_fill():
    from toolkit.ui.results import inline_images

    text = "a ![plot](a.png) b ![other](missing.png) ![web](http://x/y.png)"
    out = inline_images(text, {"a.png": b"\x89PNG"})
    assert out.startswith("a ![plot](data:image/png;base64,iVBORw==) b ![other](missing.png)")
    assert out.endswith("![web](http://x/y.png)")


# ------------------------------------------------------------------ the werewolf session
async def test_before_start_and_seats_follow_the_preset(tmp_path):
    s = WerewolfSession(results_dir=str(tmp_path), model="random")
    assert s.status.value == "<i>no game</i>" and s.chart.value == "" and "Press Start" in s.transcript.value
    assert list(s.seat_models) == [f"Player{i}" for i in range(1, 8)]
    assert [len(row.children) for row in s.seat_box.children] == [3, 3, 1]
    assert {w.value for w in s.seat_models.values()} == {"random"}
    s.preset.value = "standard9"
    assert list(s.seat_models) == [f"Player{i}" for i in range(1, 10)]
    assert [len(row.children) for row in s.seat_box.children] == [3, 3, 3]
    assert not list(tmp_path.iterdir())  # nothing is written before Start


async def test_a_bad_spec_is_shown_not_raised(tmp_path):
    s = WerewolfSession(results_dir=str(tmp_path))
    s.seat_models["Player3"].value = "nonsense"
    s.buttons["Start"].click()
    assert s.runner is None and "error: unknown model spec &#x27;nonsense&#x27;" in s.status.value
    s.seat_models["Player3"].value = " random "  # a spec typed with spaces is trimmed
    s.buttons["Start"].click()
    assert s.runner is not None and s.runner.config.seats["Player3"].spec == "random"
    s.reset()


async def test_status_and_chart_follow_the_game(tmp_path):
    s = WerewolfSession(results_dir=str(tmp_path), seed=4)
    s.buttons["Start"].click()
    g = s.runner.game
    assert f"game <code>{s.runner.game_id}</code>: day 1, phase night; your 0 calls, 0 fallbacks" == s.status.value
    assert "village 5" in s.chart.value and "werewolves 2" in s.chart.value and "width:90px" in s.chart.value
    s.god_view.value = True  # every call counted, every side (a spectator without it: tests/ui/test_viewer.py)
    await s.step()
    wolves = sum(g.roles[p] == "Werewolf" for p in g.alive)
    assert f"village {len(g.alive) - wolves}" in s.chart.value and f"werewolves {wolves}" in s.chart.value
    assert f"; {s.runner.log.calls} calls, " in s.status.value and s.runner.log.calls == len(s.calls) > 0
    await s.run_to_end()
    assert s.runner.finished and f"<b>winner: {s.runner.winner}</b>" in s.status.value and s.run.closed


async def test_one_thing_at_a_time_and_reset_clears_everything(tmp_path):
    s = WerewolfSession(results_dir=str(tmp_path), seed=2)
    first = s.run_to_end()  # starts a game itself when none is running
    assert s.runner is not None and s.step() is first  # a second press while running: the same task
    await first
    folder = s.run.folder
    s.buttons["Reset"].click()
    assert s.runner is None and s.run is None and s.events == [] and s.calls == []
    assert s.call_picker.options == () and s.status.value == "<i>no game</i>"
    assert (folder / "games.parquet").exists()  # the finished game's tables stay


async def test_the_call_inspector_labels_fallbacks_and_shows_the_raw_answer(tmp_path):
    s = WerewolfSession(results_dir=str(tmp_path), seed=1, model="chaos:1")
    s.buttons["Start"].click()
    await s.step()
    assert s.call_picker.options == () and "god view shows every call" in s.call_view.value  # a spectator's
    s.god_view.value = True
    labels = [label for label, _ in s.call_picker.options]
    assert len(labels) == len(s.calls) and all(label.startswith(f"#{c['seq']} {c['seat']} {c['action']} d1")
                                               for label, c in zip(labels, s.calls))
    flagged = [i for i, c in enumerate(s.calls) if c["fallback"]]
    assert flagged and all(labels[i].endswith(" [fallback]") for i in flagged)
    assert not any(labels[i].endswith("[fallback]") for i in range(len(labels)) if i not in flagged)
    i = flagged[0]
    s.call_picker.value = i
    assert "fallback=True" in s.call_view.value and "ok=False" in s.call_view.value
    s.call_picker.value = None
    assert s.call_view.value == ""
    s.reset()


async def test_the_human_inputs_offer_legal_choices_a_pass_and_free_text(tmp_path):
    s = WerewolfSession(results_dir=str(tmp_path))
    vote = asyncio.ensure_future(s.ask_human({"seat": "Player2", "role": "Witch", "day": 2, "action": "poison",
                                              "choices": ["Player1", "Player5"], "can_pass": True}))
    await wait_for(lambda: s.waiting_for_human)
    assert list(s.human_field.options) == ["Player1", "Player5", "(pass)"]
    assert "<b>Player2 (Witch)</b>: day 2, <b>poison</b>" in s.human_box.children[0].value
    s.human_field.value = "(pass)"
    s.human_submit.click()
    s.human_submit.click()  # a second click changes nothing
    assert await vote == {"target": None} and s.human_box.children == () and not s.waiting_for_human
    speech = asyncio.ensure_future(s.ask_human({"seat": "Player2", "action": "speak"}))
    await wait_for(lambda: s.waiting_for_human)
    s.human_submit.click()  # nothing typed: a placeholder, never an empty speech
    assert await speech == {"speech": "..."}
    reflect = asyncio.ensure_future(s.ask_human({"seat": "Player2", "action": "reflect"}))
    await wait_for(lambda: s.waiting_for_human)
    s.human_field.value = "Player5 is lying."
    s.human_submit.click()
    assert await reflect == {"reflection": "Player5 is lying."}


async def test_reset_cancels_a_pending_human_question(tmp_path):
    s = WerewolfSession(results_dir=str(tmp_path))
    pending = asyncio.ensure_future(s.ask_human({"seat": "Player1", "action": "vote", "choices": ["Player2"]}))
    await wait_for(lambda: s.waiting_for_human)
    assert list(s.human_field.options) == ["Player2"]  # no pass offered where none is legal
    s.reset()
    await asyncio.sleep(0.01)
    assert pending.cancelled() and not s.waiting_for_human
    assert s.human_box.children == ()


# ------------------------------------------------------------------ the engineer
async def test_the_channel_asks_and_tells_in_escaped_html():
    import ipywidgets as W

    box, said = W.VBox(), W.HTML()
    channel = WidgetChannel(box, said)
    answer = asyncio.ensure_future(channel.ask("Use <b>bold</b> & co?"))
    await wait_for(lambda: channel.future is not None and box.children)
    assert "Use &lt;b&gt;bold&lt;/b&gt; &amp; co?" in box.children[0].value
    channel.field.value = "yes"
    channel.button.click()
    assert await answer == "yes" and box.children == ()
    await channel.tell("done <now>")
    await channel.tell("and again")
    assert said.value == ("<div><b>The agent says:</b> done &lt;now&gt;</div>"
                          "<div><b>The agent says:</b> and again</div>")


def script(tmp_path, *commands):
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps({"answers": [json.dumps([c]) for c in commands]}))
    return f"scripted:{path}"


@pytest.mark.slow
async def test_engineer_tables_escape_tool_output_and_the_open_file(tmp_path):
    spec = script(tmp_path, {"command_name": "Editor.create_file", "args": {"path": "a.html", "content": "<b>hi</b>"}},
                  {"command_name": "Editor.open_file", "args": {"path": "a.html"}},
                  {"command_name": "end", "args": {}})
    e = EngineerSession(task="t", workspace=str(tmp_path / "ws"), model=spec, results_dir=str(tmp_path / "res"))
    await e.step()
    assert e.status.value == f"steps: 1; env {e.session.environment.name}"  # where its commands run
    assert e.tool_table.value.count("<tr>") == 2  # header and one tool call
    await e.run_all()
    assert e.ended_by == "end" and "ended by <b>end</b>" in e.status.value and "steps: 3" in e.status.value
    assert "&lt;b&gt;hi&lt;/b&gt;" in e.open_file.value and "<b>hi</b>" not in e.open_file.value
    assert "<code>Editor.create_file</code>" in e.tool_table.value and "✔" in e.tool_table.value
    sessions = load(tmp_path / "res").sessions
    assert list(sessions["ended_by"]) == ["end"] and list(sessions["task"]) == ["t"]


@pytest.mark.slow
async def test_the_engineer_widget_runs_the_session_where_its_env_choice_says(tmp_path):
    """The widget's environment choice is the registry's kinds (``--env``'s choices) after the role's default;
    the kind picked is where the session's commands run: ``local`` is the host itself (its files are there),
    the role's default (bubblewrap here) shows nothing of the host outside the workspace."""
    from toolkit.agent.environments import kinds

    if kinds.refusal("bubblewrap"):
        pytest.skip(f"bubblewrap: {kinds.refusal('bubblewrap')}")
    marker = tmp_path / "host-only.txt"
    marker.write_text("on the host")
    look = {"command_name": "Terminal.run_command", "args": {"cmd": f"cat {marker} || echo hidden"}}
    ran = {}
    for pick in ("local", None):
        (tmp_path / f"s-{pick}").mkdir()
        e = EngineerSession(task="t", workspace=str(tmp_path / f"ws-{pick}"), results_dir=str(tmp_path / "res"),
                            model=script(tmp_path / f"s-{pick}", look, {"command_name": "end", "args": {}}))
        assert e.environment.options == (("the role's", None), *((k, k) for k in kinds.choices()))
        assert e.environment.value is None  # the role's, as engineer without --env
        e.environment.value = pick
        await e.run_all()
        assert e.ended_by == "end"
        ran[pick] = (e.session.environment.describe(), e.session.tools.results[0].output, e.status.value)
    assert ran["local"][0] == "local" and ran["local"][1].startswith("on the host")
    assert "UNCONFINED" in ran["local"][2] and "UNCONFINED" not in ran[None][2]  # the status says so (issue 43)
    assert ran[None][0].startswith("bubblewrap") and "hidden" in ran[None][1] and "on the host" not in ran[None][1]


async def test_the_engineer_widget_refuses_an_environment_that_cannot_run_here_in_one_line(tmp_path):
    """As ``engineer --env``: a kind whose check fails (one declared here, so that the test does not depend on
    what this machine has) is one line in the status naming the kinds to choose instead; no session, no run."""
    from toolkit.agent.environments import kinds

    kinds.register(kinds.Kind("faraway", "a machine this one cannot reach", True, lambda *a: None,
                              lambda: "no route to faraway"))
    try:
        e = EngineerSession(task="t", workspace=str(tmp_path / "ws"), results_dir=str(tmp_path / "res"),
                            model="random", environment="faraway")
        assert ("faraway", "faraway") in e.environment.options
        assert e.step() is None and e.session is None and not (tmp_path / "res").exists()
        assert e.status.value == ("<span style='color:#c0392b'>error: env faraway: no route to faraway; choose one "
                                  "of auto, bubblewrap, local, docker, podman</span>")
    finally:
        del kinds.KINDS["faraway"]
    with pytest.raises(ValueError, match="environment 'vm': choose one of auto, bubblewrap, local, docker, podman"):
        EngineerSession(task="t", workspace=str(tmp_path / "ws"), environment="vm")


async def test_a_failing_tool_is_marked_and_stop_before_any_step_does_nothing(tmp_path):
    e = EngineerSession(task="t", workspace=str(tmp_path / "ws"),
                        model=script(tmp_path, {"command_name": "Editor.open_file", "args": {"path": "missing.txt"}},
                                     {"command_name": "end", "args": {}}),
                        results_dir=str(tmp_path / "res"))
    e.stop()
    assert e.session is None and e.task is None and e.ended_by is None and not (tmp_path / "res").exists()
    await e.run_all()
    assert "✘" in e.tool_table.value and e.ended_by == "end" and e.run.closed


async def test_the_widget_names_each_death_once(tmp_path):
    s = WerewolfSession(results_dir=str(tmp_path), seed=3)
    s.buttons["Start"].click()
    s.buttons["Run to end"].click()
    await s.task
    dead = [e.target for e in s.events if e.kind == "death"]
    assert dead
    for seat in dead:  # the dawn announcement names it; the death event's own line is not repeated under it
        assert sum(f"{seat} died" in line for line in s.transcript_lines()) == 1


@pytest.mark.slow
async def test_the_engineer_widget_stops_at_the_study_s_cap_and_starts_no_session_past_it(tmp_path, server):
    """A spending cap over the widget's results folder (the ledger every session there shares), against the
    loopback server: the session stops after the step that reached it, and no new session starts."""
    from toolkit.llm.budget import Budget, BudgetReached

    spec = f"openai:det@{server.base_url}"
    e = EngineerSession(task="t", workspace=str(tmp_path / "ws"), model=spec, results_dir=str(tmp_path / "res"),
                        max_tokens=1)
    await e.run_all()
    assert e.ended_by == "stopped" and e.session.steps == 1 and e.run.closed
    assert "ended by <b>stopped</b> at the spending cap (budget: " in e.status.value  # says why it stopped
    assert Budget(tmp_path / "res" / "spend.jsonl").spent()[1] > 1
    again = EngineerSession(task="t", workspace=str(tmp_path / "ws2"), model=spec, results_dir=str(tmp_path / "res"),
                            max_tokens=1)
    again.buttons["Step"].click()  # a click: its exception goes to a log, so the status line says it
    assert "cap reached: 1 session not started" in again.status.value and again.session is None
    with pytest.raises(BudgetReached, match="cap reached: 1 session not started"):
        again.step()
    assert again.session is None and len(load(tmp_path / "res").sessions) == 1


async def test_the_engineer_widget_says_why_a_session_cannot_start(tmp_path):
    """A click whose session cannot be made (a dollar cap on a model without a price; a model spec that is not
    one) says why in the status line: the exception of a click goes to a log the user does not see (the status
    stayed empty)."""
    e = EngineerSession(task="t", workspace=str(tmp_path / "ws"), model="openai:m@http://127.0.0.1:9/v1",
                        results_dir=str(tmp_path / "res"), max_usd=1.0)
    e.buttons["Run"].click()
    assert "a dollar cap (--max-usd, max_usd) needs a price for every model" in e.status.value
    assert e.session is None
    e = EngineerSession(task="t", workspace=str(tmp_path / "ws"), model="opnai:<b>m</b>",
                        results_dir=str(tmp_path / "res"))
    e.buttons["Step"].click()
    assert "unknown model spec" in e.status.value and "<b>" not in e.status.value and e.session is None


@pytest.mark.slow
def test_a_section_whose_rendering_raised_is_computed_again_when_selected_again(tmp_path):
    """A section that failed closes, its title saying so: selecting it again retries (before, it stayed
    selected, and only closing it and opening it again retried). The failing section is a study's metric defined
    here that fails once (a test double for a computation that failed, e.g. a file not yet written)."""
    import asyncio as aio

    import pandas as pd

    from toolkit.analysis.sections import METRICS, Metric, register
    from toolkit.record.run_log import Run
    from toolkit.werewolf.game import GameConfig, play_games

    with Run(tmp_path, "x") as run:
        aio.run(play_games([GameConfig(seed=s) for s in range(3)], run))
    calls = []

    def flaky(t):
        calls.append(1)
        if len(calls) == 1:
            raise OSError("not there yet")
        return pd.DataFrame([{"rate": 0.5, "ci_low": 0.1, "ci_high": 0.9, "n": 3}])

    register(Metric("flaky", "Flaky metric", flaky, "fails the first time"))
    try:
        r = ResultsExplorer(str(tmp_path))
        r.load()
        k = next(k for k, title in enumerate(r.sections.titles) if title.startswith("Flaky metric"))

        def select_and_wait():
            r.sections.selected_index = k
            for thread in [t for t in threading.enumerate() if t.name == "results-explorer-section"]:
                thread.join(120)

        select_and_wait()
        assert r.sections.titles[k] == "Flaky metric (failed: OSError; select it again to retry)"
        assert r.sections.selected_index is None and "not there yet" in str(r.sections.children[k].outputs)
        select_and_wait()
        assert len(calls) == 2 and r.sections.titles[k] == "Flaky metric" and r.sections.selected_index == k
        assert "## Flaky metric" in r.markdown
    finally:
        del METRICS["flaky"]
