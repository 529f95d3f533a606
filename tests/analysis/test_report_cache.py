"""The report's cost section says what share of prompt tokens a server took from its prompt cache, per model,
from measured usage only (estimated usage and response-cache hits are counted apart, never mixed in)."""

import asyncio

import pytest
from toolkit.record.rows import CallRow
from toolkit.record.run_log import Run
from toolkit.analysis.report import write_report
from toolkit.werewolf.game import GameConfig, play_game


@pytest.mark.slow
def test_the_report_shows_the_cached_share_of_prompt_tokens(tmp_path, server):
    spec = f"openai:det@{server.base_url}"
    with Run(tmp_path / "res") as run:
        asyncio.run(play_game(GameConfig(seed=1, model=spec, max_days=1), run))
        # a second endpoint's calls with measured usage and a prompt cache (as llama.cpp reports them)
        for i, (prompt, cached) in enumerate([(1000, 600), (1000, 800), (500, 0)]):
            run.write(CallRow(call_id=f"x-{i}", session_id="x", seq=i, spec="local", model="gemma",
                              prompt_tokens=prompt, cached_tokens=cached, usage_estimated=False, cache_hit=False,
                              ok=True))
    text = next(p for p in write_report(tmp_path / "res", tmp_path / "out") if p.suffix == ".md").read_text()
    assert "Prompt tokens served from the server's prompt cache" in text
    row = next(line for line in text.splitlines() if line.startswith("| local | gemma"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2:6] == ["3", "2500", "1400", "0.560"]  # 1400 of 2500 prompt tokens came from the cache


@pytest.mark.slow
def test_no_measured_usage_no_section(tmp_path):
    with Run(tmp_path / "res") as run:
        asyncio.run(play_game(GameConfig(seed=1, model="heuristic", max_days=1), run))
    text = next(p for p in write_report(tmp_path / "res", tmp_path / "out") if p.suffix == ".md").read_text()
    assert "prompt cache" not in text and "Calls, tokens, cost" in text
