"""Spending caps (toolkit.llm.budget): the ledger shared by processes and reruns, the cap in ``play_games``
against the loopback server (real HTTP, a priced model), and the refusal of a dollar cap on an unpriced model."""

import asyncio
import multiprocessing

import pytest

from toolkit.llm.budget import Budget, BudgetError
from toolkit.record.load import load
from toolkit.record.run_log import Run
from toolkit.werewolf.game import CapReport, GameConfig, play_games


@pytest.fixture
def priced(prices):
    prices("det: {input: 1.0, output: 4.0}")


def _charge_many(ledger, n):
    budget = Budget(ledger, max_usd=100.0)
    for _ in range(n):
        budget.charge(0.001, 10)


@pytest.mark.slow
def test_the_ledger_is_shared_by_processes_and_read_incrementally(tmp_path):
    ledger = tmp_path / "spend.jsonl"
    procs = [multiprocessing.get_context("spawn").Process(target=_charge_many, args=(ledger, 200)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    reader = Budget(ledger, max_tokens=7000)
    usd, tokens = reader.spent()
    assert tokens == 3 * 200 * 10 and usd == pytest.approx(0.6)  # no line lost or torn by concurrent appends
    assert not reader.exhausted() and reader.left() == (None, 1000)
    assert reader.would_exceed(tokens=1001) and not reader.would_exceed(tokens=1000)
    Budget(ledger).charge(0.0, 1000)  # another process spends: the reader sees it on its next look
    assert reader.exhausted() and reader.left() == (None, 0)
    assert "6,000" not in reader.line() and "7,000 of 7,000 tokens (0 left)" in reader.line()


def test_a_damaged_or_half_written_line_is_not_counted_twice_or_at_all(tmp_path):
    ledger = tmp_path / "spend.jsonl"
    ledger.write_text('{"usd": 0.5, "tokens": 5}\nnot json\n{"usd": 0.25, "tok')
    budget = Budget(ledger, max_usd=1.0)
    assert budget.spent() == (0.5, 5)
    with open(ledger, "a") as handle:  # the writer finishes its line
        handle.write('ens": 3}\n')
    assert budget.spent() == (0.75, 8)


@pytest.mark.parametrize("kwargs, message", [
    ({"max_usd": 0}, "max_usd must be a positive number"), ({"max_usd": float("nan")}, "max_usd"),
    ({"max_tokens": 1.5}, "max_tokens must be a positive whole number"), ({"max_tokens": True}, "max_tokens"),
    ({"max_usd": 1, "at_cap": "pause"}, "at_cap must be one of stop, finish")])
def test_a_cap_that_cannot_work_is_one_line(tmp_path, kwargs, message):
    with pytest.raises(BudgetError, match=message):
        Budget.at(tmp_path, **kwargs)


def test_no_cap_is_no_budget(tmp_path):
    assert Budget.at(tmp_path) is None


def test_a_dollar_cap_on_an_unpriced_model_refuses_to_start(server, tmp_path):
    budget = Budget.at(tmp_path, max_usd=1.0)
    configs = [GameConfig(seed=0, model=f"openai:unpriced@{server.base_url}")]
    with pytest.raises(BudgetError, match="unpriced.* has none: add it to a TOOLKIT_PRICES file"):
        asyncio.run(play_games(configs, None, budget=budget))
    assert not server.requests  # nothing was asked


def test_a_token_cap_works_on_an_unpriced_model(server, tmp_path):
    budget = Budget.at(tmp_path, max_tokens=1)
    cap = CapReport()
    asyncio.run(play_games([GameConfig(seed=s, model=f"openai:det@{server.base_url}") for s in range(3)], None,
                           concurrency=1, budget=budget, cap=cap))
    assert cap.stopped == [0] and cap.skipped == [1, 2]


@pytest.mark.parametrize("at_cap", ["stop", "finish"])
@pytest.mark.slow
def test_the_cap_stops_new_games_and_a_rerun_with_a_higher_cap_continues(server, tmp_path, priced, at_cap):
    spec = f"openai:det@{server.base_url}"
    configs = lambda seeds: [GameConfig(seed=s, model=spec) for s in seeds]  # noqa: E731
    budget = Budget.at(tmp_path, max_usd=0.02, at_cap=at_cap)
    cap = CapReport()
    with Run(tmp_path, "capped") as run:
        results = asyncio.run(play_games(configs(range(6)), run, concurrency=2, budget=budget, cap=cap))
    spent_first, _ = budget.spent()
    assert spent_first >= 0.02 and cap.reached
    assert len(results) + len(cap.stopped) + len(cap.skipped) == 6
    if at_cap == "stop":
        assert cap.stopped and not results  # the two in flight stopped unfinished: no games row
    else:
        assert not cap.stopped and len(results) == 2  # the two in flight finished
    # The ledger holds every call that was paid for, games rows or not.
    calls = load(tmp_path, complete_games=False).calls
    assert Budget(tmp_path / "spend.jsonl").spent()[0] == pytest.approx(calls["cost_usd"].sum())
    done = {r.seed for r in results}

    higher = Budget.at(tmp_path, max_usd=10.0, at_cap=at_cap)
    assert higher.spent()[0] == pytest.approx(spent_first)  # continues from what was spent
    with Run(tmp_path, "rerun") as run:
        more = asyncio.run(play_games(configs(s for s in range(6) if s not in done), run, concurrency=2,
                                      budget=higher))
    games = load(tmp_path, complete_games=True).games
    assert sorted(games["seed"]) == list(range(6))  # every game once: none lost, none twice
    assert len(more) == 6 - len(done)
    assert higher.spent()[0] == pytest.approx(load(tmp_path, complete_games=False).calls["cost_usd"].sum())


def test_the_last_line_says_how_many_calls_it_counts_at_their_estimate(tmp_path):
    """Calls reserved and never settled (in flight at a ``kill -9``) stay at their estimate, which may under-state
    the bill by their answers' tokens: the line says how many (review42 s16 F3; on the code before it did not)."""
    budget = Budget(tmp_path / "spend.jsonl", max_usd=1.0)
    budget.reserve(0.001, 100, "det").settle(0.002, 150)  # answered: its cost replaces the estimate
    assert "unknown outcome" not in budget.line()
    budget.reserve(0.001, 100, "det")  # killed in flight: never settled
    budget.reserve(0.001, 100, "det")
    rerun = Budget(tmp_path / "spend.jsonl", max_usd=1.0)  # the study's rerun reads the ledger
    assert rerun.spent() == (pytest.approx(0.004), 350)
    assert "; 2 calls of unknown outcome counted at their estimate (in flight at a kill or cut by an endpoint's " \
           "deadline;" in rerun.line()


@pytest.mark.slow  # 3 s: the deadline (a first request on a busy machine), and the server waits for it at shutdown
def test_a_call_the_deadline_cut_before_its_request_went_out_is_settled_at_nothing(tmp_path, prices):
    """Two calls on one hanging endpoint that allows one request at a time (``max_connections=1``): at the
    endpoint's deadline the first call's request is out (its outcome never known: pending at its estimate), the
    second is still queued at the gate, never sent: settled at 0. On the code before (diff read s19, M3) both
    stayed pending for ever, so a dead endpoint with games queued behind its gate shrank a cap by calls never
    sent, on every rerun."""
    import json

    from toolkit.llm import Request, get_model
    from toolkit.llm.budget import spending
    from toolkit.llm.health import EndpointHealth
    from toolkit.testing.loopback_server import FakeOpenAIServer

    prices("hang: {input: 1.0, output: 4.0}")
    budget = Budget(tmp_path / "spend.jsonl", max_usd=5.0)
    with FakeOpenAIServer() as server:
        model = get_model(f"openai:hang@{server.base_url}", max_connections=1, rate_adaptive=False, timeout_s=30)
        # built here with a deadline shorter than the timeout (health_of would raise it to 1.5 x): the cut comes
        # while the first request hangs
        health = EndpointHealth("hang", 3.0, model.base_url)

        async def both():
            with spending(budget):
                return await asyncio.gather(*(health.generate(model, Request(messages=[
                    {"role": "user", "content": f"call {i}"}])) for i in range(2)))

        calls = asyncio.run(both())
        sent = len(server.requests)
    assert sent == 1 and [c.attempts[-1].error_kind for c in calls] == ["deadline", "deadline"]
    # calls.attempts counts requests made: the cut one's out at the cut; none of the queued one (review s19, 7:
    # the deadline row counted as a request whatever was out)
    assert [c.n_attempts for c in calls] == [1, 0]
    lines = [json.loads(x) for x in (tmp_path / "spend.jsonl").read_text().splitlines() if x.strip()]
    pending = [x for x in lines if "pending" in x]
    settled = {x["settles"]: x["usd"] for x in lines if "settles" in x}
    assert len(pending) == 2 and list(settled.values()) == [0.0]  # the queued one, at 0
    (kept,) = [x for x in pending if x["pending"] not in settled]
    assert budget.spent()[0] == pytest.approx(kept["usd"]) and kept["usd"] > 0
    assert "; 1 call of unknown outcome counted at" in budget.line()
