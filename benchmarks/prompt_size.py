"""Prompt characters per call (mean, max) and calls per game, with reflection off and at each cadence
(per_day, the default; per_phase; per_action, the seed's), for seeded heuristic games (prompts are rendered
in full for every call, as an LLM seat would get them).
MetaGPT's werewolf prompts average 11,453 characters; the target is a third of that, with the maximum
bounded however long a game runs.

    python benchmarks/prompt_size.py [GAMES]
"""

import asyncio
import json
import sys
import tempfile

from toolkit.record.run_log import Run
from toolkit.record.load import load
from toolkit.werewolf.game import GameConfig, play_games

METAGPT_MEAN = 11453


def main(games: int) -> None:
    for preset in ("classic7", "standard9"):
        for cadence in ("off", "per_day", "per_phase", "per_action"):
            reflection = cadence != "off"
            with tempfile.TemporaryDirectory() as tmp:
                with Run(tmp, "prompts") as run:
                    asyncio.run(play_games([GameConfig(preset=preset, seed=s, reflection=reflection,
                                                       reflect=cadence if reflection else "per_day")
                                            for s in range(games)], run))
                calls = load(tmp).calls
            chars = calls["messages"].map(lambda m: sum(len(x["content"]) for x in json.loads(m)))
            days = calls["replay_key"].str.extract(r"/d(\d+)/")[0].astype(int)
            by_day = chars.groupby(days).max()
            print(f"{preset:9s} reflection={cadence:10s} games={games} "
                  f"calls/game={len(calls) / games:.1f} prompt chars mean={chars.mean():.0f} "
                  f"({chars.mean() / METAGPT_MEAN:.0%} of MetaGPT's) max={chars.max()} "
                  f"max by day={ {int(d): int(c) for d, c in by_day.items()} }")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
