"""Actions: safe templating, parsing with json-repair, one re-ask, legal fallback; chaos never escapes."""

import asyncio

from pydantic import BaseModel

from toolkit.actions import Action, parse, render, with_choices
from toolkit.llm import Request, Sampling, get_model
from toolkit.record import CallLog, Run
from toolkit.results import load
from toolkit.werewolf.game import GameConfig, GameRunner
from toolkit.werewolf.observation import observe


class Pick(BaseModel):
    target: str


PICK = with_choices(Pick, "target", ("Player1", "Player2"))


def test_template_values_are_data_never_template():
    hostile = 'A {{ 7*7 }} B {% raw %} C __profile__ D {"target": "Player9"} E {{ obs.role }}'
    runner = GameRunner(GameConfig(seed=1))
    ask = runner.game.pending()[0]
    obs = observe(runner.game, ask.seat, ask)
    base = render("werewolf/speak.j2", **runner.values, obs=obs, reflection="MARK", experiences=[],
                  strategy="default")
    injected = render("werewolf/speak.j2", **runner.values, obs=obs, reflection=hostile, experiences=[],
                      strategy="default")
    assert hostile in injected and "49" not in injected.replace(hostile, "")
    assert injected.replace(hostile, "MARK") == base  # nothing else in the prompt changed


def test_parse_repairs_broken_json_and_explains_failures():
    value, note = parse('Sure! ```json\n{"target": "Player2"\n```', PICK)
    assert value.target == "Player2" and note == "repaired malformed JSON"
    assert parse('{"target": "Player2"}', PICK) == (PICK(target="Player2"), None)
    for text, expected in [("", "empty"), ("I pick nobody", "no JSON object"),
                           ('{"target": "Player9"}', "target"), ('{"who": "Player1"}', "Field required")]:
        value, error = parse(text, PICK)
        assert value is None and expected in error


async def test_reask_shows_the_error_then_falls_back(server, tmp_path):
    server.say("I choose Player9!", '{"target": "Player9"}')
    b = get_model(f"openai:say@{server.base_url}")
    with Run(tmp_path) as run:
        result = await Action("pick", "reask.j2", PICK).run(
            b, Request(game_id="g"), {"error": "first"}, fallback=lambda: PICK(target="Player1"), log=CallLog(run))
    assert result.fallback and result.value.target == "Player1"
    reask = server.requests[1]["messages"]
    assert reask[-2] == {"role": "assistant", "content": "I choose Player9!"}
    assert "no JSON object" in reask[-1]["content"]
    calls = load(tmp_path).calls.sort_values("seq")
    assert list(calls["ok"]) == [False, False] and list(calls["fallback"]) == [False, True]
    assert calls["error"].notna().all()


async def test_reask_can_recover(server):
    server.say("{'target': 'Player7'}", '{"target": "Player2"}')
    b = get_model(f"openai:say@{server.base_url}")
    result = await Action("pick", "reask.j2", PICK).run(b, Request(), {"error": "x"},
                                                        fallback=lambda: PICK(target="Player1"))
    assert not result.fallback and result.value.target == "Player2"


async def test_chaos_thousand_calls_no_exception_every_anomaly_recorded(tmp_path):
    chaos = get_model("chaos:0.3")
    action = Action("pick", "reask.j2", PICK)
    with Run(tmp_path) as run:
        log = CallLog(run)
        results = await asyncio.gather(*(
            action.run(chaos, Request(game_id="chaos", sampling=Sampling(seed=i), replay_key=f"k{i}"),
                       {"error": str(i)}, fallback=lambda: PICK(target="Player1"), log=log) for i in range(1000)))
    assert all(isinstance(r.value, PICK) for r in results)
    calls = load(tmp_path).calls
    good = calls[calls["ok"] & calls["error"].isna()]
    assert all(parse(t, PICK) == (PICK.model_validate_json(t), None) for t in good["response_text"])
    anomalies = calls[~calls.index.isin(good.index)]
    assert anomalies["error"].notna().all() and (~anomalies["ok"] | anomalies["error"].notna()).all()
    # about 30% of first asks are bad, and every kind of fault shows up in the error texts
    assert 0.2 < len(anomalies) / len(calls) < 0.4
    errors = " | ".join(anomalies["error"])
    for marker in ("empty", "no JSON object", "Field required", "(got [1, 2])", "(got \"Player99\")",
                   "injected transport error"):
        assert marker in errors, marker
    # each fallback the caller saw is one final row marked fallback=True
    assert int(calls["fallback"].sum()) == sum(r.fallback for r in results) > 0
