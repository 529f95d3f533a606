"""The call log: JSONL as it happens, Parquet at close, a killed run still loads, keys never logged."""

import asyncio
import os
import signal
import subprocess
import sys
import time

from toolkit.record.run_log import Run
from toolkit.record.load import load
from toolkit.record.rows import BeliefRow, CallRow, EventRow, GameRow, SessionRow, ToolCallRow
from toolkit.record.tables import TABLES
import json
import pandas as pd
import pytest
from toolkit.llm import Attempt, Call, Completion, Request, get_model
from toolkit.record.run_log import CallLog, read_jsonl
from toolkit.record.load import recorded_calls, run_folders

KILLED_RUN = """
import asyncio, sys
from toolkit.record.run_log import Run
from toolkit.werewolf.game import GameConfig, play_games
run = Run(sys.argv[1], "killed")
asyncio.run(play_games([GameConfig(seed=s) for s in range(100000)], run, concurrency=4))
"""


@pytest.mark.slow
def test_load_reads_a_finished_and_a_killed_run(tmp_path):
    with Run(tmp_path, "finished") as run:
        run.write(GameRow(game_id="a", run_id=run.run_id, winner="village"))
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
        run.write(CallRow(call_id="c", messages="token sk-proj-ABCDEFGHIJKLMNOPQRST and my-secret-key-value-123"))
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
        run.write(EventRow(game_id="g", seq=0, text="I found patvalue-1234567 and hunter2-hunter2"))
        run.write(GameRow(game_id="g", run_id=run.run_id, win_reason="see http://bob:pw-in-url@host:1/v1"))
    text = "".join(p.read_bytes().decode("latin-1") for p in run.folder.iterdir())
    for secret in ("patvalue-1234567", "hunter2-hunter2", "pw-in-url", "bob:"):
        assert secret not in text, secret
    assert "[redacted GITHUB_PAT]" in text and "[redacted DB_PASS]" in text


def rows_of(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


# ------------------------------------------------------------------ Run
def test_rows_stream_to_jsonl_then_compact_to_parquet(tmp_path):
    run = Run(tmp_path, "exp", config={"a": 1, "when": pd.Timestamp("2026-01-01")}, seed=9, run_id="fixed-id")
    assert run.folder == tmp_path / "fixed-id"
    run.write(EventRow(game_id="g", seq=0, text="Night 1 falls."))
    run.write(EventRow(game_id="g", seq=1, text="ünïcode"))
    # on disk already (flushed), before the run closes, readable by another reader
    assert [r["seq"] for r in rows_of(run.folder / "events.jsonl")] == [0, 1]
    assert "ünïcode" in (run.folder / "events.jsonl").read_text(encoding="utf-8")  # not \u-escaped
    runs = rows_of(run.folder / "runs.jsonl")[0]
    assert (runs["run_id"], runs["experiment"], runs["seed"]) == ("fixed-id", "exp", 9)
    assert json.loads(runs["config"]) == {"a": 1, "when": "2026-01-01 00:00:00"}  # anything, as text
    run.close()
    assert sorted(p.name for p in run.folder.iterdir()) == ["events.parquet", "runs.parquet"]
    events = pd.read_parquet(run.folder / "events.parquet")
    assert list(events["text"]) == ["Night 1 falls.", "ünïcode"]


def test_default_run_ids_are_unique_and_named_by_experiment(tmp_path):
    ids = {Run(tmp_path, "sweep").run_id for _ in range(5)}
    assert len(ids) == 5 and all(i.startswith("sweep-") for i in ids)
    assert len(run_folders(tmp_path)) == 5


def test_dicts_unknown_columns_and_closed_runs_are_refused(tmp_path):
    run = Run(tmp_path, "x")
    with pytest.raises(TypeError, match="a run writes rows of toolkit.record.rows .*CallRow.*, not dict"):
        run.write({"call_id": "c"})
    with pytest.raises(TypeError, match="unexpected keyword argument 'txt'"):
        EventRow(game_id="g", seq=0, txt="typo")
    with pytest.raises(TypeError, match="events: unknown column 'txt'; columns are game_id, seq, day, phase, kind"):
        EventRow.of({"game_id": "g", "seq": 0, "txt": "typo"})
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'seq'"):
        EventRow(game_id="g")
    row = EventRow(game_id="g", seq=0)
    with pytest.raises(AttributeError):
        row.txt = "typo"  # slots: a row has its table's columns and no others
    run.close()
    assert not (run.folder / "events.parquet").exists()  # nothing refused was written
    with pytest.raises(RuntimeError, match=f"run {run.run_id} is closed"):
        run.write(CallRow(call_id="late"))
    run.close()  # closing twice is harmless
    assert (run.folder / "runs.parquet").exists()


def test_subscribers_see_every_row_in_order_after_it_is_on_disk(tmp_path):
    seen = []
    with Run(tmp_path, "x") as run:
        def listener(table, row):
            on_disk = rows_of(run.folder / f"{table}.jsonl")
            seen.append((table, row["seq"], on_disk[-1]["seq"]))

        run.subscribe(listener)
        run.subscribe(lambda table, row: seen.append(("second", row["seq"], None)))
        for i in range(3):
            run.write(EventRow(game_id="g", seq=i) if i % 2 == 0 else BeliefRow(game_id="g", seq=i))
    assert seen == [("events", 0, 0), ("second", 0, None), ("beliefs", 1, 1), ("second", 1, None),
                    ("events", 2, 2), ("second", 2, None)]


def test_a_steps_events_reach_the_file_in_one_flush_and_every_subscriber_after_it(tmp_path):
    """``GameRecorder.events`` (a step's events) writes its rows through ``Run.write_all``: one flush for the
    step (on the code before, one a row: a write to the file each, issue 42's CPU per call), the rows in order,
    each subscriber told of every row once all are on disk."""
    from toolkit.werewolf.engine.rules import Event
    from toolkit.werewolf.recorder import GameRecorder

    seen = []
    with Run(tmp_path, "x") as run:
        recorder = GameRecorder(run, "g")
        recorder.events([Event(0, 0, "night", "announcement", None, None, "first", "public")])
        handle, flushes = run._files["events"], []
        real = handle.flush
        run._files["events"] = type("Counted", (), {"write": handle.write, "close": handle.close,
                                                    "flush": lambda self: (flushes.append(1), real())})()
        run.subscribe(lambda table, row: seen.append((row["seq"], [r["seq"] for r in rows_of(
            run.folder / f"{table}.jsonl")])))
        recorder.events([Event(i, 1, "day_speech", "speech", "Player1", None, f"s{i}", "public")
                         for i in (1, 2, 3)])
        assert len(flushes) == 1
    assert seen == [(1, [0, 1, 2, 3]), (2, [0, 1, 2, 3]), (3, [0, 1, 2, 3])]
    assert list(load(tmp_path, complete_games=False).events["seq"]) == [0, 1, 2, 3] and recorder.n_events == 4


def test_a_run_masks_secrets_of_its_environment_as_it_starts(tmp_path, monkeypatch):
    monkeypatch.setenv("SERVICE_TOKEN", "tok-value-7777")
    with Run(tmp_path, "x") as run:
        monkeypatch.setenv("LATE_TOKEN", "late-value-8888")  # set after the run began: read once, at start
        text = "tok-value-7777 late-value-8888 ghp_" + "a" * 24
        run.write(EventRow(game_id="g", seq=0, text=text))
        run.write(EventRow(game_id="g", seq=1, text="sk-" + "b" * 20))
        run.write(SessionRow(session_id="s", run_id=run.run_id, task=text))
    t = load(tmp_path, complete_games=False)
    # every table: the environment's secret values (read once, at the start) and OpenAI's key shape; the
    # per-decision tables (calls, events, beliefs) look for no other shape (documented: one scan per shape)
    assert list(t.events["text"]) == ["[redacted SERVICE_TOKEN] late-value-8888 ghp_" + "a" * 24, "[redacted key]"]
    # the other tables: every key shape
    assert t.sessions.iloc[0]["task"] == "[redacted SERVICE_TOKEN] late-value-8888 [redacted key]"


def test_a_column_of_mixed_types_still_compacts(tmp_path):
    run = Run(tmp_path, "x")
    run.write(EventRow(game_id="g", seq=0, target=1))
    run.write(EventRow(game_id="g", seq=1, target="Player1"))
    run.close()
    assert (run.folder / "events.parquet").exists() and not (run.folder / "events.jsonl").exists()


def test_rows_with_different_keys_and_nested_values_compact_to_one_parquet(tmp_path):
    """Rows of an older run (a column missing from early rows, one it no longer writes holding a nested list),
    left as JSONL by a run that died: compacted to one Parquet, every value kept."""
    with Run(tmp_path, "x") as run:
        run.write(ToolCallRow(session_id="s", step=1, args=None))
        with open(run.folder / "tool_calls.jsonl", "a") as handle:
            handle.write(json.dumps({"session_id": "s", "step": 2, "args": "{}", "extra": [1, 2]}) + "\n")
    assert not (run.folder / "tool_calls.jsonl").exists()
    t = load(tmp_path).tool_calls
    assert list(t["step"]) == [1, 2] and list(t.columns[:len(TABLES["tool_calls"])]) == list(TABLES["tool_calls"])
    assert list(t["extra"].iloc[1]) == [1, 2]


# ------------------------------------------------------------------ CallLog
def call(cost, prompt=10, completion=5, ok=True, ctx="g"):
    c = Completion("x", "m", prompt_tokens=prompt, completion_tokens=completion, cost_usd=cost) if ok else None
    return Call(Request(game_id=ctx), "spec", "m", None, "t", completion=c, error=None if ok else "boom",
                attempts=[] if ok else [Attempt(1, "timeout", None, "slow", 3.0), Attempt(2, "timeout", None, "slow",
                                                                                           3.0)])


def test_call_log_totals_and_an_unknown_price_makes_the_total_unknown():
    log = CallLog()
    log.write(call(0.25))
    log.write(call(None, ok=False))  # a failed call counts as a call, adds no tokens and no cost
    log.write(call(0.5, prompt=1, completion=2))
    assert (log.calls, log.prompt_tokens, log.completion_tokens, log.cost_usd) == (3, 11, 7, 0.75)
    log.write(call(None))
    log.write(call(1.0))
    assert log.cost_usd is None and log.calls == 5 and log.prompt_tokens == 31
    assert [log.next_seq() for _ in range(3)] == [0, 1, 2] and log.fallbacks == 0


def test_call_log_writes_calls_and_attempts_rows(tmp_path):
    with Run(tmp_path, "x") as run:
        log = CallLog(run)
        for ok in (True, False, True):
            c = call(0.1, ok=ok)
            c.seq = log.next_seq()
            log.write(c)
    t = load(tmp_path)
    assert list(t.calls["call_id"]) == ["g-0", "g-1", "g-2"] and (t.calls["run_id"] == run.run_id).all()
    assert list(t.calls["attempts"]) == [1, 2, 1]
    assert list(t.attempts["call_id"]) == ["g-1", "g-1"] and list(t.attempts["attempt"]) == [1, 2]


def write_run(folder, **tables):
    folder.mkdir(parents=True)
    (folder / "runs.jsonl").write_text(json.dumps({"run_id": folder.name}) + "\n")
    for table, rows in tables.items():
        (folder / f"{table}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_load_finds_runs_at_any_depth_and_joins_them(tmp_path):
    write_run(tmp_path / "a" / "b" / "run1", games=[{"game_id": "g1", "winner": "village"}])
    write_run(tmp_path / "c" / "run2", games=[{"game_id": "g2", "winner": "werewolves"}])
    with Run(tmp_path / "d", "closed") as run:
        run.write(GameRow(game_id="g3", run_id=run.run_id, winner="draw"))
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "games.jsonl").write_text('{"game_id": "stray"}\n')  # no runs file: not a run
    t = load(tmp_path)
    assert sorted(t.runs["run_id"]) == sorted(["run1", "run2", run.run_id])
    assert sorted(t.games["game_id"]) == ["g1", "g2", "g3"]
    assert dict(zip(t.games["game_id"], t.games["winner"])) == {"g1": "village", "g2": "werewolves", "g3": "draw"}
    assert [f.name for f in run_folders(tmp_path / "a")] == ["run1"]
    assert len(load(tmp_path / "c").games) == 1


def test_columns_come_in_the_documented_order_with_extras_after(tmp_path):
    write_run(tmp_path / "r", sessions=[{"zz_extra": 1, "wall_s": 2.0, "session_id": "s", "model": "scripted:x"}])
    s = load(tmp_path).sessions
    assert list(s.columns) == [*TABLES["sessions"], "zz_extra"]
    assert s.iloc[0]["spec"] == "scripted:x" and s.iloc[0]["wall_s"] == 2.0 and pd.isna(s.iloc[0]["task"])


def test_a_renamed_column_does_not_overwrite_the_new_one(tmp_path):
    """A table with both the old and the new name keeps the new column as written, and the old as an extra."""
    write_run(tmp_path / "r", sessions=[{"session_id": "s", "spec": "random", "model": "gpt-x"}])
    s = load(tmp_path).sessions
    assert s.iloc[0]["spec"] == "random" and s.iloc[0]["model"] == "gpt-x"


def test_load_refuses_a_missing_folder_and_a_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no results folder"):
        load(tmp_path / "nope")
    (tmp_path / "f.parquet").write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file"):
        load(tmp_path / "f.parquet")
    empty = load(tmp_path)  # a folder with no runs: every table, empty, with its columns
    assert all(list(getattr(empty, t).columns) == list(TABLES[t]) and getattr(empty, t).empty for t in TABLES)
    assert repr(empty).startswith("Results(runs=0, games=0")


def test_recorded_calls_are_ordered_by_game_then_seq_and_can_be_filtered(tmp_path):
    calls = [{"call_id": f"{g}-{s}", "game_id": g, "seq": s, "replay_key": f"{g}/{s}", "response_text": f"{g}{s}"}
             for g, s in [("g2", 1), ("g1", 2), ("g2", 0), ("g1", 0), ("g1", 1)]]
    write_run(tmp_path / "r", calls=calls, games=[{"game_id": "g1"}, {"game_id": "g2"}],
              events=[{"game_id": "g1", "seq": 0}, {"game_id": "g2", "seq": 0}])
    assert [c["call_id"] for c in recorded_calls(tmp_path)] == ["g1-0", "g1-1", "g1-2", "g2-0", "g2-1"]
    assert [c["call_id"] for c in recorded_calls(tmp_path, "g2")] == ["g2-0", "g2-1"]
    with pytest.raises(ValueError, match="no recorded calls for game g9"):
        recorded_calls(tmp_path, "g9")
    m = get_model(f"replay:{tmp_path}")
    assert m.name == f"replay:{tmp_path.name}"
    answer = asyncio.run(m.generate(Request(game_id="g1", replay_key="g2/1")))
    assert answer.text == "g21" and answer.completion.cost_usd == 0.0


def test_a_partial_game_is_left_out_of_recorded_calls(tmp_path):
    write_run(tmp_path / "r", calls=[{"call_id": "p-0", "game_id": "partial", "seq": 0, "replay_key": "k"}],
              events=[{"game_id": "partial", "seq": 0}])
    with pytest.warns(UserWarning, match="left out 1 partial game"), pytest.raises(ValueError, match="no recorded"):
        recorded_calls(tmp_path)
    assert read_jsonl(tmp_path / "r" / "calls.jsonl")[0]["call_id"] == "p-0"  # still on disk


def test_an_experiment_name_cannot_place_a_run_outside_its_results_folder(tmp_path):
    """The run's folder is named from the experiment: '../../x' (as a caller of run_werewolf_cell could pass)
    once made the run's folder two levels up; now it is one safe name inside, and a crafted run id is refused."""
    with Run(tmp_path / "res", "../../escaped") as run:
        pass
    assert run.folder.parent == tmp_path / "res" and run.folder.name.startswith("escaped-")
    assert {p.name for p in tmp_path.iterdir()} == {"res"}
    with pytest.raises(ValueError, match="names a folder"):
        Run(tmp_path / "res", run_id="../../escaped")
    assert {p.name for p in tmp_path.iterdir()} == {"res"}


@pytest.mark.parametrize("with_orjson", [True, False])
def test_a_row_reads_back_the_same_whichever_encoder_wrote_it(tmp_path, monkeypatch, with_orjson):
    """Rows of plain values go through orjson (the hot path: a calls row holds the whole prompt), the rest and
    every row where orjson is missing through json: each reads back as json.dumps(default=str) would have it.
    Before (diff read s17 F7) the row of tricky text also held an int past 64 bits, so json wrote it: orjson's
    escaping was never read back."""
    import datetime as dt
    import math
    import toolkit.record.run_log as run_log

    if with_orjson:
        pytest.importorskip("orjson")  # a core dependency; a venv installed before it was one has none
    else:
        monkeypatch.setattr(run_log, "orjson", None)
    # the first row is all plain (orjson writes it where it is there: asserted below); the others are not: an int
    # past 64 bits, NaN, a date, a list (json writes them)
    rows = [{"text": "é «quote» \"\\ \n\t\u2028 😀 \x00", "n": 2**63 - 1, "f": 1e-7, "neg": -0.0, "ok": True,
             "none": None},
            {"big": 2**70, "n": 1},
            {"nan": math.nan, "inf": -math.inf, "f": 0.1},
            {"when": dt.datetime(2026, 12, 7, 16, 5, tzinfo=dt.timezone.utc), "list": [1, "a", None],
             "obj": {"k": 1.5}}]
    for i, values in enumerate(rows):
        line = run_log.row_line(values)
        by_orjson = line.startswith('{"') and '": ' not in line and '", ' not in line  # its compact separators
        assert by_orjson == (with_orjson and i == 0), line  # the tricky text went through orjson where it is
        expected = json.loads(json.dumps(values, ensure_ascii=False, default=str))
        got = json.loads(line)
        assert got.keys() == expected.keys()
        for k in expected:  # NaN != NaN: compared as text
            assert repr(got[k]) == repr(expected[k]), k
    plain = {"text": "é", "f": 1e-7}  # orjson's compact form where it writes, json's otherwise
    assert run_log.row_line(plain) == ('{"text":"é","f":1e-7}' if with_orjson else '{"text": "é", "f": 1e-07}')
