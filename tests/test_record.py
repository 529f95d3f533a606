"""The call log: JSONL as it happens, Parquet at close, a killed run still loads, keys never logged."""

import os
import signal
import subprocess
import sys
import time

from toolkit.record import Run
from toolkit.results import load
from toolkit.tables import TABLES

KILLED_RUN = """
import asyncio, sys
from toolkit.record import Run
from toolkit.werewolf.game import GameConfig, play_games
run = Run(sys.argv[1], "killed")
asyncio.run(play_games([GameConfig(seed=s) for s in range(100000)], run, concurrency=4))
"""


def test_load_reads_a_finished_and_a_killed_run(tmp_path):
    with Run(tmp_path, "finished") as run:
        run.write("games", {"game_id": "a", "run_id": run.run_id, "winner": "village"})
    assert (run.folder / "games.parquet").exists() and not (run.folder / "games.jsonl").exists()

    proc = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(tmp_path)])
    deadline = time.time() + 60
    while time.time() < deadline:
        games = list(tmp_path.glob("killed-*/games.jsonl"))
        if games and games[0].stat().st_size > 2000:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed = next(tmp_path.glob("killed-*"))
    assert not list(killed.glob("*.parquet"))  # it died: only JSONL, perhaps with a torn last line
    with open(killed / "calls.jsonl", "a") as handle:
        handle.write('{"call_id": "torn", "seq"')  # what a crash mid-write leaves

    results = load(tmp_path)
    assert sorted(results.runs["experiment"]) == ["finished", "killed"]
    assert "a" in set(results.games["game_id"]) and len(results.games) >= 2
    assert len(results.calls) > 0 and "torn" not in set(results.calls["call_id"])
    assert set(results.events["game_id"]) >= set(results.games["game_id"]) - {"a"}


def test_empty_tables_have_their_columns(tmp_path):
    Run(tmp_path, "empty").close()
    results = load(tmp_path)
    for table, columns in TABLES.items():
        frame = getattr(results, table)
        assert set(columns) <= set(frame.columns), table
    assert len(results.runs) == 1 and results.calls.empty


def test_api_keys_never_reach_a_row(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "my-secret-key-value-123")
    with Run(tmp_path, "keys", config={"key": "my-secret-key-value-123", "other": "sk-abcdefghijklmnop1234"}) as run:
        run.write("calls", {"call_id": "c",
                            "messages": "token sk-proj-ABCDEFGHIJKLMNOPQRST and my-secret-key-value-123"})
    text = "".join(p.read_bytes().decode("latin-1") for p in run.folder.iterdir())
    assert "my-secret-key-value-123" not in text and "sk-abcdefghijklmnop1234" not in text
    assert "sk-proj-ABCDEFGHIJKLMNOPQRST" not in text
    masked = load(tmp_path).calls["messages"].iloc[0]
    assert masked == "token [redacted key] and [redacted OPENAI_API_KEY]"  # says what was masked, not the value


def test_every_secret_of_the_environment_is_masked_in_every_table(tmp_path, monkeypatch):
    """Not only the OpenAI key: any variable named like a secret (KEY, PAT, PASS, TOKEN), and URL credentials."""
    monkeypatch.setenv("GITHUB_PAT", "patvalue-1234567")
    monkeypatch.setenv("DB_PASS", "hunter2-hunter2")
    with Run(tmp_path, "keys", config={"url": "http://bob:pw-in-url@host:1/v1"}) as run:
        run.write("events", {"game_id": "g", "seq": 0, "text": "I found patvalue-1234567 and hunter2-hunter2"})
        run.write("games", {"game_id": "g", "win_reason": "see http://bob:pw-in-url@host:1/v1"})
    text = "".join(p.read_bytes().decode("latin-1") for p in run.folder.iterdir())
    for secret in ("patvalue-1234567", "hunter2-hunter2", "pw-in-url", "bob:"):
        assert secret not in text, secret
    assert "[redacted GITHUB_PAT]" in text and "[redacted DB_PASS]" in text
