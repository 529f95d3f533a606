"""A role declares everything it needs (its rule-based play of each decision, its colours, its decisions' Kaggle
entries), and the fast tier plays one heuristic game of every shipped preset, which between them deal every
shipped role: a role that forgets a part fails here, not in a user's first game (before, a shipped role without a
heuristic play passed the fast tier and failed the first heuristic game: "no play for 'bless'")."""

from __future__ import annotations

import asyncio

import pytest

from toolkit.core.werewolf_names import ROLES as SHIPPED, TARGETED_ACTIONS
from toolkit.werewolf.engine import roles
from toolkit.werewolf.engine.events import EventKind
from toolkit.werewolf.engine.preset import available_presets, load_preset
from toolkit.werewolf.engine.roles.base import Role


@pytest.mark.parametrize("preset", available_presets())
def test_one_heuristic_game_of_each_shipped_preset(preset):
    from toolkit.werewolf.game import GameConfig, play_game

    result = asyncio.run(play_game(GameConfig(preset=preset, seed=1)))
    assert result.winner in ("village", "werewolves", "draw") and not result.degraded


def test_every_shipped_role_is_dealt_by_a_preset_and_declares_its_plays_and_colours():
    from toolkit.werewolf.players.heuristic import PLAYS, role_play

    assert set(PLAYS) | {"vote"} == set(TARGETED_ACTIONS)  # the rule-based player plays every shipped decision
    dealt = set().union(*(load_preset(p).roles for p in available_presets()))
    assert set(SHIPPED) <= dealt, f"no shipped preset deals {sorted(set(SHIPPED) - dealt)}: its game is never played"
    html = {}
    for name in SHIPPED:
        role = roles.REGISTRY[name]
        assert all(callable(role_play(name, a)) for a in role.actions), name
        assert role.colour != Role.colour and role.terminal_colour != Role.terminal_colour, name
        html.setdefault(role.colour, name)
    assert len(html) == len(SHIPPED)  # the notebook's transcript tells every role apart


def test_a_role_without_a_play_or_with_a_taken_kaggle_entry_is_refused():
    class Bard(Role):
        name = "Bard"
        actions = ("sing",)
        events = (EventKind("song", decision="sing"),)

    with pytest.raises(ValueError, match=r"^role Bard: no rule-based play for 'sing'"):
        roles.register(Bard())

    class Healer(Bard):
        name = "Healer"
        plays = {"sing": lambda obs, choices, rng: choices[0]}
        events = (EventKind("song", decision="sing", kaggle=("DoctorHealActionDataEntry", "heal_action")),)

    with pytest.raises(ValueError, match=r"^the Kaggle entry DoctorHealActionDataEntry records two decisions: "
                                         r"'protect' \(protect\) and 'sing' \(song\)"):
        roles.register(Healer())
    assert "Bard" not in roles.REGISTRY and "Healer" not in roles.REGISTRY
