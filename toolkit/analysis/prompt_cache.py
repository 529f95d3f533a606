"""Prompt-cache figures from a ``calls`` table: the share of prompt tokens a server took from its cache
(per spec and model), and how much of each prompt repeats the previous prompt of the same seat (the most a
prefix cache can serve)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pandas as pd


def cached_share(calls: pd.DataFrame) -> pd.DataFrame:
    """Per spec and model: calls, prompt tokens, cached tokens and their share (cached / prompt). Calls that
    a response cache answered (no request reached a server) and calls with estimated usage are left out,
    and counted in ``excluded`` so nothing disappears silently."""
    columns = ["spec", "model", "calls", "prompt_tokens", "cached_tokens", "share", "excluded"]
    if calls is None or not len(calls):
        return pd.DataFrame(columns=columns)
    df = calls.copy()
    if "spec" not in df.columns:  # results written before the spec column existed
        df["spec"] = df["model"]
    hit = df["cache_hit"].fillna(False).astype(bool) if "cache_hit" in df else False
    estimated = df["usage_estimated"].fillna(False).astype(bool) if "usage_estimated" in df else False
    measured = ~(hit | estimated) & df["prompt_tokens"].notna()
    df["_measured"] = measured
    df["_prompt"] = df["prompt_tokens"].where(measured, 0).fillna(0).astype(int)
    df["_cached"] = df["cached_tokens"].where(measured, 0).fillna(0).astype(int).clip(upper=df["_prompt"])
    out = (df.groupby(["spec", "model"], dropna=False)
             .agg(calls=("_measured", "sum"), prompt_tokens=("_prompt", "sum"), cached_tokens=("_cached", "sum"),
                  excluded=("_measured", lambda m: int((~m).sum())))
             .reset_index())
    out["share"] = (out["cached_tokens"] / out["prompt_tokens"].where(out["prompt_tokens"] > 0)).astype(float)
    out["calls"] = out["calls"].astype(int)
    return out[columns]


def prompt_text(messages: list[dict[str, Any]] | str) -> str:
    """A prompt as characters: each message's role and content, in order (``messages`` may be the calls
    table's JSON)."""
    if isinstance(messages, str):
        messages = json.loads(messages)
    return "".join(f"<{m.get('role', '')}>\n{m.get('content') or ''}\n" for m in messages)


def _common(a: Any, b: Any) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def shared_prefixes(calls: pd.DataFrame,
                    tokenize: Callable[[list[dict[str, Any]]], list[int]] | None = None) -> pd.DataFrame:
    """One row per call that has an earlier call of the same seat in the same game (or session): how much
    of its prompt is the previous prompt's prefix, in characters (``prompt_text``) and, with ``tokenize``
    (messages → the token ids the server evaluates), in tokens."""
    rows = []
    if calls is None or not len(calls):
        return pd.DataFrame(columns=["game_id", "seat", "seq", "prompt_chars", "shared_chars",
                                     "prompt_tokens", "shared_tokens"])
    group_id = calls["game_id"].fillna(calls.get("session_id", pd.Series(index=calls.index, dtype=object)))
    df = calls.assign(_group=group_id.fillna(""), _seat=calls["seat"].fillna(""))
    for (group, seat), seat_calls in df.sort_values("seq").groupby(["_group", "_seat"], sort=False):
        previous = None
        for _, call in seat_calls.iterrows():
            messages = json.loads(call["messages"]) if isinstance(call["messages"], str) else call["messages"]
            text = prompt_text(messages)
            tokens = tokenize(messages) if tokenize else None
            if previous is not None:
                rows.append({"game_id": group, "seat": seat, "seq": call["seq"], "prompt_chars": len(text),
                             "shared_chars": _common(previous[0], text),
                             "prompt_tokens": len(tokens) if tokens is not None else None,
                             "shared_tokens": _common(previous[1], tokens) if tokens is not None else None})
            previous = (text, tokens)
    return pd.DataFrame(rows)


def llama_tokenizer(base_url: str) -> Callable[[list[dict[str, Any]]], list[int]]:
    """Messages → the token ids a llama.cpp server evaluates (its chat template, then its tokenizer)."""
    import urllib.request

    root = base_url.rstrip("/").removesuffix("/v1")

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(root + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as r:
            return json.loads(r.read())

    def tokenize(messages: list[dict[str, Any]]) -> list[int]:
        prompt = post("/apply-template", {"messages": messages})["prompt"]
        return post("/tokenize", {"content": prompt, "add_special": True})["tokens"]

    return tokenize
