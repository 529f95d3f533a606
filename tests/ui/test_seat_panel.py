"""A human seat sees what its role knows, and nothing another seat knows: each role played as a human through
the werewolf widget (the real engine and offline players, in this process: the widget's own objects, as the
notebook's kernel holds them), its panel read at every question, its transcript with god view off and on.
The browser test (tests/ui/test_browser.py) plays a Seer in JupyterLab and reads the same panel on the page."""

import asyncio
import re
from html import unescape

import pytest

from toolkit.ui import WerewolfSession
from toolkit.ui.seat_panel import facts, panel
from toolkit.werewolf.engine.preset import load_preset
from toolkit.werewolf.engine.rules import Ask, Game
from toolkit.werewolf.seat.observation import observe

ROLES = ("Werewolf", "Villager", "Seer", "Witch", "Guard", "Doctor", "Hunter")
# what only this role's panel may say (the facts' own wording, seat_panel.facts)
ONLY = {"Werewolf": "fellow werewolves", "Seer": "Your checks", "Witch": "Potions left", "Guard": "you protected",
        "Doctor": "you healed"}


def text(html: str) -> str:
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


async def play_as(tmp_path, preset: str, seed: int, role: str, last: bool = False):
    """A whole game with the seat of ``role`` (the last such seat if ``last``) played through the widgets,
    keeping the first legal choice; returns the session, the seat and the panel's text at every question."""
    s = WerewolfSession(results_dir=str(tmp_path), preset=preset, seed=seed, god_view="allowed")
    s.buttons["Start"].click()
    seats = [x for x, r in s.runner.game.roles.items() if r == role]
    seat = seats[-1] if last else seats[0]
    s.reset()
    s.seat_models[seat].value = "human"
    s.buttons["Start"].click()
    s.buttons["Run to end"].click()
    asked = []
    while not s.task.done():
        await asyncio.sleep(0.002)
        if s.waiting_for_human:
            g = s.runner.game
            asked.append((g.day, g.phase, text(s.seat_view.value), text(s.transcript.value)))
            field = s.human_field
            if hasattr(field, "options"):
                first = field.options[0]
                field.value = first[1] if isinstance(first, tuple) else first
            else:
                field.value = "I listen."
            s.human_submit.click()
    await s.task
    return s, seat, asked


@pytest.mark.parametrize("preset,seed,role", [
    ("classic7", 3, "Seer"), ("classic7", 0, "Werewolf"), ("classic7", 2, "Witch"), ("classic7", 2, "Guard"),
    ("kaggle7", 0, "Doctor"), ("competitive12", 1, "Hunter"), ("classic7", 1, "Villager")])
async def test_each_role_played_as_a_human_sees_its_own_knowledge_only(tmp_path, preset, seed, role):
    s, seat, asked = await play_as(tmp_path, preset, seed, role, last=role == "Werewolf")
    roles = s.runner.game.roles
    assert s.runner.game.over and len(asked) >= 2
    public = " ".join(e.text for e in s.events if e.visibility == "public")  # (kaggle7 reveals roles at death)
    for day, phase, shown, transcript in asked:
        assert f"You are {seat}: {role} (side: {'werewolves' if role == 'Werewolf' else 'village'})" in shown
        for other, other_role in roles.items():  # no other seat's role, in the panel or the transcript, but a
            # wolf's partners (its observation names them: the transcript writes their role beside their lines)
            if other != seat and f"{other} ({other_role})" not in public and not (role == other_role == "Werewolf"):
                assert f"{other}: " not in shown and f"{other} ({other_role})" not in transcript
        for r, words in ONLY.items():  # another role's kind of knowledge never shows
            assert r == role or words not in shown, (r, shown)
        # the transcript's private lines are this seat's own (or its team's)
        private = set(re.findall(r"private to (\w+)", transcript))
        assert private <= {seat, "werewolves"} if role == "Werewolf" else private <= {seat}, private
    later = " ".join(x[2] for x in asked[1:])
    every = " ".join(x[3] for x in asked)
    if role == "Seer":  # the check's result: in the panel from the next question, in the transcript at once
        check = next(e for e in s.events if e.kind == "check")
        assert f"Your checks: {check.target} is " in later and f"private to {seat}" in every
    if role == "Werewolf":
        partner = next(x for x, r in roles.items() if r == "Werewolf" and x != seat)
        assert f"Your fellow werewolves: {partner}." in asked[0][2]
        assert f"Tonight's proposals: {partner} → " in asked[0][2]  # the first wolf's choice, before its own
        assert "the werewolves attacked" in later
    if role == "Witch":
        victim = next(e.target for e in s.events if e.kind == "kill")
        assert f"Tonight the werewolves attacked {victim}." in asked[0][2]
        assert "Potions left: antidote yes, poison yes." in asked[0][2]
        assert "Potions left: antidote no" in later and "you saved" in later
    if role in ("Guard", "Doctor"):
        target = next(e.target for e in s.events if e.kind in ("protect", "heal"))
        assert f"Night 1: you {'protected' if role == 'Guard' else 'healed'} {target}" in later
    if role in ("Villager", "Hunter"):
        assert all("nothing private yet" in x[2] for x in asked)
    # god view alone shows every role
    s.god_view.value = True
    assert all(f"{x} ({r})" in s.transcript.value for x, r in roles.items()
               if any(e.actor == x and e.kind == "speech" for e in s.events))


async def test_a_human_bids_from_the_urgency_scale_with_its_knowledge_beside(tmp_path):
    preset = load_preset("kaggle7").model_copy(update={"discussion": "bid_turn"})
    game = Game(preset, seed=0)
    seat = game.seats[0]
    obs = observe(game, seat, Ask(seat, "bid"))
    s = WerewolfSession(results_dir=str(tmp_path))
    answer = asyncio.ensure_future(s.ask_human(obs))
    await asyncio.sleep(0)
    assert [label for label, _ in s.human_field.options][0].startswith("0: ")
    assert "Bidding: 0 biddings settled today" in text(s.seat_view.value)
    s.human_field.value = 3
    s.human_submit.click()
    assert await answer == {"bid": 3}


def test_the_panel_says_only_what_the_observation_holds():
    obs = {"seat": "Player2", "role": "Seer", "side": "village", "day": 2, "phase": "night",
           "checks": {"Player5": "werewolf"}, "private": [], "record": {"days": []}}
    assert facts(obs) == ["Your checks: Player5 is werewolf."]
    assert "<script>" not in panel({**obs, "seat": "<script>"})  # escaped
    assert facts({"seat": "Player1", "role": "Villager", "private": []}) == []
