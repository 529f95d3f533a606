"""A human-vs-model study in the werewolf widget: god view is locked while a human seat plays (the default), its
use is recorded where it is allowed, the run's live files stay out of results_dir until the game ends, and a
hidden seed is drawn at Start and shown nowhere. Driven through the widget's own objects (the real engine,
offline players, in this process), as tests/ui/test_viewer.py does.

On the old code the toggle turned god view on with a human seat (every role in the transcript), nothing
recorded it, ``god_view=``/``seed=None`` did not exist, and calls.jsonl sat in results_dir mid-game."""

import asyncio
import json
import tempfile

import pytest

from toolkit.ui import WerewolfSession

SEER = "Player7"  # classic7, seed 0: Player7 is the Seer, Player3 and Player4 the wolves


@pytest.fixture(autouse=True)
def private_temp(tmp_path, monkeypatch):
    """The session's private folder for a human seat's game (tempfile's) goes under tmp_path."""
    (tmp_path / "private").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "private"))


async def until_asked(s: WerewolfSession) -> None:
    s.buttons["Run to end"].click()
    while not s.waiting_for_human:
        assert not s.task.done()
        await asyncio.sleep(0.002)


async def finish(s: WerewolfSession) -> None:
    s.stop()
    while not s.task.done():
        await asyncio.sleep(0.002)
        if s.waiting_for_human:
            s.human_submit.click()


def human_session(tmp_path, **kw) -> WerewolfSession:
    s = WerewolfSession(results_dir=str(tmp_path / "sessions"), preset="classic7", seed=0, **kw)
    s.seat_models[SEER].value = "human"
    s.buttons["Start"].click()
    return s


async def test_god_view_is_locked_while_a_human_seat_plays_and_a_try_is_noted(tmp_path):
    s = human_session(tmp_path)
    assert s.god_view.disabled and s.god_view.layout.display == "none"  # the participant has no toggle
    await until_asked(s)
    s.god_view.value = True  # only code gets here: refused
    assert s.god_view.value is False and not s.god
    assert "Player3 (Werewolf)" not in s.transcript.value and "your " in s.status.value
    assert all(c["seat"] == SEER for c in s.shown_calls)
    assert [u["god_view"] for u in s.god_view_uses] == ["refused"]
    await finish(s)
    s.reset()
    assert not s.god_view.disabled and s.god_view.layout.display is None  # no human seat: a spectator may look
    locked = WerewolfSession(results_dir=str(tmp_path / "sessions"), god_view="locked")
    assert locked.god_view.disabled and locked.god_view.layout.display == "none"


async def test_god_view_allowed_is_recorded_with_when_in_the_run(tmp_path):
    s = human_session(tmp_path, god_view="allowed")
    assert not s.god_view.disabled
    await until_asked(s)
    s.god_view.value = True
    assert "Player3 (Werewolf)" in s.transcript.value or any(c["seat"] != SEER for c in s.shown_calls)
    s.god_view.value = False
    uses = s.god_view_uses
    assert [u["god_view"] for u in uses] == ["on", "off"]
    assert uses[0]["game_id"] == s.runner.game_id and uses[0]["day"] == 1 and uses[0]["phase"] == "night"
    assert uses[0]["human_seats"] == [SEER] and uses[0]["at"]
    await finish(s)
    run = s.run
    s.reset()  # Stop then Reset: the run closes and its folder moves to results_dir
    folder = run.folder
    rows = [json.loads(line) for line in (folder / "god_view.jsonl").read_text().splitlines()]
    assert rows == uses and folder.parent == tmp_path / "sessions"


async def test_a_human_seats_game_writes_its_live_files_outside_results_dir_until_it_ends(tmp_path):
    s = human_session(tmp_path)
    await until_asked(s)
    assert s.calls and not list((tmp_path / "sessions").rglob("*.jsonl"))  # every seat's prompts: not in reach
    assert (s.run.folder / "calls.jsonl").exists() and tmp_path / "private" in s.run.folder.parents
    await finish(s)
    s.reset()
    moved = tmp_path / "sessions"
    assert list(moved.glob("*/calls.parquet")) and not list((tmp_path / "private").iterdir())


async def test_a_hidden_seed_is_drawn_at_start_recorded_and_shown_nowhere(tmp_path):
    s = WerewolfSession(results_dir=str(tmp_path / "sessions"), seed=None)
    assert s.seed.layout.display == "none"
    s.buttons["Start"].click()
    seed = s.runner.config.seed
    assert s.runner.game_id not in s.status.value and f"g{seed}" not in s.status.value
    runs = json.loads((s.run.folder / "runs.jsonl").read_text().splitlines()[0])
    assert runs["seed"] == seed and json.loads(runs["config"])["seed"] == seed  # the run records it
    s.buttons["Start"].click()
    assert s.runner.config.seed != seed  # a fresh draw (1 in 2**31 to collide)
    s.reset()


def test_a_bad_god_view_is_one_clear_error():
    with pytest.raises(ValueError, match="god_view='off': one of 'auto', 'locked', 'allowed'"):
        WerewolfSession(god_view="off")


def test_the_notebooks_text_beside_the_widget_tells_no_deal():
    """The werewolf notebook's prose is on the participant's page, next to the widget: no sentence in it may name a
    seat with a role or a side (a cheater playing its default game, classic7 seed 0, read there that Player3 and
    Player4 were the wolves)."""
    import re
    from pathlib import Path

    from toolkit.werewolf.engine.preset import available_presets, load_preset

    roles = {r.lower() for p in available_presets() for r in load_preset(p).roles} | {"wolf", "wolves", "village"}
    notebook = json.loads((Path(__file__).resolve().parents[2] / "notebooks" / "01_werewolf_session.ipynb").read_text())
    prose = " ".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    told = [s for s in re.split(r"(?<=[.:;(])\s", prose)
            if re.search(r"\bPlayer\d+\b", s) and roles & set(re.findall(r"[a-z]+", s.lower()))]
    assert told == []
