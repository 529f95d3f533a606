"""The notebook widgets driven directly, beyond tests/test_widgets.py: the werewolf session's controls before,
during and after a game (seats per preset, a bad spec, the status line and alive chart, the call inspector's
fallback labels, reset), the human seat's input widgets, and the engineer's channel and tables (escaped HTML,
a stop before anything ran). Games are real seeded offline games."""

import asyncio
import json

from toolkit.results import load
from toolkit.ui import EngineerSession, WerewolfSession
from toolkit.ui.engineer import WidgetChannel

from tests.test_widgets import wait_for


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
    assert f"game <code>{s.runner.game_id}</code>: day 1, phase night; 0 calls, 0 fallbacks" == s.status.value
    assert "village 5" in s.chart.value and "werewolves 2" in s.chart.value and "width:90px" in s.chart.value
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


async def test_engineer_tables_escape_tool_output_and_the_open_file(tmp_path):
    spec = script(tmp_path, {"command_name": "Editor.create_file", "args": {"path": "a.html", "content": "<b>hi</b>"}},
                  {"command_name": "Editor.open_file", "args": {"path": "a.html"}},
                  {"command_name": "end", "args": {}})
    e = EngineerSession(task="t", workspace=str(tmp_path / "ws"), model=spec, results_dir=str(tmp_path / "res"))
    await e.step()
    assert e.status.value == "steps: 1" and e.tool_table.value.count("<tr>") == 2  # header and one tool call
    await e.run_all()
    assert e.ended_by == "end" and "ended by <b>end</b>" in e.status.value and "steps: 3" in e.status.value
    assert "&lt;b&gt;hi&lt;/b&gt;" in e.open_file.value and "<b>hi</b>" not in e.open_file.value
    assert "<code>Editor.create_file</code>" in e.tool_table.value and "✔" in e.tool_table.value
    sessions = load(tmp_path / "res").sessions
    assert list(sessions["ended_by"]) == ["end"] and list(sessions["task"]) == ["t"]


async def test_a_failing_tool_is_marked_and_stop_before_any_step_does_nothing(tmp_path):
    e = EngineerSession(task="t", workspace=str(tmp_path / "ws"),
                        model=script(tmp_path, {"command_name": "Editor.open_file", "args": {"path": "missing.txt"}},
                                     {"command_name": "end", "args": {}}),
                        results_dir=str(tmp_path / "res"))
    e.stop()
    assert e.session is None and e.task is None and e.ended_by is None and not (tmp_path / "res").exists()
    await e.run_all()
    assert "✘" in e.tool_table.value and e.ended_by == "end" and e.run.closed
