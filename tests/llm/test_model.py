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
from toolkit.llm import (Backend, Completion, LLMError, Model, Request, Sampling, TransientError, get_model, mask_url,
                         register)
from toolkit.llm.registry import PROVIDERS, build, parse_spec
from toolkit.record.run_log import CallLog, Run
from toolkit.record.load import load
from toolkit.werewolf.game import GameConfig, play_game
import base64
import subprocess
import sys
from toolkit.testing.loopback_server import FakeOpenAIServer
from toolkit.llm import (Attempt, Call, ModelConfig, cost_usd)
from toolkit.llm import model as model_module
from toolkit.llm import openai_backend
from toolkit.llm.openai_backend import is_local, schema_instruction, split_credentials, tool_name
from toolkit.llm.registry import known_specs

SCHEMA = {"type": "object", "properties": {"target": {"enum": ["Player1", "Player2"]}}, "required": ["target"]}


def req(**kw):
    return Request(messages=[{"role": "user", "content": "pick one " * 10}], schema=SCHEMA, **kw)


# ------------------------------------------------------------------ the registry
def test_every_documented_spec_is_known():
    from toolkit.llm.registry import prefixes

    assert {"openai", "local", "random", "scripted", "chaos", "replay", "heuristic", "mixed"} <= set(prefixes())


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


def test_a_backend_registered_at_run_time_is_found():
    class Echo(Backend):
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
@pytest.mark.slow
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


@pytest.mark.slow
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
class Flaky(Backend):
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
    """An endpoint that never answered and refuses connections: no retries (one attempt)."""
    call = asyncio.run(get_model("openai:x@http://127.0.0.1:1/v1").generate(req()))
    assert call.completion is None and "cannot connect" in call.error and len(call.attempts) == 1


def test_a_hosted_endpoint_without_a_key_is_refused_before_any_call(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ValueError, match="needs an API key"):
        get_model("openai:gpt-4o-mini")
    with pytest.raises(ValueError, match="base URL must look like"):
        get_model("openai:m@localhost:8000")
    assert get_model("openai:m@http://127.0.0.1:8000/v1").name == "m"  # loopback servers need no key


@pytest.mark.slow
def test_credentials_in_a_url_never_reach_a_record(server, tmp_path):
    url = server.base_url.replace("http://", "http://alice:s3cret-pw@")
    assert mask_url(url) == server.base_url.replace("http://", "http://***:***@")
    with Run(tmp_path, config={"model": f"openai:ok@{url}"}) as run:
        asyncio.run(play_game(GameConfig(seed=1, model=f"openai:ok@{url}", max_days=1), run))
    text = "".join(p.read_text(errors="ignore") for p in tmp_path.rglob("*.jsonl"))
    text += "".join(pd.read_parquet(p).to_json() for p in tmp_path.rglob("*.parquet"))
    assert "s3cret-pw" not in text and "alice" not in text
    assert load(tmp_path).games.iloc[0]["n_fallbacks"] == 0  # the server answered: the URL was usable


@pytest.mark.slow
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


SCHEMA = {"type": "object", "properties": {"target": {"enum": ["Player1", "Player2"]}}, "required": ["target"]}


# ------------------------------------------------------------------ configuration
def test_config_reads_toolkit_variables_and_options_win(monkeypatch):
    monkeypatch.setenv("TOOLKIT_MAX_CONNECTIONS", "3")
    monkeypatch.setenv("TOOLKIT_TIMEOUT_S", "2.5")
    monkeypatch.setenv("TOOLKIT_MAX_ATTEMPTS", "4")
    monkeypatch.setenv("TOOLKIT_CACHE_DIR", "/tmp/somewhere")
    c = ModelConfig.from_env()
    assert (c.max_connections, c.timeout_s, c.max_attempts, c.cache_dir) == (3, 2.5, 4, "/tmp/somewhere")
    assert isinstance(c.max_connections, int) and isinstance(c.timeout_s, float)
    c = ModelConfig.from_env(max_connections=9, timeout_s=None, backoff_max_s=1.0)
    assert (c.max_connections, c.timeout_s, c.backoff_max_s) == (9, 2.5, 1.0)  # None means "not given"
    monkeypatch.setenv("TOOLKIT_MAX_ATTEMPTS", "")
    assert ModelConfig.from_env().max_attempts == ModelConfig().max_attempts  # empty is unset


def test_bad_variables_and_unknown_options_say_what_is_wrong(monkeypatch):
    monkeypatch.setenv("TOOLKIT_MAX_CONNECTIONS", "many")
    with pytest.raises(ValueError, match=r"TOOLKIT_MAX_CONNECTIONS='many' is not a valid int"):
        ModelConfig.from_env()
    monkeypatch.delenv("TOOLKIT_MAX_CONNECTIONS")
    with pytest.raises(ValueError, match=r"unknown model option\(s\) colour, speed; options are backoff_initial_s"):
        ModelConfig.from_env(speed=1, colour="red")


# ------------------------------------------------------------------ prices and cost
def test_cost_is_per_million_tokens_with_a_cached_rate():
    prices = {"m": {"input": 2.0, "output": 8.0, "cached_input": 0.5}, "plain": {"input": 1.0, "output": 1.0}}
    assert cost_usd("m", 1000, 500, prices=prices) == pytest.approx((1000 * 2 + 500 * 8) / 1e6)
    assert cost_usd("m", 1000, 500, 400, prices=prices) == pytest.approx((600 * 2 + 400 * 0.5 + 500 * 8) / 1e6)
    assert cost_usd("m", 100, 0, 5000, prices=prices) == pytest.approx(100 * 0.5 / 1e6)  # cached ≤ prompt
    assert cost_usd("plain", 100, 0, 100, prices=prices) == pytest.approx(100 / 1e6)  # no cached rate: input
    assert cost_usd("unpriced", 10, 10, prices=prices) is None
    assert cost_usd("gpt-4o", 1_000_000, 1_000_000) == pytest.approx(12.5)  # the shipped table


def test_a_prices_file_adds_and_overrides_entries(tmp_path, monkeypatch):
    extra = tmp_path / "prices.yaml"
    extra.write_text("gpt-4o: {input: 1.0, output: 1.0}\nmy-model: {input: 3.0, output: 4.0}\n")
    prices = model_module.load_prices(str(extra))
    assert prices["gpt-4o"] == {"input": 1.0, "output": 1.0} and prices["my-model"]["output"] == 4.0
    assert prices["gpt-4o-mini"]["input"] == 0.15  # the shipped entries stay
    monkeypatch.setenv("TOOLKIT_PRICES", str(extra))
    model_module.load_prices.cache_clear()  # the table is read once per process
    try:
        assert cost_usd("my-model", 1_000_000, 1_000_000) == pytest.approx(7.0)
    finally:
        monkeypatch.delenv("TOOLKIT_PRICES")
        model_module.load_prices.cache_clear()
    assert cost_usd("my-model", 1, 1) is None


@pytest.mark.slow
def test_toolkit_prices_prices_a_call_in_a_fresh_process(tmp_path):
    extra = tmp_path / "prices.yaml"
    extra.write_text("mine: {input: 1000000, output: 0}\n")
    code = ("import asyncio; from toolkit.llm import Backend, Completion, Model, Request\n"
            "class B(Backend):\n  model = 'x'\n"
            "  async def complete(self, r): return Completion('hi', 'mine', prompt_tokens=3, completion_tokens=1)\n"
            "print(asyncio.run(Model('b', B()).generate(Request())).completion.cost_usd)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(__import__("pathlib").Path(__file__)
                                                                        .resolve().parents[2]),
                              "TOOLKIT_PRICES": str(extra)})
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) == pytest.approx(3.0)


# ------------------------------------------------------------------ the call record
def test_the_calls_row_and_attempt_rows(tmp_path):
    r = Request(messages=[{"role": "user", "content": "héllo"}], sampling=Sampling(temperature=0.7), session_id="s1",
                seat="engineer", day=None, action="step", replay_key="s1/step/3")
    c = Completion("", "gpt-x", base_url="http://u:pw@h:1/v1?api_key=k", prompt_tokens=5, completion_tokens=2,
                   cost_usd=0.25, tool_calls=[{"name": "Editor.open_file", "arguments": '{"path": "a.py"}'}])
    call = Call(r, "openai:gpt-x@h", "asked-name", None, "2026-01-01T00:00:00Z", completion=c, seq=3, ok=True,
                attempts=[Attempt(1, "rate_limit", 429, "slow down", 1.5)])
    row = call.row("run-1")
    assert row["call_id"] == "s1-3" and row["run_id"] == "run-1" and row["game_id"] is None
    assert row["model"] == "gpt-x" and row["base_url"] == "http://***:***@h:1/v1?api_key=***"
    assert json.loads(row["messages"]) == r.messages and "héllo" in row["messages"]  # not \u-escaped
    assert json.loads(row["response_text"]) == {"content": "", "tool_calls": c.tool_calls}
    assert row["attempts"] == 2 and row["temperature"] == 0.7 and row["cost_usd"] == 0.25
    assert row["replay_key"] == "s1/step/3" and row["cache_hit"] is False
    assert call.attempt_rows() == [{"call_id": "s1-3", "attempt": 1, "error_kind": "rate_limit", "status_code": 429,
                                    "error": "slow down", "latency_ms": 1.5}]
    from toolkit.record.tables import TABLES
    assert list(row) == list(TABLES["calls"])  # the row is the table, column for column
    assert list(call.attempt_rows()[0]) == list(TABLES["attempts"])


def test_a_failed_call_row_has_no_usage_and_the_wrapper_model_name():
    call = Call(Request(game_id="g"), "spec", "asked", "http://h/v1", "t", error="boom",
                attempts=[Attempt(1, "error", None, "boom", 0.1)])
    row = call.row(None)
    assert row["model"] == "asked" and row["base_url"] == "http://h/v1" and row["response_text"] is None
    assert all(row[k] is None for k in ("prompt_tokens", "completion_tokens", "cost_usd", "usage_estimated"))
    assert row["cache_hit"] is False and row["attempts"] == 1 and row["call_id"] == "g-0"
    hit = Call(Request(), "s", "m", None, "t", completion=Completion("x", "m", cache_hit=True))
    assert hit.n_attempts == 0 and hit.row(None)["call_id"] == "-0"


class Fixed(Backend):
    """A backend answering one completion (built per call), optionally reporting its usage."""

    def __init__(self, model="gpt-4o-mini", usage=None, free=False, cost=None):
        self.model, self.usage, self.free, self.cost = model, usage, free, cost

    async def complete(self, request):
        p, c = self.usage or (None, None)
        return Completion("abcdefghijkl", self.model, prompt_tokens=p, completion_tokens=c, cost_usd=self.cost)


def test_usage_is_estimated_only_where_missing_and_priced():
    r = Request(messages=[{"role": "system", "content": "x" * 40}, {"role": "user", "content": "y" * 60},
                          {"role": "assistant", "content": None}])
    est = asyncio.run(Model("f", Fixed()).generate(r)).completion
    assert (est.prompt_tokens, est.completion_tokens, est.usage_estimated) == (25, 3, True)
    assert est.cost_usd == pytest.approx((25 * 0.15 + 3 * 0.60) / 1e6)
    real = asyncio.run(Model("f", Fixed(usage=(7, 9))).generate(r)).completion
    assert (real.prompt_tokens, real.completion_tokens, real.usage_estimated) == (7, 9, False)
    assert asyncio.run(Model("f", Fixed(free=True)).generate(r)).completion.cost_usd == 0.0
    assert asyncio.run(Model("f", Fixed(cost=1.5)).generate(r)).completion.cost_usd == 1.5  # backend's own price
    assert asyncio.run(Model("f", Fixed(model="nobody-prices-me")).generate(r)).completion.cost_usd is None


# ------------------------------------------------------------------ the retry policy
class Script(Backend):
    """A backend that raises the given errors in turn, then answers (a real backend of this test)."""

    def __init__(self, *errors, base_url=None):
        self.model, self.base_url, self.errors, self.seen = "script", base_url, list(errors), 0

    async def complete(self, request):
        self.seen += 1
        if self.errors:
            raise self.errors.pop(0)
        return Completion("done", self.model, prompt_tokens=1, completion_tokens=1)


def test_retry_after_is_honoured_but_capped():
    b = Script(TransientError("busy", kind="rate_limit", status_code=429, retry_after=30.0))
    m = Model("s", b, ModelConfig(**{**FAST, "retry_after_cap_s": 0.05}))
    t0 = time.perf_counter()
    call = asyncio.run(m.generate(Request()))
    assert call.text == "done" and call.n_attempts == 2 and time.perf_counter() - t0 >= 0.05  # it did wait
    assert m._delay(TransientError("busy", retry_after=30.0), 1) == 0.05  # the cap, not the 30 s asked
    assert call.attempts[0].error_kind == "rate_limit" and call.attempts[0].status_code == 429


def test_a_final_error_during_retries_stops_them_and_is_the_error():
    b = Script(TransientError("t1", kind="server_error"), TransientError("t2", kind="timeout"),
               LLMError("bad request", kind="http_error", status_code=400), TransientError("never reached"))
    call = asyncio.run(Model("s", b, ModelConfig(**FAST)).generate(Request()))
    assert b.seen == 3 and call.completion is None and call.error == "bad request"
    assert [(a.attempt, a.error_kind) for a in call.attempts] == [(1, "server_error"), (2, "timeout"),
                                                                  (3, "http_error")]
    assert call.n_attempts == 3


def test_one_attempt_means_no_retry():
    b = Script(TransientError("t1"))
    call = asyncio.run(Model("s", b, ModelConfig(**{**FAST, "max_attempts": 1})).generate(Request()))
    assert b.seen == 1 and call.error == "script: gave up after 1 attempts: t1"


def test_the_total_wait_bounds_the_retries():
    b = Script(*[TransientError(f"t{i}") for i in range(100)])
    config = ModelConfig(backoff_initial_s=0.05, backoff_max_s=0.05, max_attempts=100, max_total_wait_s=0.3)
    call = asyncio.run(Model("s", b, config).generate(Request()))
    assert call.completion is None and "gave up after" in call.error
    assert 3 <= b.seen < 20 and len(call.attempts) == b.seen


def test_a_refused_connection_is_retried_only_where_an_endpoint_answered_before():
    url = f"http://refuse-{time.time_ns()}.invalid/v1"
    refused = lambda: TransientError("connection refused", kind="refused")  # noqa: E731
    never = Script(refused(), base_url=url)
    call = asyncio.run(Model("s", never, ModelConfig(**FAST)).generate(Request()))
    assert never.seen == 1 and "cannot connect (is a server listening there?)" in call.error
    assert asyncio.run(Model("s", Script(base_url=url), ModelConfig(**FAST)).generate(Request())).text == "done"
    again = Script(refused(), refused(), base_url=url)  # it answered once: a refusal is now a blip
    call = asyncio.run(Model("s", again, ModelConfig(**FAST)).generate(Request()))
    assert call.text == "done" and again.seen == 3 and [a.error_kind for a in call.attempts] == ["refused"] * 2


class Slow(Backend):
    """Counts how many requests it is serving at once."""

    def __init__(self, base_url):
        self.model, self.base_url, self.active, self.peak = "slow", base_url, 0, 0

    async def complete(self, request):
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.02)
        self.active -= 1
        return Completion("x", self.model)


def test_the_concurrency_cap_is_per_endpoint_and_only_for_endpoints():
    async def peaks():
        capped = Slow(f"http://cap-{time.time_ns()}.invalid/v1")
        other = Slow(f"http://other-{time.time_ns()}.invalid/v1")
        local = Slow(None)
        config = ModelConfig(max_connections=3)
        m1, m2 = Model("a", capped, config), Model("b", capped, config)  # two models, one endpoint
        await asyncio.gather(*(m.generate(Request()) for m in [m1, m2] * 5),
                             *(Model("c", other, config).generate(Request()) for _ in range(5)),
                             *(Model("d", local, config).generate(Request()) for _ in range(8)))
        return capped.peak, other.peak, local.peak

    assert asyncio.run(peaks()) == (3, 3, 8)


# ------------------------------------------------------------------ the registry and the request
def test_optional_arguments_and_the_usage_list():
    seen = []
    register("opt-test", usage="opt-test[:N]", arg="optional")(lambda arg, config: seen.append(arg) or Fixed())
    try:
        build("opt-test", ModelConfig())
        build("opt-test:5", ModelConfig())
        assert seen == ["", "5"] and "opt-test[:N]" in known_specs()
        assert get_model("  opt-test:7  ").spec == "opt-test:7"  # the spec is kept trimmed
    finally:
        PROVIDERS.pop("opt-test")
    assert "opt-test" not in known_specs()


def test_request_but_copies_and_leaves_the_original():
    r = Request(messages=[{"role": "user", "content": "a"}], game_id="g", seat="Player1", sampling=Sampling(seed=3))
    s = r.but(seat="Player2", action="vote")
    assert (r.seat, r.action) == ("Player1", None) and (s.seat, s.action, s.game_id, s.sampling.seed) == (
        "Player2", "vote", "g", 3)
    assert s == Request(messages=r.messages, game_id="g", seat="Player2", action="vote", sampling=Sampling(seed=3))
    assert Request(session_id="sess").context_id == "sess" and Request(game_id="g", session_id="s").context_id == "g"


# ------------------------------------------------------------------ the OpenAI-compatible transport
def test_split_credentials_builds_a_basic_header_and_a_clean_url():
    url, headers = split_credentials("http://alice:p%40ss%3Aword@example.org:8080/v1?x=1")
    assert url == "http://example.org:8080/v1?x=1"
    assert base64.b64decode(headers["Authorization"].removeprefix("Basic ")) == b"alice:p@ss:word"
    url, headers = split_credentials("https://token123@api.example.org/v1")
    assert url == "https://api.example.org/v1" and headers == {
        "Authorization": "Basic " + base64.b64encode(b"token123:").decode()}
    assert split_credentials("http://127.0.0.1:9/v1") == ("http://127.0.0.1:9/v1", None)


def test_split_credentials_keeps_an_ipv6_host():
    assert split_credentials("http://u:p@[::1]:8000/v1")[0] == "http://[::1]:8000/v1"


@pytest.mark.parametrize("url, local", [
    ("http://localhost:8000/v1", True), ("http://LOCALHOST/v1", True), ("http://127.0.0.1:1/v1", True),
    ("http://[::1]:8000/v1", True), ("http://10.1.2.3/v1", True), ("http://192.168.0.7:11434/v1", True),
    ("http://172.16.5.5/v1", True), ("https://api.openai.com/v1", False), ("http://8.8.8.8/v1", False),
    ("http://localhost.example.com/v1", False)])
def test_is_local(url, local):
    assert is_local(url) is local


def test_a_private_network_server_needs_no_key_and_a_hosted_one_with_credentials_needs_none(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    assert get_model("openai:m@http://192.168.1.20:8000/v1").backend._api_key == "no-key"
    hosted = get_model("openai:m@https://user:pw-123456@llm.example.org/v1").backend
    assert hosted.base_url == "https://llm.example.org/v1" and hosted._headers["Authorization"].startswith("Basic ")
    assert hosted.endpoint == "https://llm.example.org/v1"
    with pytest.raises(ValueError, match="needs a model name"):
        get_model("openai:@http://127.0.0.1:1/v1")


async def test_native_tool_calls_round_trip(server):
    """Dotted tool names travel as ``A__b`` and come back dotted; arguments as the JSON text sent."""
    m = get_model(f"openai:toolcall@{server.base_url}", **FAST)
    tools = [{"name": "Editor.open_file", "description": "open a file",
              "parameters": {"type": "object", "properties": {"path": {"enum": ["a.py", "b.py"]}},
                             "required": ["path"]}},
             {"name": "end", "description": "finish"}]
    call = await m.generate(Request(messages=[{"role": "user", "content": "go"}], tools=tools, schema=SCHEMA,
                                    session_id="s"))
    sent = server.requests[-1]
    assert [t["function"]["name"] for t in sent["tools"]] == ["Editor__open_file", "end"]
    assert sent["tools"][1]["function"]["parameters"] == {"type": "object"} and "response_format" not in sent
    tc = call.completion.tool_calls
    assert [c["name"] for c in tc] == ["Editor.open_file"] and json.loads(tc[0]["arguments"])["path"] in (
        "a.py", "b.py")
    assert json.loads(call.row(None)["response_text"]) == {"content": "turn 1", "tool_calls": tc}
    second = await m.generate(Request(messages=[{"role": "user", "content": "go"}], tools=tools))
    assert second.completion.tool_calls == [{"name": "end", "arguments": "{}"}]
    assert tool_name("A.b.c") == "A__b__c"


async def test_sampling_and_the_default_max_tokens_reach_the_wire(server):
    m = get_model(f"openai:ok@{server.base_url}", **FAST, max_tokens=77)
    await m.generate(Request(messages=[{"role": "user", "content": "a"}],
                             sampling=Sampling(temperature=0.0, seed=5)))
    await m.generate(Request(messages=[{"role": "user", "content": "b"}], sampling=Sampling(max_tokens=12)))
    first, second = server.requests
    assert (first["temperature"], first["seed"], first["max_tokens"]) == (0.0, 5, 77)  # 0.0 is sent, not dropped
    assert second["max_tokens"] == 12 and "temperature" not in second and "seed" not in second
    assert first["messages"] == [{"role": "user", "content": "a"}] and first["model"] == "ok"


async def test_schema_in_prompt_is_remembered_per_endpoint():
    with FakeOpenAIServer(seed=2) as a, FakeOpenAIServer(seed=3) as b:
        openai_backend._SCHEMA_IN_PROMPT.discard(a.base_url)
        msgs = [{"role": "user", "content": "pick"}]
        call = await get_model(f"openai:noschema@{a.base_url}", **FAST).generate(Request(messages=msgs, schema=SCHEMA))
        await get_model(f"openai:ok@{b.base_url}", **FAST).generate(Request(messages=msgs, schema=SCHEMA))
        # the fallback is one call of two requests: the refused one is an attempts row (review s19, 2)
        assert call.text == "ok" and call.n_attempts == 2 and [a.error_kind for a in call.attempts] == [
            "schema_refused"]
        retried = a.requests[-1]
        assert retried["messages"] == [{"role": "system", "content": schema_instruction(SCHEMA)}, *msgs]
        assert json.loads(schema_instruction(SCHEMA).split("\n", 1)[1]) == SCHEMA
        assert b.requests[-1]["response_format"]["json_schema"] == {"name": "answer", "schema": SCHEMA}
        assert b.base_url not in openai_backend._SCHEMA_IN_PROMPT


async def test_a_400_about_something_else_is_final(server):
    call = await get_model(f"openai:400@{server.base_url}", **FAST).generate(Request(schema=SCHEMA))
    assert call.completion is None and len(server.requests) == 1 and "HTTP 400" in call.error
    assert server.base_url not in openai_backend._SCHEMA_IN_PROMPT
