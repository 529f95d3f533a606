"""Each MetaGPT defect as a scenario, played through ``scripted:`` files (tests/werewolf/scenarios/)."""

import asyncio
import json
from pathlib import Path

from toolkit.record.run_log import Run
from toolkit.record.load import load
from toolkit.werewolf.game import GameConfig, GameRunner

SCENARIOS = Path(__file__).parent / "scenarios"


def play(name, tmp_path, preset="classic7", **kwargs):
    config = GameConfig(preset=preset, seed=5, model=f"scripted:{SCENARIOS / name}", **kwargs)
    with Run(tmp_path, name) as run:
        result = asyncio.run(GameRunner(config, run).play())
    return result, load(tmp_path)


def public(result):
    return [e for e in result.events if e.visibility == "public"]


def test_vote_eliminates_second_night_happens_village_wins(tmp_path):
    result, tables = play("vote_then_second_night_village_wins.yaml", tmp_path)
    kinds = [(e.day, e.kind, e.target) for e in result.events]
    assert (1, "death", "Player3") in kinds
    assert (1, "elimination", "Player1") in kinds  # votes eliminate (MetaGPT's never did)
    assert any(e.kind == "hunt_proposal" and e.day == 2 for e in result.events)  # a second night happened
    assert (2, "poison", "Player2") in kinds
    assert result.winner == "village" and result.days == 2
    players = tables.players.set_index("seat")
    assert players.loc["Player2", "death_cause"] == "poison" and players.loc["Player5", "death_cause"] == "werewolves"
    assert players.loc["Player1", "death_cause"] == "vote"
    assert tables.games.iloc[0]["winner"] == "village" and tables.games.iloc[0]["n_fallbacks"] == 0


def test_tie_eliminates_nobody_and_wolves_win(tmp_path):
    result, _ = play("tie_then_wolves_win.yaml", tmp_path)
    day1 = [e for e in public(result) if e.day == 1]
    assert not any(e.kind == "elimination" for e in day1)
    assert any("tied: nobody is eliminated" in e.text for e in day1)
    assert result.winner == "werewolves" and result.win_reason == "all villagers are dead"
    assert result.events[-1].text.startswith("Game over: werewolves win")  # the end does not crash


def test_witch_save_keeps_the_victim_alive(tmp_path):
    result, _ = play("witch_save.yaml", tmp_path, max_days=1)
    assert any(e.kind == "save" and e.target == "Player3" for e in result.events)
    assert not any(e.kind == "death" and e.day == 1 for e in result.events)
    assert any(e.text == "Day 1 dawns. Nobody died last night." for e in public(result))


def test_protect_and_save_same_night_victim_survives(tmp_path):
    result, _ = play("protect_and_save.yaml", tmp_path, max_days=1)
    assert not any(e.kind == "death" and e.day == 1 for e in result.events)


def test_wolves_disagree_tie_goes_to_later_proposal_and_they_see_each_other(tmp_path):
    result, tables = play("wolves_disagree.yaml", tmp_path, max_days=1)
    assert any(e.kind == "kill" and e.target == "Player4" for e in result.events)
    assert any(e.kind == "death" and e.target == "Player4" for e in result.events)
    calls = tables.calls
    second = calls[(calls["seat"] == "Player2") & (calls["action"] == "hunt")].iloc[0]
    prompt = json.loads(second["messages"])[-1]["content"]
    assert "Player1 → Player3" in prompt
    first = calls[(calls["seat"] == "Player1") & (calls["action"] == "hunt")].iloc[0]
    assert "Player1 → Player3" not in json.loads(first["messages"])[-1]["content"]


def test_deaths_are_announced_to_everyone_without_cause(tmp_path):
    result, tables = play("vote_then_second_night_village_wins.yaml", tmp_path)
    dawn2 = next(e for e in result.events if e.text.startswith("Day 2 dawns"))
    assert dawn2.visibility == "public" and "Player2" in dawn2.text and "Player5" in dawn2.text
    assert "poison" not in dawn2.text.lower() and "werewol" not in dawn2.text.lower()
    # every seat alive on day 1 hears of the night's death in its day prompts
    calls = tables.calls
    day1 = calls[calls["replay_key"].str.contains("/d1/day_")]
    assert set(day1["seat"]) == {"Player1", "Player2", "Player4", "Player5", "Player6", "Player7"}
    for messages in day1["messages"]:
        assert "Player3 died last night" in json.loads(messages)[-1]["content"]


def test_nine_player_game_plurality_revote_and_prompts(tmp_path):
    result, tables = play("nine_players_plurality.yaml", tmp_path, preset="standard9")
    assert any(e.kind == "death" and e.target == "Player4" and e.day == 1 for e in result.events)
    assert any("Vote again among them" in e.text for e in result.events)
    assert result.winner in ("village", "werewolves", "draw") and result.winner != "error"
    prompt = json.loads(tables.calls.iloc[0]["messages"])[-1]["content"]
    assert "9 players" in prompt and "3 Werewolf" in prompt and "7 players" not in prompt
    assert set(tables.players["seat"]) == {f"Player{i}" for i in range(1, 10)}
