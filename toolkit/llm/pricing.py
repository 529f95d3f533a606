"""Cost of a call from a price table (USD per million tokens); unknown models cost ``None``."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import yaml

DEFAULT_PRICES = Path(__file__).with_name("prices.yaml")


@lru_cache(maxsize=8)
def load_prices(path: str | None = None) -> dict[str, dict[str, float]]:
    prices = yaml.safe_load(DEFAULT_PRICES.read_text()) or {}
    extra = path or os.environ.get("TOOLKIT_PRICES")
    if extra:
        prices.update(yaml.safe_load(Path(extra).read_text()) or {})
    return prices


def cost_usd(model: str, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0,
             prices: dict[str, dict[str, float]] | None = None) -> float | None:
    table = prices if prices is not None else load_prices()
    price = table.get(model)
    if price is None:
        return None
    cached = min(cached_tokens, prompt_tokens)
    cached_rate = price.get("cached_input", price["input"])
    return ((prompt_tokens - cached) * price["input"] + cached * cached_rate
            + completion_tokens * price["output"]) / 1e6
