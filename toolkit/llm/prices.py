"""What a model's tokens cost: the price table (``prices.yaml`` beside this module, dated, with its sources; a
``TOOLKIT_PRICES`` file adds or overrides entries), a model's price by its name as an endpoint answers it, and
a call's cost (reasoning tokens at the output price). A model without a price costs None (unknown), never 0.
"""

from __future__ import annotations

import math
import os
import re
from functools import lru_cache
from pathlib import Path

import yaml

DEFAULT_PRICES = Path(__file__).with_name("prices.yaml")


@lru_cache(maxsize=8)
def load_prices(path: str | None = None) -> dict[str, dict[str, float]]:
    """USD per million tokens by model name; ``TOOLKIT_PRICES`` (a YAML file) adds or overrides entries."""
    prices = yaml.safe_load(DEFAULT_PRICES.read_text()) or {}
    extra = path or os.environ.get("TOOLKIT_PRICES")
    if extra:
        prices.update(read_prices(extra))
    return prices


def read_prices(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """A price file: ``MODEL: {input: USD, output: USD[, cached_input: USD]}`` per million tokens, every
    price a non-negative number. Anything else is a ValueError naming the file and the entry."""
    where = f"TOOLKIT_PRICES {path}"
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ValueError(f"{where}: cannot read it ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{where}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{where}: must map model names to prices, e.g. gpt-4o-mini: {{input: 0.15, output: 0.6}}")
    for model, price in data.items():
        if not isinstance(price, dict) or not {"input", "output"} <= set(price):
            raise ValueError(f"{where}: {model}: needs input and output (USD per million tokens)")
        unknown = sorted(set(price) - {"input", "output", "cached_input"})
        if unknown:
            raise ValueError(f"{where}: {model}: unknown field(s) {', '.join(map(str, unknown))}; "
                             "fields are input, output, cached_input")
        for name, value in price.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < 0:
                raise ValueError(f"{where}: {model}.{name} must be a non-negative number, got {value!r}")
    return data


_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")  # gpt-5-2025-08-07, claude-sonnet-4-20250514


def price_of(model: str, prices: dict[str, dict[str, float]] | None = None) -> dict[str, float] | None:
    """A model's price: its name as given, else without a dated snapshot suffix (``gpt-5-2025-08-07`` → ``gpt-5``),
    else without an OpenRouter-style vendor prefix (``openai/o4-mini`` → ``o4-mini``); None when unknown."""
    prices = prices if prices is not None else load_prices()
    name = str(model)
    for candidate in (name, _SNAPSHOT.sub("", name), name.rpartition("/")[2],
                      _SNAPSHOT.sub("", name.rpartition("/")[2])):
        if candidate in prices:
            return prices[candidate]
    return None


def output_tokens(completion_tokens: int, reasoning_tokens: int | None) -> int:
    """The tokens billed at the output price: reasoning tokens are output. OpenAI counts them inside
    ``completion_tokens``; an endpoint reporting more reasoning than completion tokens counted them apart, and
    they are added."""
    reasoning = reasoning_tokens or 0
    return completion_tokens + reasoning if reasoning > completion_tokens else completion_tokens


def cost_usd(model: str, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0,
             prices: dict[str, dict[str, float]] | None = None, reasoning_tokens: int | None = None) -> float | None:
    """The call's cost, or None for a model with no price (unknown, never 0). Reasoning tokens are billed at
    the output price (``output_tokens``)."""
    price = price_of(model, prices)
    if price is None:
        return None
    completion_tokens = output_tokens(completion_tokens, reasoning_tokens)
    cached = min(cached_tokens, prompt_tokens)
    cached_rate = price.get("cached_input", price["input"])
    return ((prompt_tokens - cached) * price["input"] + cached * cached_rate
            + completion_tokens * price["output"]) / 1e6
