"""Prices and parameters for the models of the day (issue 42): the reasoning models people run through
OpenAI-compatible endpoints have a dated price (reasoning tokens at the output price; snapshot and vendor-prefixed
names found); an object-valued parameter (``reasoning={"effort":"high"}``, OpenRouter's form) is sent as an
object, from a spec and from a ``models:`` block; ``extra_body`` (an SDK argument) is unwrapped with a warning;
a truncated answer is an ``attempts`` row. Real HTTP to the loopback server."""

from __future__ import annotations

import asyncio
import warnings

import pytest

from toolkit.core.files import models_block
from toolkit.llm import Request, get_model
from toolkit.llm.budget import Budget, BudgetError
from toolkit.llm.prices import DEFAULT_PRICES, cost_usd, price_of
from toolkit.llm.spec import spec_params

REASONING = ["o1", "o3", "o3-mini", "o4-mini", "gpt-5", "gpt-5-mini", "gpt-5-nano", "deepseek-reasoner",
             "deepseek-chat", "qwen3-235b-a22b", "claude-sonnet-4", "anthropic/claude-sonnet-4",
             "anthropic/claude-opus-4.1", "gemini-2.5-pro", "google/gemini-2.5-flash"]


@pytest.mark.parametrize("name", REASONING)
def test_the_reasoning_models_of_the_day_have_a_price(name):
    assert price_of(name) is not None


def test_the_price_file_says_its_date_and_source_and_how_to_override_it():
    text = DEFAULT_PRICES.read_text()
    assert "as of 2025-10" in text and "platform.openai.com/docs/pricing" in text and "CHECK" in text
    assert "TOOLKIT_PRICES=" in text


def test_a_snapshot_or_a_vendor_prefix_finds_the_model_s_price():
    assert price_of("gpt-5-2025-08-07") == price_of("gpt-5")  # what an endpoint answers as the model's name
    assert price_of("claude-sonnet-4-20250514") == price_of("claude-sonnet-4")
    assert price_of("openai/o4-mini") == price_of("o4-mini") and price_of("nobody/unknown-model") is None


def test_reasoning_tokens_are_billed_at_the_output_price():
    p = price_of("o4-mini")
    assert cost_usd("o4-mini", 1000, 100, reasoning_tokens=900) == pytest.approx(
        (1000 * p["input"] + (100 + 900) * p["output"]) / 1e6)  # counted apart: added to the output


def test_a_dollar_cap_starts_on_a_reasoning_model(tmp_path, server):
    budget = Budget(tmp_path / "spend.jsonl", max_usd=1.0)
    budget.check_prices([get_model(f"openai:o4-mini@{server.base_url}?reasoning_effort=high")])  # no refusal
    with pytest.raises(BudgetError):
        budget.check_prices([get_model(f"openai:unpriced-model@{server.base_url}")])


def ask(model, text="hello"):
    return asyncio.run(model.generate(Request(messages=[{"role": "user", "content": text}])))


def test_an_object_valued_parameter_is_sent_as_an_object(server):
    spec = f'openai:ok@{server.base_url}?reasoning={{"effort":"high","exclude":false}}&reasoning_effort=high'
    assert spec_params(spec)["reasoning"] == {"effort": "high", "exclude": False}
    call = ask(get_model(spec))
    assert call.completion is not None
    assert server.requests[-1]["reasoning"] == {"effort": "high", "exclude": False}
    assert '"reasoning": {"effort": "high"' in call.row(None)["params"]


def test_bad_json_in_a_parameter_is_one_line():
    with pytest.raises(ValueError, match=r"reasoning=.*is not valid JSON") as exc:
        spec_params('openai:m@http://127.0.0.1:9/v1?reasoning={"effort":high}')
    assert "\n" not in str(exc.value)


def test_a_models_block_entry_may_carry_an_object(server):
    block = models_block({"o4-high": {"spec": f"openai:ok@{server.base_url}", "reasoning": {"effort": "high"},
                                      "stop": ["a&b", "50%"]}})
    params = spec_params(block["o4-high"])
    assert params == {"reasoning": {"effort": "high"}, "stop": ["a&b", "50%"]}
    ask(get_model(block["o4-high"]))
    assert server.requests[-1]["reasoning"] == {"effort": "high"} and server.requests[-1]["stop"] == ["a&b", "50%"]


def test_extra_body_is_an_sdk_argument_its_fields_are_sent_with_a_warning(server):
    spec = f'openai:ok@{server.base_url}?extra_body={{"reasoning":{{"effort":"low"}}}}'
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        params = spec_params(spec)
    assert params == {"reasoning": {"effort": "low"}}
    assert any("extra_body is an argument of the OpenAI Python SDK" in str(w.message) for w in seen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ask(get_model(spec))
    assert "extra_body" not in server.requests[-1] and server.requests[-1]["reasoning"] == {"effort": "low"}


@pytest.mark.parametrize("name", ["extra_headers", "extra_query", "timeout"])
def test_other_sdk_arguments_are_refused_in_one_line(name):
    with pytest.raises(ValueError, match=f"{name} is an argument of the OpenAI Python SDK"):
        spec_params(f"openai:m@http://127.0.0.1:9/v1?{name}=1")


def test_a_truncated_answer_is_an_attempts_row(server):
    call = ask(get_model(f"openai:reason:1@{server.base_url}"))
    assert call.completion.finish_reason == "length"
    rows = call.attempt_rows()
    assert [r["error_kind"] for r in rows] == ["truncated"] and rows[0]["status_code"] == 200
    assert "cut at the output token limit" in rows[0]["error"]
    assert call.row(None)["attempts"] == 1  # one request made: the truncated answer is not counted twice
