"""A game with seats on a server that misbehaves on purpose (each hostile behaviour of the loopback test
server): no crash, no hang past the deadline, exactly one ``calls`` row per call (also for the calls in
flight beside a failing one), and the game's ``win_reason`` and every error one printable line."""

import asyncio

import pytest

from tests.conftest import FAST
from toolkit.llm import get_model
from toolkit.record.load import load
from toolkit.record.run_log import Run
from toolkit.werewolf.game import GameConfig, GameRunner

BEHAVIOURS = ["endless", "huge", "drip:0.05", "badcontent", "badtools", "manytools", "strusage", "negusage", "escape"]
CAPS = {**FAST, "timeout_s": 0.3, "max_attempts": 2, "max_response_bytes": 256 * 1024, "max_tool_calls": 50}


def one_printable_line(text):
    return isinstance(text, str) and "\n" not in text and "\x1b" not in text and "Traceback" not in text \
        and "/work/" not in text and "site-packages" not in text


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
@pytest.mark.slow
def test_a_game_against_a_hostile_seat_ends_recorded(tmp_path, server, behaviour, monkeypatch):
    """The hostile answers are the endpoint's failures, not the seats' decisions: the game waits for the endpoint
    and, past its deadline (1 s here), stops unfinished as ``interrupted (endpoint)`` with one printable line;
    an answer the client can read (usage as strings, negative usage) is played as any other."""
    monkeypatch.setenv("TOOLKIT_ENDPOINT_DEADLINE_S", "1")
    spec = f"openai:{behaviour}@{server.base_url}"
    # Two hostile seats: their calls are in flight together with the heuristic seats' decisions.
    config = GameConfig(seed=3, seats={"Player2": spec, "Player5": spec}, max_days=2)
    with Run(tmp_path) as run:
        runner = GameRunner(config, run, models={spec: get_model(spec, **CAPS)})
        result = asyncio.run(runner.play())
    results = load(tmp_path, complete_games=False)
    hostile = results.calls[results.calls["spec"] == spec]
    assert len(results.calls) == result.log.calls and hostile["call_id"].is_unique and len(hostile) >= 1
    assert (results.calls["prompt_tokens"].fillna(0) >= 0).all()
    if result.winner != "interrupted":  # the client read the answers: a game like any other
        assert behaviour in ("strusage", "negusage") and results.games.iloc[0]["n_calls"] == result.log.calls
        return
    assert results.games.empty and one_printable_line(result.win_reason)  # no winner, no error: resumable
    assert result.win_reason.startswith(f"interrupted (endpoint): endpoint openai:{behaviour}@")
    assert not hostile["ok"].any() and not hostile["fallback"].any()  # no decision was made for the endpoint
    assert all(one_printable_line(e) for e in hostile["error"])
    assert (results.attempts["error_kind"] != "").all() and len(results.attempts) >= len(hostile)


def test_a_bug_in_a_game_is_one_line_and_the_traceback_goes_to_a_log(tmp_path, monkeypatch):
    from toolkit.werewolf.engine import rules

    def broken(*args, **kwargs):
        raise RuntimeError("rules broke\nsecond line at /home/someone/toolkit/rules.py")

    monkeypatch.setattr(rules.Game, "apply", broken)  # a stand-in for an internal bug: no real one to hand
    with Run(tmp_path) as run:
        asyncio.run(GameRunner(GameConfig(seed=1), run).play())
    game = load(tmp_path).games.iloc[0]
    assert game["winner"] == "error" and one_printable_line(game["win_reason"])
    assert "rules broke second line at rules.py" in game["win_reason"] and "errors.log" in game["win_reason"]
    log = (run.folder / "errors.log").read_text()
    assert "Traceback" in log and "RuntimeError: rules broke" in log
