"""Write the golden `events` and `calls` tables that tests/werewolf/test_golden.py compares against.

Run it only when a change is *meant* to alter what games produce (prompts, rules, players), and say so in the
commit: ``python tests/werewolf/golden/make_golden.py``. The tables were first generated on commit 1bbd283 (before
the model-layer refactor of issue 10) and the refactor reproduced them byte for byte.

Ids, timestamps, latencies and the loopback server's port are left out (they differ run to run); a
prompt is kept as the SHA-256 of its messages (the full text would make the fixtures megabytes). Calls are
ordered by decision (replay key), then by the order asked: a re-ask's place among concurrent calls depends on
when the first answer arrived over HTTP, so the call's ``seq`` number is not compared (the test checks that
each game's seqs are 0..n-1 instead).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # the repository root

from toolkit.testing.loopback_server import FakeOpenAIServer  # noqa: E402
from toolkit.record.run_log import Run  # noqa: E402
from toolkit.record.load import load  # noqa: E402
from toolkit.werewolf.game import GameConfig, play_game  # noqa: E402

# (name, preset, seeds, reflection); the model spec is given per case below.
GAMES = [("classic7", "classic7", (0, 1), False), ("classic7-reflect", "classic7", (2,), True),
         ("standard9", "standard9", (3,), False)]
SPECS = {"heuristic": "heuristic", "random": "random", "chaos": "chaos:0.3", "loopback": "openai:det@{url}"}
EVENT_COLUMNS = ["seed", "seq", "day", "phase", "kind", "actor", "target", "text", "visibility", "fallback"]
CALL_COLUMNS = ["seed", "seat", "role", "action", "model", "temperature", "messages_sha256",
                "response_text", "parsed", "ok", "error", "attempts", "fallback", "prompt_tokens",
                "completion_tokens", "cached_tokens", "usage_estimated", "cost_usd", "cache_hit", "replay_key"]


def _clean(value):
    if isinstance(value, float) and value != value:  # NaN from a table
        return None
    if hasattr(value, "item"):
        return value.item()
    return value


async def _play(spec: str, folder: Path) -> None:
    with Run(folder, experiment="golden") as run:
        for _, preset, seeds, reflection in GAMES:
            for seed in seeds:
                await play_game(GameConfig(preset=preset, seed=seed, model=spec, reflection=reflection), run)


def tables(case: str, url: str | None = None) -> dict[str, list[dict]]:
    """The golden rows of one case, as plain dicts in a stable order."""
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_play(SPECS[case].format(url=url), Path(tmp)))
        t = load(tmp)
        seeds = t.games.set_index("game_id")["seed"]
        events = t.events.assign(seed=t.events["game_id"].map(seeds)).sort_values(["seed", "seq"])
        calls = t.calls.assign(seed=t.calls["game_id"].map(seeds),
                               messages_sha256=t.calls["messages"].map(
                                   lambda m: hashlib.sha256(m.encode()).hexdigest()))
        calls = calls.sort_values(["seed", "replay_key", "seq"])
        for _, game in t.calls.groupby("game_id"):
            assert sorted(game["seq"]) == list(range(len(game))), "a game's call seqs are not 0..n-1"
        return {"events": [{c: _clean(r[c]) for c in EVENT_COLUMNS} for r in events.to_dict("records")],
                "calls": [{c: _clean(r[c]) for c in CALL_COLUMNS} for r in calls.to_dict("records")]}


def main() -> None:
    with FakeOpenAIServer() as server:
        for case in SPECS:
            for table, rows in tables(case, server.base_url).items():
                path = HERE / f"{case}.{table}.jsonl"
                path.write_text("".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows))
                print(f"{path.name}: {len(rows)} rows")


if __name__ == "__main__":
    main()
