"""Prompt-cache figures from a calls table, and which studies need the local server (no server here)."""

import json

import pandas as pd

from toolkit.llm.llama_server import LocalServer, uses_local
from toolkit.analysis.prompt_cache import cached_share, prompt_text, shared_prefixes


def call(game, seat, seq, content, prompt=100, cached=0, spec="local", model="gemma-3-270m", **extra):
    return {"game_id": game, "session_id": None, "seat": seat, "seq": seq, "spec": spec, "model": model,
            "messages": json.dumps([{"role": "system", "content": "RULES"}, {"role": "user", "content": content}]),
            "prompt_tokens": prompt, "cached_tokens": cached, "cache_hit": False, "usage_estimated": False, **extra}


def test_cached_share_per_spec_and_model_counts_what_it_leaves_out():
    calls = pd.DataFrame([
        call("g", "P1", 1, "a", 100, 0), call("g", "P1", 2, "ab", 200, 150),
        call("g", "P2", 3, "x", 100, 100, spec="openai:gpt-4o", model="gpt-4o"),
        call("g", "P2", 4, "x", 100, 100, spec="openai:gpt-4o", model="gpt-4o", cache_hit=True),
        call("g", "P1", 5, "abc", 50, 0, usage_estimated=True),
    ])
    out = cached_share(calls).set_index("spec")
    assert out.loc["local", "prompt_tokens"] == 300 and out.loc["local", "cached_tokens"] == 150
    assert out.loc["local", "share"] == 0.5 and out.loc["local", "calls"] == 2 and out.loc["local", "excluded"] == 1
    assert out.loc["openai:gpt-4o", "share"] == 1.0 and out.loc["openai:gpt-4o", "excluded"] == 1
    assert cached_share(pd.DataFrame()).empty


def test_shared_prefix_between_consecutive_calls_of_a_seat():
    calls = pd.DataFrame([call("g", "P1", 1, "ledger: 1"), call("g", "P2", 2, "other"),
                          call("g", "P1", 3, "ledger: 1 2"), call("h", "P1", 1, "ledger: 1 2")])
    out = shared_prefixes(calls, tokenize=lambda messages: list(prompt_text(messages)))
    assert len(out) == 1  # only P1 in game g has a previous call
    row = out.iloc[0]
    first = prompt_text([{"role": "system", "content": "RULES"}, {"role": "user", "content": "ledger: 1"}])
    assert row["shared_chars"] == len(first) - 1  # everything but the final newline
    assert row["prompt_tokens"] == row["prompt_chars"] and row["shared_tokens"] == row["shared_chars"]


def test_which_studies_need_the_local_server():
    """The model layer reads spec strings; the study finds a cell's (``cell_specs``, from its parameters)."""
    from toolkit.study.sweep import Cell, cell_specs

    def specs(parameters):
        return cell_specs(Cell(sweep="s", cell_id="c", notebook="n.ipynb", folder="f", parameters=parameters,
                               grid_values={}))

    assert uses_local(["local"]) and uses_local(specs({"model": "heuristic", "wolf_model": "local"}))
    assert uses_local(specs({"model": "heuristic", "seats": {"Player1": "local"}}))
    assert uses_local(specs({"seats": {"Player1": {"spec": "local", "reflection": True}}}))
    assert not uses_local(specs({"model": "heuristic", "preset": "local"}) | {"openai:gpt-4o", "not a spec:"})
    assert specs({"village_model": "random", "seats": {"Player2": {"spec": "mixed"}}}) == {"random", "mixed"}


def test_server_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("TOOLKIT_LOCAL_THREADS", "3")
    monkeypatch.setenv("TOOLKIT_LOCAL_PARALLEL", "5")
    monkeypatch.setenv("TOOLKIT_LOCAL_CTX", "1000")
    server = LocalServer(port=1)
    assert (server.threads, server.parallel, server.ctx) == (3, 5, 1000)
    monkeypatch.setenv("TOOLKIT_LOCAL_PARALLEL", "many")
    try:
        LocalServer(port=1)
    except ValueError as exc:
        assert "TOOLKIT_LOCAL_PARALLEL='many'" in str(exc)
    else:
        raise AssertionError("a bad setting was accepted")
