"""What a human seat's screen shows is what its role knows: every part of the werewolf widget (transcript, call
inspector, status line, alive chart, the panel) asks one viewer (toolkit.ui.viewer). Each role of each shipped
preset is played as a human through the widget's own objects (the real engine, offline players, in this
process); every text any of its widgets holds, with each call of the inspector opened in turn, is searched for
another seat's private record (tests/ui/private_record.py works it out from the events and roles alone). The
browser test (tests/ui/test_browser.py) does the same on the page JupyterLab shows.

On the old code the inspector listed every seat's calls (their prompts name their roles) and the alive chart
counted the sides of the dead in presets that reveal none."""

import asyncio
import re
from html import unescape

import ipywidgets as W
import pytest

from tests.ui.private_record import secrets, shown_in_god_view
from toolkit.ui import WerewolfSession
from toolkit.ui.viewer import Viewer
from toolkit.werewolf.engine.preset import available_presets, load_preset
from toolkit.werewolf.engine.rules import PUBLIC, Game
from toolkit.werewolf.game import GameConfig, GameRunner


def text(value: str) -> str:
    return unescape(re.sub(r"<[^>]+>", " ", value))


def widget_texts(widget: W.Widget) -> str:
    """Every text a widget and its children hold (values, labels, options, tooltips, placeholders)."""
    out = []
    for name in ("value", "description", "tooltip", "placeholder", "_options_labels"):
        v = getattr(widget, name, None)
        out += [text(v)] if isinstance(v, str) else [text(x) for x in v] if isinstance(v, tuple) and all(
            isinstance(x, str) for x in v) else []
    for child in getattr(widget, "children", ()):
        out.append(widget_texts(child))
    return "\n".join(out)


def every_text(s: WerewolfSession) -> str:
    """The whole widget's text, with each call the inspector lists opened in turn."""
    out = [widget_texts(s)]
    for _, i in s.call_picker.options:
        s.call_picker.value = i
        out.append(text(s.call_view.value))
    return "\n".join(out)


def seat_of(preset: str, seed: int, role: str) -> str:
    return next(s for s, r in Game(load_preset(preset), seed).roles.items() if r == role)


async def play_until(s: WerewolfSession, day: int) -> int:
    """Answer the human's questions (the first legal choice) until day ``day`` starts or the game ends; the
    number of questions answered."""
    s.buttons["Run to end"].click()
    asked = 0
    while not s.task.done() and s.runner.game.day < day:
        await asyncio.sleep(0.002)
        if s.waiting_for_human:
            field = s.human_field
            if hasattr(field, "options"):
                first = field.options[0]
                field.value = first[1] if isinstance(first, tuple) else first
            else:
                field.value = "I listen."
            s.human_submit.click()
            asked += 1
    s.stop()
    while not s.task.done():
        await asyncio.sleep(0.002)
        if s.waiting_for_human:
            s.human_submit.click()
    return asked


CASES = [(p, r) for p in available_presets() for r, n in load_preset(p).roles.items() if n]


@pytest.mark.slow
@pytest.mark.parametrize("preset, role", CASES)
async def test_no_part_of_the_widget_shows_another_seats_private_record(tmp_path, preset, role):
    seat = seat_of(preset, 1, role)
    s = WerewolfSession(results_dir=str(tmp_path), preset=preset, seed=1, god_view="allowed")
    s.seat_models[seat].value = "human"
    s.buttons["Start"].click()
    assert await play_until(s, 3) >= 1
    roles = s.runner.game.roles
    hidden = secrets(s.events, roles, (seat,))
    assert any(e.visibility != PUBLIC for e in s.events) and hidden
    shown = every_text(s)
    assert [x for x in hidden if x in shown] == []
    assert not re.search(rf"#\d+ (?!{seat} )Player\d+ ", shown)  # the inspector lists no other seat's call
    # god view shows them: every hidden event's line and the roles of the players who spoke
    s.god_view.value = True
    god = every_text(s)
    assert [x for x in shown_in_god_view(s.events, roles, (seat,)) if x not in god] == []
    s.reset()


def test_the_viewer_asks_the_seats_observation_for_roles_and_sides():
    """classic7, seed 0: Player3 and Player4 are the wolves, Player7 the Seer."""
    runner = GameRunner(GameConfig(preset="classic7", seed=0))
    runner.start()
    asyncio.run(runner.step_phase())  # night 1: the Seer checks a player, the wolves propose and kill
    g = runner.game
    spectator, seer, wolf = Viewer(g), Viewer(g, ("Player7",)), Viewer(g, ("Player4",))
    assert spectator.roles() == {} and spectator.sides() == {}
    assert spectator.events(g.events) == [e for e in g.events if e.visibility == PUBLIC]
    checked = next(e.target for e in g.events if e.kind == "check")
    assert seer.roles() == {"Player7": "Seer"} and set(seer.sides()) == {"Player7", checked}
    assert {e.kind for e in seer.events(g.events)} - {"announcement", "death", "check"} == set()
    assert wolf.roles() == {"Player3": "Werewolf", "Player4": "Werewolf"}
    assert {e.kind for e in wolf.events(g.events) if e.visibility != PUBLIC} == {"hunt_proposal", "kill"}
    calls = [{"seat": "Player7"}, {"seat": "Player3"}]
    assert seer.calls(calls) == [calls[0]] and spectator.calls(calls) == []
    assert Viewer(g, (), god=True).calls(calls) == calls and Viewer(g, (), True).roles() == g.roles


def test_the_alive_chart_counts_a_side_only_where_the_viewer_can():
    """A wolf knows every wolf; a spectator of a preset that reveals no role cannot count the sides of the dead
    (the old chart said "village 4" after an exile: the exiled player was no wolf); kaggle7 reveals roles."""
    g = Game(load_preset("classic7"), 0)
    g.alive.remove("Player2")  # a villager gone, its side unrevealed
    assert Viewer(g).alive() == {"alive": 6, "werewolves": None, "village": None, "werewolves_at_start": 2}
    assert Viewer(g, ("Player4",)).alive()["werewolves"] == 2  # the wolves know each other
    assert Viewer(g, (), god=True).alive() == {"alive": 6, "werewolves": 2, "village": 4, "werewolves_at_start": 2}
    assert Viewer(Game(load_preset("classic7"), 0)).alive()["werewolves"] == 2  # nobody dead yet: all alive
