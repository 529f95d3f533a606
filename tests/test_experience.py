"""The experience pool: BM25 over past reflections, filtered by role before ranking, versioned."""

import asyncio
import json

from toolkit.record import Run
from toolkit.results import load
from toolkit.werewolf.experience import ExperiencePool
from toolkit.werewolf.game import GameConfig, play_games


def test_role_filter_comes_before_ranking_and_versions_can_be_excluded(tmp_path):
    pool = ExperiencePool(tmp_path / "pool.jsonl", version="study-a")
    pool.add("Werewolf", "claim seer early and accuse the real seer on day one", "won", "g1")
    pool.add("Seer", "reveal the wolf you found before the vote", "won", "g2")
    pool.add("Seer", "keep quiet until you have found a wolf", "lost", "g3")
    hits = ExperiencePool(tmp_path / "pool.jsonl").retrieve("Seer", "accuse the real seer on day one claim", k=5)
    assert len(hits) == 2 and all("claim seer early" not in h for h in hits)  # the wolf's lesson ranks best, but is not a Seer's
    assert hits[0].startswith("(won)") or hits[0].startswith("(lost)")
    assert pool.retrieve("Seer", "reveal the wolf", k=1) == ["(won) reveal the wolf you found before the vote"]
    assert pool.retrieve("Seer", "reveal", exclude_versions=("study-a",)) == []


def test_games_grow_the_pool_and_later_games_read_it(tmp_path):
    pool = ExperiencePool(tmp_path / "experience" / "pool.jsonl", version="v1")
    first = [GameConfig(seed=s, reflection=True, experience=True, experience_pool=pool) for s in range(3)]
    with Run(tmp_path / "r1") as run:
        asyncio.run(play_games(first, run))
    entries = pool.entries()
    assert len(entries) >= 3 * 5 and {e["outcome"] for e in entries} <= {"won", "lost"}
    later = ExperiencePool(tmp_path / "experience" / "pool.jsonl", version="v2")
    with Run(tmp_path / "r2") as run:
        asyncio.run(play_games([GameConfig(seed=9, reflection=True, experience=True, experience_pool=later)], run))
    prompts = [json.loads(m)[-1]["content"] for m in load(tmp_path / "r2").calls["messages"]]
    assert any("Lessons from past games as" in p for p in prompts)
    excluded = ExperiencePool(tmp_path / "experience" / "pool.jsonl", version="v3")
    cfg = GameConfig(seed=9, reflection=True, experience=True, experience_pool=excluded,
                     exclude_experience_versions=("v1", "v2"))
    with Run(tmp_path / "r3") as run:
        asyncio.run(play_games([cfg], run))
    prompts = [json.loads(m)[-1]["content"] for m in load(tmp_path / "r3").calls["messages"]]
    assert not any("Lessons from past games as" in p for p in prompts)
