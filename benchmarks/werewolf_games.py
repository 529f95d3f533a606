"""Seeded games in bulk: outcome rates with 95% Wilson intervals, and games per second on one core
(one process, full prompt rendering, every row logged). Also the chaos check: every game finishes and
every bad answer is a recorded fallback.

    python benchmarks/werewolf_games.py [N]     (default 1000 games per preset and model)
"""

import asyncio
import sys
import tempfile
import time

from toolkit.analysis import win_rates
from toolkit.record.run_log import Run
from toolkit.record.load import load
from toolkit.werewolf.game import GameConfig, play_games


def main(n: int) -> None:
    for model in ("heuristic", "random", "chaos:0.3"):
        for preset in ("classic7", "standard9"):
            with tempfile.TemporaryDirectory() as tmp:
                with Run(tmp, "bench") as run:
                    t0 = time.perf_counter()
                    results = asyncio.run(play_games([GameConfig(preset=preset, seed=s, model=model)
                                                      for s in range(n)], run))
                    wall = time.perf_counter() - t0
                tables = load(tmp)
            rates = win_rates(tables.games).set_index("side")
            text = ", ".join(f"{side} {r.rate:.1%} [{r.ci_low:.1%}, {r.ci_high:.1%}]" for side, r in rates.iterrows())
            calls = tables.calls
            print(f"{model:10s} {preset:10s} games={n} {text}; {n / wall:.1f} games/s; "
                  f"calls/game={len(calls) / n:.1f}; fallbacks={int(calls['fallback'].sum())}; "
                  f"errors={sum(r.winner == 'error' for r in results)}")
            if model.startswith("chaos"):
                bad = calls[~calls["ok"]]
                unrecorded = bad["error"].isna().sum()
                print(f"           chaos: {len(bad)} bad answers, all with an error text: {unrecorded == 0}; "
                      f"fallback rows {int(calls['fallback'].sum())} = games' n_fallbacks "
                      f"{int(tables.games['n_fallbacks'].sum())}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
