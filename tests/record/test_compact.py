"""Compaction (JSONL → Parquet) streams: its memory does not grow with the table, every column and value of the
row classes is carried through, and a file Arrow cannot parse block by block still compacts, row by row."""

import dataclasses
import json
import random
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from toolkit.record import compact as C
from toolkit.record.load import load
from toolkit.record.rows import CallRow
from toolkit.record.run_log import Run

ROOT = Path(__file__).resolve().parents[2]

# Compacts DIR/calls.jsonl in a fresh process; prints the peak resident memory (MB) after the imports and after
# the compaction (getrusage's maxrss: the process's high-water mark, Arrow's allocations included).
MEASURE = """
import resource, sys
from pathlib import Path
from toolkit.record.compact import compact
def peak(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
before = peak()
compact(Path(sys.argv[1]), "calls")
print(before, peak())
"""


def call_row(i: int, rng: random.Random, seat=None, words: int = 1000) -> str:
    """A calls row like a game's: a ~6 KB prompt of varied text (so it does not compress away)."""
    words = " ".join(rng.choices(("wolf", "vote", "Player3", "seer", "night", "day", "claim", "I think"), k=words))
    row = CallRow(call_id=f"g{i // 40}-{i % 40}", run_id="r", game_id=f"g{i // 40}", seq=i % 40,
                  seat=seat if seat is not None else f"Player{i % 7 + 1}", spec="heuristic", model="heuristic",
                  messages=json.dumps([{"role": "user", "content": words}]), response_text="{}", parsed="{}",
                  ok=True, attempts=1, fallback=False, latency_ms=0.1, prompt_tokens=1500, completion_tokens=9,
                  started_at="2026-12-02T00:00:00.000Z", replay_key=f"classic7/{i}/x")
    return json.dumps(row.values()) + "\n"


def compaction_growth_mb(folder: Path, rows: int, mixed: bool) -> float:
    """MB the compaction of ``rows`` calls rows adds to a fresh process's peak memory."""
    folder.mkdir()
    rng = random.Random(0)
    with open(folder / "calls.jsonl", "w") as handle:
        for i in range(rows):  # mixed: one seat written as a number sends the file down the row-by-row path
            handle.write(call_row(i, rng, seat=1 if mixed and i == rows // 2 else None))
    out = subprocess.run([sys.executable, "-c", MEASURE, str(folder)], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    before, after = map(float, out.stdout.split())
    assert (folder / "calls.parquet").exists() and pq.read_metadata(folder / "calls.parquet").num_rows == rows
    return after - before


@pytest.mark.parametrize("mixed", [False, True], ids=["arrow blocks", "row by row"])
@pytest.mark.slow
def test_compaction_memory_does_not_grow_with_the_table(tmp_path, mixed):
    """4,000 then 16,000 rows (24 MB then 96 MB of JSONL): the peak grows by the same bounded amount. Reading the
    whole file at once (the compaction of e01e9c5) grew it by more than the file: ~130 MB more for the larger."""
    small = compaction_growth_mb(tmp_path / "small", 4000, mixed)
    large = compaction_growth_mb(tmp_path / "large", 16000, mixed)
    assert large < small + 25, (small, large)
    assert large < 120, (small, large)


@pytest.mark.parametrize("mixed", [False, True], ids=["arrow blocks", "row by row"])
def test_prompts_have_no_statistics_so_a_row_group_adds_little_footer(tmp_path, monkeypatch, mixed):
    """A row group's min/max of the prompts was two prompts (~7 KB a row group of a real calls table, whose
    prompts are ~3.3 KB; Arrow leaves out a statistic over 4 KB): the footer, which the writer holds until it
    closes and every reader parses, grew by that."""
    monkeypatch.setattr(C, "BLOCK_BYTES", 30_000)  # a row group every ~4 rows
    monkeypatch.setattr(C, "BATCH_BYTES", 30_000)
    rng = random.Random(2)
    (tmp_path / "calls.jsonl").write_text("".join(call_row(i, rng, seat=1 if mixed and i == 50 else None,
                                                            words=500) for i in range(120)))
    C.compact(tmp_path, "calls")
    meta = pq.read_metadata(tmp_path / "calls.parquet")
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    group = meta.row_group(0)
    kept = {n for i, n in enumerate(names) if group.column(i).statistics is not None
            and group.column(i).statistics.has_min_max}
    assert meta.num_row_groups >= 10 and meta.num_rows == 120
    assert "messages" not in kept and {"call_id", "game_id", "seq", "prompt_tokens"} <= kept, kept
    assert meta.serialized_size / meta.num_row_groups < 4500, meta.serialized_size / meta.num_row_groups


def test_every_declared_column_and_value_survives_compaction_in_many_pieces(tmp_path, monkeypatch):
    monkeypatch.setattr(C, "BLOCK_BYTES", 2000)  # many pieces, each parsed against the declared types
    rng = random.Random(1)
    rows = [json.loads(call_row(i, rng)) for i in range(30)]
    rows[3].update(temperature=0.7, cached_tokens=5, error="bad", cost_usd=0.01)
    with Run(tmp_path, "x") as run:
        for row in rows:
            run.write(CallRow.of(row))
    schema = pq.read_schema(run.folder / "calls.parquet")
    assert schema.names == [f.name for f in dataclasses.fields(CallRow)]  # every column, in the declared order
    assert str(schema.field("temperature").type) == "double" and str(schema.field("ok").type) == "bool"
    back = pd.read_parquet(run.folder / "calls.parquet")
    assert back.iloc[3]["temperature"] == 0.7 and back.iloc[3]["cached_tokens"] == 5
    assert list(back["messages"]) == [r["messages"] for r in rows]


def test_a_column_first_seen_late_and_a_line_longer_than_a_piece_are_kept(tmp_path, monkeypatch):
    """Rows a later version wrote (a column no row class declares, appearing after the first piece) and a
    prompt longer than a piece: Arrow cannot parse the file piece by piece, the row path keeps every value."""
    monkeypatch.setattr(C, "BLOCK_BYTES", 500)
    folder = tmp_path / "run"
    folder.mkdir()
    rows = [{"call_id": f"c{i}", "seq": i, "messages": "x" * (3000 if i == 7 else 10)} for i in range(20)]
    for row in rows[10:]:
        row["stop_kind"] = "stop"
        row["extras"] = {"top_p": 0.9}
    (folder / "calls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "runs.jsonl").write_text(json.dumps({"run_id": "r"}) + "\n")
    C.compact(folder, "calls")
    back = load(tmp_path, complete_games=False).calls
    assert list(back["seq"]) == list(range(20)) and len(back["messages"].iloc[7]) == 3000
    assert back["stop_kind"].isna().sum() == 10 and set(back["stop_kind"].dropna()) == {"stop"}
    assert back["extras"].iloc[15] == {"top_p": 0.9}
