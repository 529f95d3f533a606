"""Loading never drops silently: a damaged JSONL line is named, a truncated Parquet file is named and
skipped while the rest loads, and a killed-then-resumed cell loads as complete games only, with the
number of partial games said."""

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest

from toolkit.cli import main
from toolkit.record.rows import CallRow
from toolkit.record.run_log import DamagedLines, Run, read_jsonl
from toolkit.record.load import LoadWarning, load
from toolkit.werewolf.game import GameConfig, play_games
from toolkit.core.sync import run_sync

REPO = Path(__file__).resolve().parents[2]


def write_rows(path: Path, n: int) -> None:
    path.write_text("".join(json.dumps({"call_id": f"c{i}", "seq": i}) + "\n" for i in range(n)))


def test_a_damaged_middle_line_is_named_and_the_rest_loads(tmp_path):
    path = tmp_path / "calls.jsonl"
    write_rows(path, 1002)
    lines = path.read_text().splitlines(keepends=True)
    lines[500] = '{"call_id": "c500", "se\x00 garbage\n'
    path.write_text("".join(lines))
    with pytest.warns(DamagedLines, match=r"calls.jsonl: 1 damaged line left out \(line 501\); 1001 rows read"):
        rows = read_jsonl(path)
    assert len(rows) == 1001 and "c500" not in {r["call_id"] for r in rows}
    with pytest.raises(ValueError, match="line 501"):
        read_jsonl(path, strict=True)


def test_a_torn_last_line_is_skipped_without_a_warning(tmp_path):
    path = tmp_path / "calls.jsonl"
    write_rows(path, 10)
    with open(path, "a") as handle:
        handle.write('{"call_id": "torn", "se')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = read_jsonl(path)
    assert len(rows) == 10


def test_a_damaged_line_in_a_run_folder_is_reported_by_load_and_kept_at_compaction(tmp_path):
    run = Run(tmp_path, "damaged")
    for i in range(5):
        run.write(CallRow(call_id=f"c{i}", seq=i))
    with open(run.folder / "calls.jsonl", "a") as handle:  # rows are flushed as written: append after them
        handle.write("{not json}\n")  # what a disk error could leave in the middle
    run.write(CallRow(call_id="c5", seq=5))
    with pytest.warns(DamagedLines, match=r"line 6"):
        assert len(load(tmp_path).calls) == 6
    with pytest.warns(DamagedLines, match=r"line 6"):
        run.close()
    assert len(load(tmp_path).calls) == 6
    assert (run.folder / "calls.jsonl.damaged").exists()  # the evidence is kept beside the Parquet


def finished_run(root: Path) -> Path:
    with Run(root, "finished") as run:
        run_sync(play_games([GameConfig(seed=s) for s in range(3)], run))
    return run.folder


def test_a_truncated_parquet_is_named_and_the_other_tables_load(tmp_path):
    folder = finished_run(tmp_path)
    calls = folder / "calls.parquet"
    calls.write_bytes(calls.read_bytes()[: calls.stat().st_size // 2])
    with pytest.warns(LoadWarning, match=r"calls.parquet: cannot be read"):
        results = load(tmp_path)
    assert len(results.games) == 3 and len(results.events) > 0 and results.calls.empty
    with pytest.raises(ValueError, match="calls.parquet"):
        load(tmp_path, strict=True)


@pytest.mark.slow
def test_report_on_a_folder_with_a_truncated_parquet_warns_in_one_line_and_writes(tmp_path, capsys):
    folder = finished_run(tmp_path / "res")
    (folder / "calls.parquet").write_bytes(b"PAR1 truncated")
    assert main(["report", str(tmp_path / "res"), "--out", str(tmp_path / "rep")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: ") and "calls.parquet: cannot be read" in err and "Traceback" not in err
    assert (tmp_path / "rep" / "summary.md").exists()


KILLED_CELL = """
import sys
from toolkit.study.experiments import run_werewolf_cell
run_werewolf_cell(sys.argv[1], n_games=int(sys.argv[2]), seed=100, concurrency=8)
"""


@pytest.mark.slow
def test_a_killed_then_resumed_cell_loads_complete_games_and_warns_of_none_missing(tmp_path):
    """The cell code a sweep's notebook runs (``run_werewolf_cell``), killed with SIGKILL mid-way, then
    run again: it resumes. ``load`` keeps only games with a ``games`` row, and since every killed game was
    played again to its end, warns of no partial game (it did, for every later load of a finished study)."""
    cell, n_games = tmp_path / "cell", 60
    proc = subprocess.Popen([sys.executable, "-c", KILLED_CELL, str(cell), str(n_games)], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:  # kill once some games have finished (others are in flight)
        written = sum(p.stat().st_size for p in cell.glob("*/games.jsonl"))
        if written > 2000:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    subprocess.run([sys.executable, "-c", KILLED_CELL, str(cell), str(n_games)], cwd=REPO, check=True,
                   capture_output=True, timeout=300)

    everything = load(cell, complete_games=False)
    partial = set(everything.events["game_id"]) - set(everything.games["game_id"])
    assert partial  # the kill left games without a games row

    with warnings.catch_warnings():  # every killed game was played again to the end: none is missing
        warnings.simplefilter("error", LoadWarning)
        results = load(cell)
    assert sorted(results.games["seed"]) == list(range(100, 100 + n_games))  # resumed: none lost, none twice
    finished = set(results.games["game_id"])
    for table in ("players", "events", "calls"):
        assert set(getattr(results, table)["game_id"]) == finished, table
    assert len(everything.calls) > len(results.calls)


def test_games_with_params_joins_each_runs_parameters_to_its_games(tmp_path):
    """The one runs-to-games join: a run's parameters become columns of its games; a parameter the games table
    has keeps the games' value, results_dir is left out, a dict becomes JSON text, a game of no run gets NaN."""
    from toolkit.record.load import games_with_params
    from toolkit.record.rows import GameRow

    for name, params in (("a", {"wolf_model": "random", "seed": 99, "results_dir": "/x", "seats": {"P1": "h"}}),
                         ("b", {"wolf_model": "heuristic"})):
        with Run(tmp_path, name, config=params, run_id=name) as run:
            run.write(GameRow(game_id=f"g-{name}", run_id=name, seed=1, winner="village"))
    games = games_with_params(load(tmp_path)).set_index("game_id")
    assert games.loc["g-a", "wolf_model"] == "random" and games.loc["g-b", "wolf_model"] == "heuristic"
    assert games.loc["g-a", "seed"] == 1 and "results_dir" not in games.columns
    assert json.loads(games.loc["g-a", "seats"]) == {"P1": "h"} and pd.isna(games.loc["g-b", "seats"])


def test_a_copied_run_folder_is_counted_once_with_a_warning(tmp_path):
    import asyncio
    import shutil

    from toolkit.record.load import LoadWarning
    from toolkit.record.run_log import Run
    from toolkit.werewolf.game import GameConfig, GameRunner

    with Run(tmp_path / "res") as run:
        asyncio.run(GameRunner(GameConfig(seed=2), run).play())
    once = load(tmp_path / "res")
    shutil.copytree(run.folder, tmp_path / "res" / "backup" / run.folder.name)
    with pytest.warns(LoadWarning, match="a copy of run"):
        twice = load(tmp_path / "res")
    assert len(twice.games) == len(once.games) == 1
    assert len(twice.events) == len(once.events) and len(twice.calls) == len(once.calls)


def test_duplicated_rows_inside_one_run_are_kept_once(tmp_path):
    import asyncio

    import pandas as pd

    from toolkit.record.run_log import Run
    from toolkit.werewolf.game import GameRunner

    with Run(tmp_path) as run:
        asyncio.run(GameRunner(GameConfig(seed=2), run).play())
    for table in ("games", "events"):
        path = run.folder / f"{table}.parquet"
        rows = pd.read_parquet(path)
        pd.concat([rows, rows]).to_parquet(path, index=False)  # every row written twice
    with pytest.warns(LoadWarning, match="duplicated (games|events)"):
        results = load(tmp_path)
    assert len(results.games) == 1 and results.events["seq"].is_unique


def test_a_truncated_event_log_makes_its_game_incomplete_with_a_warning_naming_it(tmp_path):
    """events.jsonl with the last line cut mid-write (game B's last event) and, in a second copy, half of game
    A's events missing: each such game is named as truncated and left out of every table (its vote metrics
    would come from half its events); the other game loads whole. ``complete_games=False`` keeps them."""
    import asyncio

    from toolkit.werewolf.game import GameRunner

    with Run(tmp_path / "r", run_id="r") as run:
        for seed in (2, 3):
            asyncio.run(GameRunner(GameConfig(seed=seed), run).play())
    whole = load(tmp_path / "r")
    a, b = whole.games["game_id"]
    assert (whole.games.set_index("game_id")["n_events"] == whole.events.groupby("game_id").size()).all()
    events = pd.read_parquet(run.folder / "events.parquet")
    (run.folder / "events.parquet").unlink()
    rows = [json.dumps(r, default=str) for r in events.to_dict("records")]
    last_of_b = max(i for i, r in enumerate(events["game_id"]) if r == b)
    kept = [r for i, r in enumerate(rows) if i != last_of_b] + [rows[last_of_b][:25]]  # torn, as by a kill
    (run.folder / "events.jsonl").write_text("\n".join(kept))
    with pytest.warns(LoadWarning, match=rf"1 game with a truncated event log \({b}: \d+ of its \d+ events\)"):
        cut = load(tmp_path / "r")
    assert list(cut.games["game_id"]) == [a] and set(cut.events["game_id"]) == {a}
    assert set(cut.calls["game_id"]) == {a} and set(cut.players["game_id"]) == {a}
    assert len(cut.events) == len(whole.events[whole.events["game_id"] == a])

    half = [r for i, r in enumerate(rows) if events["game_id"][i] != a or events["seq"][i] < 20]
    (run.folder / "events.jsonl").write_text("\n".join(half) + "\n")
    with pytest.warns(LoadWarning, match=rf"{a}: 20 of its \d+ events"):
        kept_all = load(tmp_path / "r", complete_games=False)
    assert set(kept_all.games["game_id"]) == {a, b}  # named, but kept when asked for everything


def test_a_gap_in_the_events_marks_a_game_incomplete_without_n_events(tmp_path):
    """Results written before the games row kept n_events: a gap in a game's seq (lines lost from the middle)."""
    import asyncio

    from toolkit.werewolf.game import GameRunner

    with Run(tmp_path, run_id="r") as run:
        asyncio.run(GameRunner(GameConfig(seed=2), run).play())
    games = pd.read_parquet(run.folder / "games.parquet").assign(n_events=None)
    games.to_parquet(run.folder / "games.parquet", index=False)
    events = pd.read_parquet(run.folder / "events.parquet")
    events[events["seq"] != 5].to_parquet(run.folder / "events.parquet", index=False)
    with pytest.warns(LoadWarning, match=r"truncated event log \(g\S+: \d+ events with seq up to \d+\)"):
        assert load(tmp_path).games.empty


def parquet_run(folder: Path, **tables: pd.DataFrame) -> None:
    folder.mkdir(parents=True)
    pd.DataFrame({"run_id": [folder.name]}).to_parquet(folder / "runs.parquet", index=False)
    for table, frame in tables.items():
        frame.to_parquet(folder / f"{table}.parquet", index=False)


def test_runs_whose_files_type_a_column_differently_load_as_one_table(tmp_path):
    """One dataset scan over every run's file: a column that is all null in one run (Arrow's null type, as
    compaction wrote it before) and text in another, a count written as int in one and float in another, a
    column only newer runs have: one table, every value kept, run by run in folder order."""
    parquet_run(tmp_path / "a", calls=pd.DataFrame({"call_id": ["a0", "a1"], "error": [None, None],
                                                    "latency_ms": [1, 2]}))
    parquet_run(tmp_path / "b", calls=pd.DataFrame({"call_id": ["b0"], "error": ["timeout"], "latency_ms": [2.5],
                                                    "finish_reason": ["stop"]}))
    calls = load(tmp_path).calls
    assert list(calls["call_id"]) == ["a0", "a1", "b0"]
    assert list(calls["latency_ms"]) == [1.0, 2.0, 2.5]
    assert calls["error"].isna().sum() == 2 and calls["error"].iloc[2] == "timeout"
    assert calls["finish_reason"].isna().sum() == 2 and calls["finish_reason"].iloc[2] == "stop"
    empty = load(tmp_path / "a").calls  # a column without a value reads as None, as it always has
    assert empty["error"].tolist() == [None, None] and empty["session_id"].tolist() == [None, None]


def test_load_reads_only_the_columns_asked_for_and_still_leaves_out_partial_games(tmp_path):
    """What a sweep's summary reads: the games' and calls' few columns it needs, never the prompts; a partial
    game (events but no games row) is left out of what is read all the same."""
    with Run(tmp_path, "cols") as run:
        run_sync(play_games([GameConfig(seed=s) for s in range(2)], run))
        partial = CallRow(call_id="p-0", game_id="partial", seq=0, messages="[]")
        run.write(partial)
    events = pd.read_parquet(run.folder / "events.parquet")
    pd.concat([events, events.head(1).assign(game_id="partial")]).to_parquet(run.folder / "events.parquet")
    with pytest.warns(LoadWarning, match="left out 1 partial game"):
        t = load(tmp_path, columns={"games": ["seed"], "calls": ["call_id", "game_id"]})
    assert list(t.games.columns) == ["seed"] and sorted(t.games["seed"]) == [0, 1]
    assert list(t.calls.columns) == ["call_id", "game_id"] and "partial" not in set(t.calls["game_id"])
    assert t.events.empty and list(t.events.columns) == list(load(tmp_path, complete_games=False).events.columns)
    with pytest.raises(ValueError, match="no table 'call'"):
        load(tmp_path, columns={"call": None})


@pytest.mark.slow
def test_scan_keeps_each_key_once_without_holding_every_key(tmp_path):
    """``scan`` (the report's pass over the prompts) keeps the first copy of a row read twice, as ``load`` does,
    across runs and batches; it finds them from 8-byte hashes of the keys and checks only the rows whose hash
    repeats, where it held every key seen as a Python object (0.5 GB of call ids at 100,000 games)."""
    import sys
    import tracemalloc

    from toolkit.record.load import scan

    n = 60_000
    ids = [f"{i:08d}-4f2e-9a51-{i * 7919 % 10**12:012d}" for i in range(n)]  # uuid-sized call ids
    a = pd.DataFrame({"call_id": ids, "game_id": [f"g{i // 40}" for i in range(n)], "spec": "first"})
    again = a.iloc[[5, 17, 40_000, 59_999]].assign(spec="copy")  # read twice: the copies come later
    b = pd.concat([pd.DataFrame({"call_id": ["b0", "b1"], "game_id": "gb", "spec": "first"}), again,
                   pd.DataFrame({"call_id": ["b1"], "game_id": "gb", "spec": "copy"})], ignore_index=True)
    parquet_run(tmp_path / "a", calls=a)
    parquet_run(tmp_path / "b", calls=b)
    tracemalloc.start()
    try:
        rows = sum(len(part) for part in scan(tmp_path, "calls", ["game_id"], rows=5_000))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rows == n + 2
    parts = pd.concat(list(scan(tmp_path, "calls", ["call_id", "spec"], rows=5_000)), ignore_index=True)
    assert parts["call_id"].is_unique and set(parts["spec"]) == {"first"} and len(parts) == n + 2
    assert list(parts["call_id"]) == ids + ["b0", "b1"]  # in the order read, as ``load`` keeps them
    keys = sys.getsizeof(set(ids)) + sum(map(sys.getsizeof, ids))  # every key as a Python string in a set: 6.9 MB
    assert peak < keys / 2, (peak, keys)  # the old code's peak: 7.1 MB (2.3 MB now)
    kept = pd.concat(list(scan(tmp_path, "calls", ["call_id", "game_id"], games={"gb", "g0"}, rows=5_000)))
    assert list(kept["call_id"]) == ids[:40] + ["b0", "b1"]  # the kept games' copies only, each once


def test_scan_selects_games_without_game_id_among_the_columns(tmp_path):
    """``scan(..., games=...)`` reads ``game_id`` for the selection and returns the columns asked for (before, it
    raised a KeyError (no field game_id) unless the caller asked for that column); a table without games is refused."""
    from toolkit.record.load import scan

    parquet_run(tmp_path / "a", calls=pd.DataFrame({"call_id": ["a0", "a1", "a2"], "game_id": ["g0", "g1", "g0"],
                                                    "spec": ["x", "y", "z"]}))
    parts = list(scan(tmp_path, "calls", ["spec"], games={"g0"}))
    assert [list(p.columns) for p in parts] == [["spec"]] and parts[0]["spec"].tolist() == ["x", "z"]
    both = pd.concat(list(scan(tmp_path, "calls", ["spec", "game_id"], games={"g1"})))
    assert both.to_dict("records") == [{"spec": "y", "game_id": "g1"}]
    with pytest.raises(ValueError, match="the sessions table has no game_id column"):
        next(scan(tmp_path, "sessions", ["task"], games={"g0"}))


def test_the_completeness_check_reads_the_events_in_bounded_batches(tmp_path):
    """``game_stats`` (every load's completeness check) reads the events' ids a batch at a time: batches of
    a million rows cost ~150 MB of a 100,000-game study's sweep and kernel; they are at most 131,072 rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from toolkit.record.load import Tables, game_stats

    n = 300_000
    pq.write_table(pa.table({"game_id": [f"g{i // 50}" for i in range(n)], "seq": [i % 50 for i in range(n)]}),
                   tmp_path / "events.parquet")
    sizes = [b.num_rows for b in Tables([tmp_path]).batches("events", ["game_id", "seq"])]
    assert sum(sizes) == n and max(sizes) <= 1 << 17, sizes
    stats, _ = game_stats(Tables([tmp_path]))
    assert len(stats) == n // 50 and set(stats["size"]) == {50} and set(stats["max"]) == {49}


def test_a_partial_game_played_again_to_its_end_is_not_reported_missing(tmp_path):
    """A stopped game (rows, no games row) that a later run of the same folder finished with the same seed is a
    resumed game, not a partial one: its rows are still left out, but no warning says a game is missing (every
    later load of a finished, resumed study said so). A partial game nobody finished is still named."""
    with Run(tmp_path, "first") as first:
        run_sync(play_games([GameConfig(seed=0)], first))
    with Run(tmp_path, "again") as again:
        run_sync(play_games([GameConfig(seed=5)], again))
    events = pd.read_parquet(first.folder / "events.parquet")
    stopped = [events.head(2).assign(game_id=g) for g in ("g5-stopped", "g7-stopped")]
    pd.concat([events, *stopped]).to_parquet(first.folder / "events.parquet")
    with pytest.warns(LoadWarning, match="left out 1 partial game") as seen:
        results = load(tmp_path)
    assert len([w for w in seen if "partial" in str(w.message)]) == 1
    assert sorted(results.games["seed"]) == [0, 5]
    assert not {"g5-stopped", "g7-stopped"} & set(results.events["game_id"])  # both left out all the same
    # what a sweep's summary reads of each cell (its games' few columns, no run_id or seed): the same count; it
    # said 2, for every cell of a finished, resumed sweep (review s17 E)
    with pytest.warns(LoadWarning, match="left out 1 partial game") as seen:
        few = load(tmp_path, columns={"games": ["game_id", "winner", "n_calls", "n_fallbacks"]})
    assert len([w for w in seen if "partial" in str(w.message)]) == 1
    assert list(few.games.columns) == ["game_id", "winner", "n_calls", "n_fallbacks"] and len(few.games) == 2
