"""What reasoning models do differently, against the loopback server playing one (real HTTP): provider
parameters per spec reach the request body and every table; an answer cut at the token limit is a
``truncated`` attempt, asked again with the growing "reason less" nudge, then the seat's error policy; each
error policy's outcome and rows."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolkit.llm import Request, get_model
from toolkit.llm.spec import spec_params
from toolkit.prompting.structured_call import render
from toolkit.record.load import load
from toolkit.record.run_log import CallLog, Run
from toolkit.werewolf.engine.preset import load_preset, parse_error_policy
from toolkit.werewolf.engine.rules import Game, IllegalMove
from toolkit.werewolf.game import GameConfig, GameRunner
from toolkit.werewolf.seat.decisions import decision, output_model

REPO = Path(__file__).resolve().parents[2]
ROLES7 = {"Player1": "Werewolf", "Player2": "Werewolf", "Player3": "Villager", "Player4": "Villager",
          "Player5": "Guard", "Player6": "Witch", "Player7": "Seer"}


@pytest.fixture
def priced(prices):
    prices("reason: {input: 1.0, output: 10.0}")


# ------------------------------------------------------------------ 1. parameters per spec
def test_effort_and_extra_parameters_reach_the_body_and_every_row(server, tmp_path, priced):
    high = f"openai:reason@{server.base_url}?reasoning_effort=high&max_completion_tokens=4000&top_k=5"
    low = f"openai:reason@{server.base_url}?reasoning_effort=low"
    seats = {s: (high if s in ("Player1", "Player3") else low) for s in ROLES7}
    with Run(tmp_path, "effort", specs=[high, low]) as run:
        result = asyncio.run(GameRunner(GameConfig(seed=1, seats=seats, roles=ROLES7), run).play())
    assert result.winner in ("village", "werewolves")
    bodies = [b for b in server.requests if b.get("reasoning_effort") == "high"]
    assert bodies and all(b["max_completion_tokens"] == 4000 and b["top_k"] == 5 and "max_tokens" not in b
                          for b in bodies)
    assert any(b.get("reasoning_effort") == "low" and "top_k" not in b for b in server.requests)
    t = load(tmp_path)
    assert json.loads(t.runs["params"].iloc[0]) == {
        high: {"reasoning_effort": "high", "max_completion_tokens": 4000, "top_k": 5},
        low: {"reasoning_effort": "low"}}
    calls = t.calls.set_index("seat")
    assert json.loads(calls.loc["Player1", "params"].iloc[0])["reasoning_effort"] == "high"
    assert set(calls.loc["Player2", "params"].map(json.loads).map(lambda p: p["reasoning_effort"])) == {"low"}
    # The loopback model reasons 256 tokens at medium effort: ×4 at high, ×0.25 at low.
    assert set(calls.loc["Player1", "reasoning_tokens"]) == {1024} and set(calls.loc["Player2", "reasoning_tokens"]) \
        == {64}
    assert set(t.calls["finish_reason"]) == {"stop"} and t.calls["reasoning"].str.startswith("Hidden reasoning").all()
    row = t.calls.iloc[0]  # reasoning tokens are output: counted in completion_tokens, billed at the output price
    assert row["cost_usd"] == pytest.approx((row["prompt_tokens"] * 1.0 + row["completion_tokens"] * 10.0) / 1e6)
    assert row["completion_tokens"] > row["reasoning_tokens"]
    # Two specs that differ only by effort are two models in the players table (and so in every rating).
    assert set(t.players["spec"]) == {high, low}


def test_two_efforts_of_one_model_never_share_a_cached_answer(server, tmp_path):
    request = Request(messages=[{"role": "user", "content": "the same question"}])

    async def ask(spec):
        return await get_model(spec, cache_dir=str(tmp_path / "cache")).generate(request)

    for spec in (f"openai:reason@{server.base_url}?reasoning_effort=high",
                 f"openai:reason@{server.base_url}?reasoning_effort=low",
                 f"openai:reason@{server.base_url}?reasoning_effort=high"):
        asyncio.run(ask(spec))
    assert [b.get("reasoning_effort") for b in server.requests] == ["high", "low"]  # the third was cached


def test_an_endpoint_that_counts_reasoning_apart_is_billed_for_it():
    from toolkit.llm.model import cost_usd

    prices = {"m": {"input": 0.0, "output": 1.0}}
    assert cost_usd("m", 10, 100, reasoning_tokens=60, prices=prices) == pytest.approx(100 / 1e6)  # inside
    assert cost_usd("m", 10, 20, reasoning_tokens=500, prices=prices) == pytest.approx(520 / 1e6)  # apart


@pytest.mark.parametrize("spec, message", [
    ("openai:o4-mini@http://127.0.0.1:9/v1?reasoning_effort=extreme", "reasoning_effort='extreme' must be one of"),
    ("openai:o4-mini?max_completion_tokens=0", "max_completion_tokens=0 must be between 1 and"),
    ("openai:o4-mini?temperature=hot", "temperature='hot' must be a number"),
    ("openai:o4-mini?api_key=sk-abc", "looks like a credential"),
    ("openai:o4-mini?messages=x", "set by the toolkit itself"),
    ("openai:o4-mini?reasoning_effort=high&reasoning_effort=low", "reasoning_effort is given twice"),
    ("openai:o4-mini?effort", "is not NAME=VALUE"),
    ("openai:o4-mini?", "nothing after '?'"),
    ("openai:o4-mini?max_tokens=5&max_completion_tokens=5", "not both")])
def test_a_bad_parameter_is_one_line(spec, message):
    with pytest.raises(ValueError, match=message) as caught:
        spec_params(spec)
    assert "\n" not in str(caught.value)


def test_parameters_are_typed_and_passed_through_unchanged():
    assert spec_params("openai:m?reasoning_effort=none&seed=3&top_p=0.5&store=false&vendor.flag=on&x=null") == {
        "reasoning_effort": "none", "seed": 3, "top_p": 0.5, "store": False, "vendor.flag": "on", "x": None}


def test_a_typo_close_to_a_known_parameter_warns_and_is_still_sent_as_given(server):
    spec = f"openai:ok@{server.base_url}?reasoning_efort=high&vendor.flag=on&top_a=0.1"
    with pytest.warns(UserWarning, match=r"unknown parameter 'reasoning_efort' is sent as given \(did you mean "
                      r"reasoning_effort\?\)") as caught:
        params = spec_params(spec)
    assert len(caught) == 1  # vendor.flag and top_a (OpenRouter's) are names of their own: no warning
    assert params == {"reasoning_efort": "high", "vendor.flag": "on", "top_a": 0.1}
    with pytest.warns(UserWarning, match="did you mean max_completion_tokens"):
        spec_params("openai:m?max_completion_token=5")
    asyncio.run(get_model(spec).generate(Request()))
    assert server.requests[-1]["reasoning_efort"] == "high"  # not refused, not renamed: sent as the spec says


@pytest.mark.slow
def test_the_cli_warns_of_a_typo_in_one_line_and_plays(server, tmp_path):
    out = subprocess.run([sys.executable, "-m", "toolkit", "play", "--preset", "classic7", "--quiet",
                          "--model", "heuristic", "--seat", f"Player1=openai:ok@{server.base_url}?reasoning_efort=high",
                          "--out", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    warned = [line for line in out.stderr.splitlines() if "reasoning_efort" in line]
    assert warned == [f"warning: model spec openai:ok@{server.base_url}: unknown parameter 'reasoning_efort' is "
                      "sent as given (did you mean reasoning_effort?)"]
    assert any(body.get("reasoning_efort") == "high" for body in server.requests)


def test_an_offline_player_refuses_parameters():
    with pytest.raises(ValueError, match="heuristic takes no provider parameters"):
        get_model("heuristic?reasoning_effort=high")


@pytest.mark.slow
def test_the_cli_refuses_a_bad_parameter_in_one_line_and_exit_2(tmp_path):
    out = subprocess.run([sys.executable, "-m", "toolkit", "play", "--model",
                          "openai:o4-mini@http://127.0.0.1:9/v1?reasoning_effort=hgih", "--out", str(tmp_path)],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "reasoning_effort='hgih' must be one of none, minimal, low, medium, high" in out.stderr


# ------------------------------------------------------------------ 2. truncation
def _vote(model, log):
    game = Game(load_preset("classic7"), 0, ROLES7)
    request = Request(observation={}, game_id="g", seat="Player3", day=1, phase="day_vote")
    choices = ("Player1", "Player2")
    return asyncio.run(decision("vote").run(
        model, request, {"obs": {}, "rules": "", "preset": {}, "reflection": "", "experiences": [],
                         "strategy": "default"} | _values(game), fallback=lambda: output_model("vote", choices, False)(
            target="Player1"), log=log, output=output_model("vote", choices, False)))


def _values(game):
    from toolkit.werewolf.seat.observation import observe
    from toolkit.werewolf.engine.rules import Ask

    preset = {**game.preset.model_dump(), "n_players": game.preset.n_players}
    return {"obs": observe(game, "Player3", Ask("Player3", "vote", ("Player1", "Player2")), 12), "preset": preset,
            "rules": render("werewolf/rules.j2", preset=preset)}


def test_a_length_finish_is_a_truncated_attempt_reasked_with_a_growing_nudge_then_the_fallback(server, tmp_path):
    log = CallLog()
    rows = []
    log.write = lambda call: rows.append(call)  # the calls as the action hands them to its log
    result = _vote(get_model(f"openai:reason:1@{server.base_url}"), log)
    assert result.fallback and result.error_kind == "truncated" and result.truncations == 3 and result.calls == 3
    assert [c.completion.finish_reason for c in rows] == ["length"] * 3
    assert all(not c.ok and c.error.startswith("truncated: the answer was cut") for c in rows)
    assert [c.fallback for c in rows] == [False, False, True]
    first, second, third = (c.request.messages for c in rows)
    assert second[:-1] == first and third[:-1] == first  # the question again, the cut answer left out
    assert second[-1]["content"] == render("truncated.j2", n=1) and "Reason less" in second[-1]["content"]
    assert third[-1]["content"] == render("truncated.j2", n=2) and "2 times in a row" in third[-1]["content"]
    assert render("truncated.j2", n=3) != third[-1]["content"]  # it grows again


def test_a_truncated_answer_then_a_whole_one_is_used(server):
    server.queue("reason:1", "reason:0")
    log = CallLog()
    rows = []
    log.write = lambda call: rows.append(call)
    result = _vote(get_model(f"openai:queue@{server.base_url}"), log)
    assert not result.fallback and result.truncations == 1 and result.calls == 2
    assert [c.completion.finish_reason for c in rows] == ["length", "stop"] and rows[1].ok


def test_truncation_then_the_forfeit_policy_in_the_rows(server, tmp_path):
    seats = {s: "heuristic" for s in ROLES7} | {"Player3": f"openai:reason:1@{server.base_url}"}
    with Run(tmp_path) as run:
        result = asyncio.run(GameRunner(GameConfig(seed=2, seats=seats, roles=ROLES7, error_policy="forfeit",
                                                   reflection=False), run).play())
    t = load(tmp_path)
    game = t.games.iloc[0]
    assert result.winner == "werewolves" and game["win_reason"] == "forfeit: Player3 (village) gave no usable answer"
    assert game["error_policy"] == "forfeit"
    calls = t.calls[t.calls["seat"] == "Player3"]
    assert list(calls["finish_reason"]) == ["length"] * 3 and calls["fallback"].tolist() == [False, False, True]
    assert t.players.set_index("seat").loc["Player3", "errors"] == 1
    assert (t.events["kind"] == "forfeit").sum() == 1


# ------------------------------------------------------------------ 3. error policies
@pytest.fixture
def one_attempt(monkeypatch):
    monkeypatch.setenv("TOOLKIT_MAX_ATTEMPTS", "1")  # a failing endpoint fails at once (no retries to wait)


def _broken_seat_game(server, tmp_path, policy, model="say"):
    """Player4's model answers nothing usable (``say`` with nothing queued: empty answers, the model's failure);
    ``model="500"``: its endpoint fails instead."""
    seats = {s: "heuristic" for s in ROLES7} | {"Player4": f"openai:{model}@{server.base_url}"}
    with Run(tmp_path) as run:
        runner = GameRunner(GameConfig(seed=3, seats=seats, roles=ROLES7, error_policy=policy), run)
        result = asyncio.run(runner.play())
    return result, load(tmp_path, complete_games=False)


def test_under_fallback_a_model_that_never_answers_usably_plays_a_degraded_game(server, tmp_path, one_attempt):
    result, t = _broken_seat_game(server, tmp_path, "fallback")
    assert result.winner in ("village", "werewolves") and result.degraded
    game = t.games.iloc[0]
    assert game["error_policy"] == "fallback" and bool(game["degraded"]) and "Player4" in game["degraded_why"]
    assert t.players.set_index("seat").loc["Player4", "errors"] >= 3


def test_forfeit_the_erring_seat_s_side_loses_at_its_first_failure(server, tmp_path, one_attempt):
    result, t = _broken_seat_game(server, tmp_path, "forfeit")
    assert result.winner == "werewolves" and result.win_reason.startswith("forfeit: Player4 (village)")
    assert len(t.calls[t.calls["seat"] == "Player4"]) == 2  # one failed decision (asked, re-asked): no more asked
    players = t.players.set_index("seat")
    assert players.loc["Player4", "errors"] == 1 and players["errors"].drop("Player4").eq(0).all()
    assert t.events["kind"].iloc[-2] == "forfeit"  # then the announcement of the end


def test_eliminate_after_n_removes_the_seat_at_the_next_nightfall_and_the_game_goes_on(server, tmp_path, one_attempt):
    result, t = _broken_seat_game(server, tmp_path, "eliminate_after:2")
    assert result.winner in ("village", "werewolves")  # a real outcome, not an error
    players = t.players.set_index("seat")
    assert players.loc["Player4", "death_cause"] == "disqualified" and players.loc["Player4", "errors"] == 2
    out = t.events[t.events["kind"] == "disqualification"]
    assert list(out["target"]) == ["Player4"] and out["phase"].iloc[0] == "night"
    later = t.calls[(t.calls["seat"] == "Player4") & (t.calls["day"] > out["day"].iloc[0])]
    assert later.empty  # never asked again
    assert t.games["error_policy"].iloc[0] == "eliminate_after:2"


def test_the_rules_take_a_disqualification_only_at_nightfall():
    game = Game(load_preset("classic7"), 0, ROLES7)
    game.phase = "day_vote"
    with pytest.raises(IllegalMove, match="at nightfall"):
        game.disqualify({"Player3": "test"})


@pytest.mark.parametrize("value, expected", [("fallback", ("fallback", 0)), ("forfeit", ("forfeit", 0)),
                                             ("eliminate_after:2", ("eliminate_after", 2)),
                                             ({"eliminate_after": 3}, ("eliminate_after", 3))])
def test_policies_parse(value, expected):
    assert parse_error_policy(value) == expected


@pytest.mark.parametrize("value", ["forfit", "eliminate_after", "eliminate_after:0", "fallback:2", 3, None])
def test_a_bad_policy_is_one_line(value):
    with pytest.raises(ValueError, match="error_policy must be fallback, forfeit or eliminate_after:N"):
        parse_error_policy(value)
