"""The response cache: keys that differ exactly where the answer could (model, endpoint, messages, schema, tools,
sampling) and not where it cannot (who asks); entries that survive the process and are shared by several
processes writing at once; hits that cost nothing and count no request; only cacheable backends cached."""

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import FAST
from toolkit.llm import Completion, Request, Sampling, get_model
from toolkit.llm.cache import ResponseCache, cache_key

ROOT = Path(__file__).resolve().parents[2]
BASE = Request(messages=[{"role": "user", "content": "pick"}], schema={"enum": ["a", "b"]},
               sampling=Sampling(temperature=0.5, max_tokens=10, seed=1))


def test_keys_differ_by_what_can_change_the_answer():
    variants = {
        "model": ("other", None, BASE), "endpoint": ("m", "http://h:1/v1", BASE),
        "messages": ("m", None, BASE.but(messages=[{"role": "user", "content": "pick!"}])),
        "schema": ("m", None, BASE.but(schema={"enum": ["a", "c"]})),
        "no schema": ("m", None, BASE.but(schema=None)),
        "tools": ("m", None, BASE.but(tools=[{"name": "end"}])),
        "temperature": ("m", None, BASE.but(sampling=Sampling(temperature=0.6, max_tokens=10, seed=1))),
        "max_tokens": ("m", None, BASE.but(sampling=Sampling(temperature=0.5, max_tokens=11, seed=1))),
        "seed": ("m", None, BASE.but(sampling=Sampling(temperature=0.5, max_tokens=10, seed=2))),
    }
    base = cache_key("m", None, BASE)
    keys = {name: cache_key(*args) for name, args in variants.items()}
    assert base not in keys.values() and len(set(keys.values())) == len(keys)
    # who asks, and why, does not change the answer: the same key
    same = BASE.but(game_id="g2", seat="Player4", day=3, phase="night", action="vote", replay_key="x",
                    observation={"seat": "Player4"})
    assert cache_key("m", None, same) == base
    # dict order inside the schema is not a difference
    assert cache_key("m", None, BASE.but(schema={"b": 1, "a": 2})) == cache_key("m", None, BASE.but(
        schema={"a": 2, "b": 1}))
    assert len(base) == 64 and int(base, 16) >= 0  # a sha256 hex digest


def test_entries_round_trip_and_a_hit_costs_nothing(tmp_path):
    cache = ResponseCache(tmp_path)
    assert cache.path == tmp_path / "responses.sqlite" and cache.get("nope") is None
    priced = Completion("t", "m", base_url="http://h/v1", prompt_tokens=3, completion_tokens=4, cached_tokens=1,
                        usage_estimated=True, cost_usd=0.5,
                        tool_calls=[{"name": "Editor.open_file", "arguments": '{"path": "x"}'}])
    cache.put("k1", priced)
    cache.put("k2", Completion("u", "unpriced-model"))
    hit = cache.get("k1")
    assert hit.cache_hit and hit.cost_usd == 0.0 and not priced.cache_hit
    assert (hit.text, hit.model, hit.base_url, hit.prompt_tokens, hit.completion_tokens, hit.cached_tokens,
            hit.usage_estimated, hit.tool_calls) == ("t", "m", "http://h/v1", 3, 4, 1, True, priced.tool_calls)
    assert cache.get("k2").cost_usd is None  # unknown stays unknown, even when it cost nothing this time
    cache.put("k1", Completion("newer", "m"))
    assert cache.get("k1").text == "newer"  # the last answer stored wins


def test_a_file_path_is_used_as_is_and_old_entries_with_more_fields_load(tmp_path):
    import json
    import sqlite3

    path = tmp_path / "deep" / "shared.sqlite"
    cache = ResponseCache(path)
    assert cache.path == path and path.exists()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO responses VALUES (?, ?)",
               ("old", json.dumps({"text": "from an older version", "model": "m", "latency": 3, "retired": True})))
    db.commit()
    db.close()
    old = cache.get("old")
    assert old.text == "from an older version" and old.cache_hit


WRITER = """
import sys
from toolkit.llm import Completion
from toolkit.llm.cache import ResponseCache
cache = ResponseCache(sys.argv[1])
for i in range(40):
    cache.put(f"{sys.argv[2]}-{i}", Completion(f"{sys.argv[2]} answer {i}", "m", prompt_tokens=i))
    assert cache.get(f"{sys.argv[2]}-{i}").text == f"{sys.argv[2]} answer {i}"
"""


def test_several_processes_share_one_cache_file(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), name], cwd=ROOT,
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}, stderr=subprocess.PIPE)
             for name in ("p1", "p2", "p3")]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read().decode()
    cache = ResponseCache(tmp_path)
    for name in ("p1", "p2", "p3"):
        for i in range(40):
            hit = cache.get(f"{name}-{i}")
            assert hit.text == f"{name} answer {i}" and hit.prompt_tokens == i


@pytest.mark.slow
async def test_a_cache_written_by_another_process_answers_without_a_request(server, tmp_path):
    """One process asks the server; a new process (this one) gets the same answer from the cache file."""
    code = ("import asyncio, sys; from toolkit.llm import Request, get_model\n"
            "m = get_model(f'openai:ok@{sys.argv[1]}', cache_dir=sys.argv[2])\n"
            "r = Request(messages=[{'role': 'user', 'content': 'same'}], schema={'enum': ['a', 'b', 'c', 'd']})\n"
            "print(asyncio.run(m.generate(r)).text)")
    out = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", code, server.base_url, str(tmp_path)],
                                  capture_output=True, text=True, timeout=120, cwd=ROOT,
                                  env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "x" * 20})
    assert out.returncode == 0, out.stderr
    assert len(server.requests) == 1
    m = get_model(f"openai:ok@{server.base_url}", cache_dir=str(tmp_path), **FAST)
    call = await m.generate(Request(messages=[{"role": "user", "content": "same"}], schema={"enum": ["a", "b", "c",
                                                                                                   "d"]}, game_id="g"))
    assert call.text == out.stdout.strip() and call.completion.cache_hit and len(server.requests) == 1
    row = call.row("r")
    assert row["cache_hit"] and row["attempts"] == 0 and row["cost_usd"] in (0.0, None) and row["latency_ms"] == 0.0


async def test_failures_are_not_cached_and_sampling_changes_miss(server, tmp_path):
    m = get_model(f"openai:queue@{server.base_url}", cache_dir=str(tmp_path), **{**FAST, "max_attempts": 1})
    server.queue("401")
    r = Request(messages=[{"role": "user", "content": "q"}])
    assert (await m.generate(r)).completion is None
    assert (await m.generate(r)).text == "ok" and len(server.requests) == 2  # the failure was not stored
    assert (await m.generate(r)).completion.cache_hit and len(server.requests) == 2
    await m.generate(r.but(sampling=Sampling(temperature=1.0)))
    assert len(server.requests) == 3


def test_offline_backends_are_never_cached(tmp_path):
    """Offline answers are free and seeded: the cache is not opened for them (no file appears)."""
    for spec in ("random", "chaos:0.5"):
        m = get_model(spec, cache_dir=str(tmp_path / spec))
        assert m.cache is None
        call = asyncio.run(m.generate(Request(schema={"enum": ["a"]})))
        assert not call.completion.cache_hit
    assert not list(tmp_path.rglob("*.sqlite"))


def test_the_cache_dir_variable_turns_the_cache_on(server, tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLKIT_CACHE_DIR", str(tmp_path / "env-cache"))
    m = get_model(f"openai:ok@{server.base_url}", **FAST)
    assert m.cache is not None and m.cache.path == tmp_path / "env-cache" / "responses.sqlite"
