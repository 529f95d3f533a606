"""The model wrapper and the provider registry: every backend goes through one call path that owns retries,
the concurrency cap, usage estimates, cost and the call record. Offline backends are real backends (no
mocks); the OpenAI-compatible one talks to the loopback test server over real HTTP."""

import asyncio
import json
import time

import pandas as pd
import pytest
import yaml

from tests.conftest import FAST
from toolkit.llm import Completion, LLMError, Model, Request, Sampling, TransientError, get_model, mask_url, register
from toolkit.llm.registry import PROVIDERS, build, parse_spec
from toolkit.record import CallLog, Run
from toolkit.results import load
from toolkit.werewolf.game import GameConfig, play_game

SCHEMA = {"type": "object", "properties": {"target": {"enum": ["Player1", "Player2"]}}, "required": ["target"]}


def req(**kw):
    return Request(messages=[{"role": "user", "content": "pick one " * 10}], schema=SCHEMA, **kw)


# ------------------------------------------------------------------ the registry
def test_every_documented_spec_is_registered():
    import toolkit.results  # noqa: F401  (registers replay)
    import toolkit.werewolf.game  # noqa: F401  (registers heuristic)

    assert {"openai", "local", "random", "scripted", "chaos", "replay", "heuristic"} <= set(PROVIDERS)


@pytest.mark.parametrize("spec, message", [
    ("nonsense", "unknown model spec 'nonsense'; use one of: "),
    ("scripted", "scripted needs an argument: scripted:PATH"),
    ("random:3", "random takes no argument"),
    ("chaos:lots", "chaos:RATE needs a number between 0 and 1"),
    ("chaos:2", "chaos:RATE needs a number between 0 and 1"),
    ("openai:", "openai needs an argument"),
    ("", "empty model spec"),
])
def test_bad_specs_say_what_is_wrong(spec, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        get_model(spec)


def test_a_backend_registers_itself_where_it_is_defined():
    class Echo:
        model = "echo"
        free = True

        async def complete(self, request):
            return Completion(request.messages[-1]["content"].upper(), self.model)

    register("echo-test", usage="echo-test")(lambda arg, config: Echo())
    try:
        call = asyncio.run(get_model("echo-test").generate(Request(messages=[{"role": "user", "content": "hi"}])))
        assert call.text == "HI" and call.spec == "echo-test" and call.completion.cost_usd == 0.0
        assert call.completion.usage_estimated and call.completion.prompt_tokens == 1  # at least 1 for any text
    finally:
        PROVIDERS.pop("echo-test")


def test_parse_spec_and_unknown_options():
    assert parse_spec(" openai:gpt-4o@http://h:1/v1 ") == ("openai", "gpt-4o@http://h:1/v1")
    with pytest.raises(ValueError, match="unknown model option"):
        get_model("random", max_conections=3)


# ------------------------------------------------------------------ offline backends through the wrapper
@pytest.mark.parametrize("spec", ["random", "chaos:0", "heuristic"])
def test_offline_backends_are_free_estimated_and_recorded_alike(spec, tmp_path):
    with Run(tmp_path) as run:
        result = asyncio.run(play_game(GameConfig(seed=4, model=spec, max_days=2), run))
    calls = load(tmp_path).calls
    assert len(calls) == result.log.calls > 10
    assert (calls["cost_usd"] == 0).all() and calls["usage_estimated"].all() and (calls["attempts"] == 1).all()
    assert (calls["spec"] == spec).all() and calls["base_url"].isna().all()
    assert result.log.cost_usd == 0.0 and result.log.prompt_tokens == int(calls["prompt_tokens"].sum())


def test_scripted_backend_answers_in_order_then_fails_cleanly(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"answers": [{"target": "Player2"}, "not json"]}))
    m = get_model(f"scripted:{path}")

    async def three():
        return [await m.generate(req(game_id="g")) for _ in range(3)]

    first, second, third = asyncio.run(three())
    assert json.loads(first.text) == {"target": "Player2"} and second.text == "not json"
    assert third.completion is None and "no scripted answer" in third.error and len(third.attempts) == 1
    assert third.attempts[0].error_kind == "error" and third.n_attempts == 1


def test_the_same_seed_draws_the_same_random_answer():
    m = get_model("random")
    a = asyncio.run(m.generate(req(sampling=Sampling(seed=1), replay_key="k")))
    b = asyncio.run(m.generate(req(sampling=Sampling(seed=1), replay_key="k")))
    texts = {asyncio.run(m.generate(req(sampling=Sampling(seed=s), replay_key="k"))).text for s in range(20)}
    assert a.text == b.text and texts == {'{"target": "Player1"}', '{"target": "Player2"}'}


def test_replay_answers_from_rows_given_to_it():
    from toolkit.llm.offline import ReplayBackend

    rows = [{"replay_key": "k", "response_text": "first", "error": None},
            {"replay_key": "k", "response_text": None, "error": "boom"}]
    m = Model("replay:x", ReplayBackend(rows))

    async def three():
        return [await m.generate(req(game_id="g", replay_key="k")) for _ in range(3)]

    one, two, three_ = asyncio.run(three())
    assert one.text == "first" and "replayed failure: boom" in two.error and "no recorded answer #3" in three_.error


def test_the_call_row_carries_the_whole_request(tmp_path):
    """Ids, day, phase, action, spec and the provider's model name: from the game to the row, whole."""
    with Run(tmp_path) as run:
        asyncio.run(play_game(GameConfig(seed=2, model="heuristic", temperature=0.4), run))
    t = load(tmp_path)
    calls, events = t.calls, t.events
    assert calls["day"].notna().all() and set(calls["phase"]) >= {"night", "day_speech", "day_vote"}
    # day and phase agree with the replay key the game gives every decision
    keys = calls["replay_key"].str.split("/", expand=True)
    assert (keys[3] == "d" + calls["day"].astype(str)).all() and (keys[4] == calls["phase"]).all()
    assert (keys[5] == calls["action"]).all() and (keys[2] == calls["seat"]).all()
    roles = t.players.set_index("seat")["role"]
    assert (calls["role"] == calls["seat"].map(roles)).all()
    assert (calls["temperature"] == 0.4).all() and (calls["model"] == "heuristic").all()
    # every vote event has a call of the same seat, day and phase
    votes = events[events["kind"] == "vote"]
    asked = set(zip(calls["seat"], calls["day"], calls["action"]))
    assert all((v.actor, v.day, "vote") in asked for v in votes.itertuples())


# ------------------------------------------------------------------ the wrapper's policies
class Flaky:
    """A backend that fails transiently ``n`` times, then answers (a real backend of this test)."""

    model = "flaky"
    base_url = "http://flaky.invalid/v1"

    def __init__(self, n, error=TransientError):
        self.n, self.error, self.seen = n, error, 0

    async def complete(self, request):
        self.seen += 1
        if self.seen <= self.n:
            raise self.error(f"fault {self.seen}", kind="server_error", status_code=503)
        return Completion('{"target": "Player1"}', self.model, prompt_tokens=10, completion_tokens=2)


def test_transient_failures_are_retried_by_the_wrapper_for_any_backend(tmp_path):
    from toolkit.llm import ModelConfig

    m = Model("flaky", Flaky(2), ModelConfig(**FAST))
    call = asyncio.run(m.generate(req(game_id="g")))
    assert call.text and call.n_attempts == 3 and [a.status_code for a in call.attempts] == [503, 503]
    with Run(tmp_path) as run:
        log = CallLog(run)
        call.seq = 7
        log.write(call)
    t = load(tmp_path)
    assert list(t.calls["attempts"]) == [3] and list(t.attempts["attempt"]) == [1, 2]
    assert set(t.attempts["call_id"]) == {"g-7"} and list(t.attempts["error"]) == ["fault 1", "fault 2"]


def test_final_errors_are_not_retried():
    from toolkit.llm import ModelConfig

    backend = Flaky(5, error=LLMError)
    call = asyncio.run(Model("flaky", backend, ModelConfig(**FAST)).generate(req()))
    assert backend.seen == 1 and call.completion is None and call.error == "fault 1"


def test_giving_up_names_the_endpoint_and_the_count():
    from toolkit.llm import ModelConfig

    call = asyncio.run(Model("flaky", Flaky(99), ModelConfig(**{**FAST, "max_attempts": 3})).generate(req()))
    assert call.error.startswith("flaky at http://flaky.invalid/v1: gave up after 3 attempts")


def test_nothing_listening_fails_fast_with_one_clear_error():
    """An endpoint that never answered and refuses connections: no retries, well under 5 seconds."""
    t0 = time.perf_counter()
    call = asyncio.run(get_model("openai:x@http://127.0.0.1:1/v1").generate(req()))
    assert time.perf_counter() - t0 < 5
    assert call.completion is None and "cannot connect" in call.error and len(call.attempts) == 1


def test_a_hosted_endpoint_without_a_key_is_refused_before_any_call(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ValueError, match="needs an API key"):
        get_model("openai:gpt-4o-mini")
    with pytest.raises(ValueError, match="base URL must look like"):
        get_model("openai:m@localhost:8000")
    assert get_model("openai:m@http://127.0.0.1:8000/v1").name == "m"  # loopback servers need no key


def test_credentials_in_a_url_never_reach_a_record(server, tmp_path):
    url = server.base_url.replace("http://", "http://alice:s3cret-pw@")
    assert mask_url(url) == server.base_url.replace("http://", "http://***:***@")
    with Run(tmp_path, config={"model": f"openai:ok@{url}"}) as run:
        asyncio.run(play_game(GameConfig(seed=1, model=f"openai:ok@{url}", max_days=1), run))
    text = "".join(p.read_text(errors="ignore") for p in tmp_path.rglob("*.jsonl"))
    text += "".join(pd.read_parquet(p).to_json() for p in tmp_path.rglob("*.parquet"))
    assert "s3cret-pw" not in text and "alice" not in text
    assert load(tmp_path).games.iloc[0]["n_fallbacks"] == 0  # the server answered: the URL was usable


def test_a_forked_game_costs_what_its_second_model_costs(server, tmp_path):
    """The free replay before the fork, the priced model after it: cost is read per call, never assumed."""
    from toolkit.werewolf.replay import replay_game

    with Run(tmp_path / "a") as run:
        result = asyncio.run(play_game(GameConfig(seed=3, model="heuristic"), run))
    spec = f"openai:gpt-4o-mini@{server.base_url}"
    with Run(tmp_path / "b") as run:
        asyncio.run(replay_game(tmp_path / "a", result.game_id, run, fork_at=20, model=spec))
    calls = load(tmp_path / "b").calls
    after = calls[calls["model"] == "gpt-4o-mini"]
    assert len(after) and (after["cost_usd"] > 0).all()
    assert (calls[calls["model"] != "gpt-4o-mini"]["cost_usd"] == 0).all()


def test_old_results_with_a_model_column_load_as_spec(tmp_path):
    folder = tmp_path / "old-run"
    folder.mkdir()
    (folder / "runs.jsonl").write_text(json.dumps({"run_id": "old"}) + "\n")
    (folder / "players.jsonl").write_text(json.dumps({"game_id": "g", "seat": "Player1", "model": "heuristic"}) + "\n")
    (folder / "sessions.jsonl").write_text(json.dumps({"session_id": "s", "model": "scripted:x"}) + "\n")
    t = load(tmp_path, complete_games=False)  # the game has no games row: partial, so asked for explicitly
    assert t.players.iloc[0]["spec"] == "heuristic" and t.sessions.iloc[0]["spec"] == "scripted:x"
    assert "model" not in t.players.columns and t.attempts.empty and list(t.beliefs.columns)[:2] == ["game_id", "seq"]


def test_build_passes_the_config_to_the_factory():
    from toolkit.llm import ModelConfig

    seen = {}
    register("cfg-test", usage="cfg-test")(lambda arg, config: seen.setdefault("config", config) or Flaky(0))
    try:
        build("cfg-test", ModelConfig(timeout_s=7))
        assert seen["config"].timeout_s == 7
    finally:
        PROVIDERS.pop("cfg-test")
