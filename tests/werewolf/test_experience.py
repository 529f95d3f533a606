"""The experience pool: BM25 over past reflections, filtered by role before ranking, versioned."""

import asyncio
import json

import pytest

from toolkit.record.run_log import Run
from toolkit.record.load import load
from toolkit.werewolf.experience import ExperiencePool
from toolkit.werewolf.game import GameConfig, GameRunner, play_games


def test_role_filter_comes_before_ranking_and_versions_can_be_excluded(tmp_path):
    pool = ExperiencePool(tmp_path / "pool.jsonl", version="study-a")
    pool.add("Werewolf", "claim seer early and accuse the real seer on day one", "won", "g1")
    pool.add("Seer", "reveal the wolf you found before the vote", "won", "g2")
    pool.add("Seer", "keep quiet until you have found a wolf", "lost", "g3")
    hits = ExperiencePool(tmp_path / "pool.jsonl").retrieve("Seer", "accuse the real seer on day one claim", k=5)
    # the wolf's lesson ranks best, but is not a Seer's
    assert len(hits) == 2 and all("claim seer early" not in h for h in hits)
    assert hits[0].startswith("(won)") or hits[0].startswith("(lost)")
    reader = ExperiencePool(tmp_path / "pool.jsonl", version="study-b")
    assert reader.retrieve("Seer", "reveal the wolf", k=1) == ["(won) reveal the wolf you found before the vote"]
    assert reader.retrieve("Seer", "reveal", exclude_versions=("study-a",)) == []
    assert pool.retrieve("Seer", "reveal") == []  # a version never reads its own lessons by default ...
    assert len(pool.retrieve("Seer", "reveal", include_own=True)) == 2  # ... unless asked to


@pytest.mark.slow
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


def test_two_situations_of_one_role_retrieve_different_lessons(tmp_path):
    """The query is the moment (a reflection, or the observation in words), not the constant "{role} {preset}"."""
    from toolkit.werewolf.experience import situation_query
    from toolkit.werewolf.game import GameRunner
    from toolkit.werewolf.seat.observation import observe
    from toolkit.werewolf.engine.rules import Ask

    pool = ExperiencePool(tmp_path / "pool.jsonl", version="old")
    lessons = {
        "first night: nothing is known yet, check a random player and keep quiet on day one": "won",
        "a second player claimed Seer and accused me: the counter-claimer is a werewolf, say so and vote him": "won",
        "two players died in one night: the witch poisoned someone; ask who claims witch": "lost",
        "the tied vote let the wolves live: push the village to one target before the revote": "won",
    }
    for text, outcome in lessons.items():
        pool.add("Seer", text, outcome, "g0", preset="classic7")
    pool.add("Werewolf", "claimed seer and accused the real seer, counter-claimer won", "won", "g0", preset="classic7")
    pool.add("Seer", "a counter-claimer in a nine player game was a werewolf", "won", "g0", preset="standard9")
    reader = ExperiencePool(tmp_path / "pool.jsonl", version="new")

    runner = GameRunner(GameConfig(seed=1))
    seer = runner.game.seat_of("Seer")
    night_one = observe(runner.game, seer, Ask(seer, "verify"))
    first = reader.retrieve("Seer", situation_query(night_one), k=1, preset="classic7")
    counter = reader.retrieve("Seer", situation_query(night_one, "Player4 also claimed Seer and accused me, a "
                                                                 "counter-claim"), k=1, preset="classic7")
    assert first != counter
    assert "first night" in first[0] and "counter-claimed" not in first[0]
    assert "claimed Seer and accused me" in counter[0]
    # filtered before ranking: the wolf's and the other preset's lessons match the query better, and are not given
    everything = reader.retrieve("Seer", "counter-claimer werewolf accused real seer nine player", k=10,
                                 preset="classic7")
    assert len(everything) == 4 and not any("nine player" in x or "real seer" in x for x in everything)


def test_a_run_does_not_see_its_own_lessons_and_lessons_are_data(tmp_path):
    pool = ExperiencePool(tmp_path / "pool.jsonl", version="run-1")
    pool.add("Seer", "line one\n- Day 1 dawn: Player4 died last night.\x1b[31m", "won", "g1", preset="classic7")
    assert pool.retrieve("Seer", "dawn died", preset="classic7") == []
    later = ExperiencePool(tmp_path / "pool.jsonl", version="run-2").retrieve("Seer", "dawn", preset="classic7")
    assert later == ["(won) line one - Day 1 dawn: Player4 died last night."]  # one line, no escape codes
    (tmp_path / "bad.jsonl").write_text('{"role": "Seer"}\n')
    with pytest.warns(UserWarning, match="bad.jsonl:1: skipped a damaged experience line"):
        assert ExperiencePool(tmp_path / "bad.jsonl").entries() == []  # reported, and skipped


@pytest.mark.slow
def test_a_second_play_run_retrieves_a_lesson_the_first_left(tmp_path, capsys):
    """`toolkit play --experience --reflection` twice into one --out: the pool is versioned by run, so the
    second game's prompts carry lessons the first game wrote (before, the CLI pool had one version for every
    run, which retrieval excludes: no lesson was ever read)."""
    from toolkit.cli import main

    argv = ["play", "--experience", "--reflection", "--quiet", "--max-days", "2", "--out", str(tmp_path)]
    assert main([*argv, "--seed", "1"]) == 0
    pool = [json.loads(line) for line in (tmp_path / "experience" / "pool.jsonl").read_text().splitlines()]
    first = load(tmp_path).runs["run_id"].iloc[0]
    assert pool and {e["version"] for e in pool} == {first}
    assert main([*argv, "--seed", "2"]) == 0
    second = load(tmp_path).calls
    second = second[second["run_id"] != first]
    prompts = [json.loads(m)[-1]["content"] for m in second["messages"]]
    lessons = {line[len("- (won) "):] if line.startswith("- (won) ") else line[len("- (lost) "):]
               for p in prompts if "Lessons from past games as" in p
               for line in p.split("Lessons from past games as", 1)[1].splitlines()
               if line.startswith(("- (won) ", "- (lost) "))}
    assert lessons and lessons <= {e["reflection"] for e in pool}  # read from the first run's entries


def test_a_damaged_pool_line_is_skipped_with_a_warning_naming_it(tmp_path):
    from toolkit.werewolf.experience import ExperienceWarning

    path = tmp_path / "pool.jsonl"
    good = {"version": "a", "role": "Seer", "reflection": "reveal the wolf", "outcome": "won"}
    path.write_text(json.dumps(good) + "\n{\"version\": \"a\", \"role\": \"Se\n" + json.dumps({"role": 3}) + "\n"
                    + json.dumps({**good, "reflection": "vote with the village"}) + "\n")
    with pytest.warns(ExperienceWarning) as caught:
        hits = ExperiencePool(path, version="b").retrieve("Seer", "reveal the wolf", k=5)
    assert [str(w.message).split(": skipped")[0] for w in caught] == [f"{path}:2", f"{path}:3"]
    assert sorted(hits) == ["(won) reveal the wolf", "(won) vote with the village"]  # both good lines kept
    with Run(tmp_path / "r") as run:  # a game on that pool plays on (before: every later game ended as an error)
        with pytest.warns(ExperienceWarning):
            result = asyncio.run(GameRunner(GameConfig(seed=1, reflection=True, experience=True,
                                                       experience_pool=ExperiencePool(path, "c")), run).play())
    assert result.winner != "error"
