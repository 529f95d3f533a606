"""``toolkit export`` reads a study a batch of games at a time (``toolkit.export.study``): its memory does not grow
with the study's games, and what it writes is what the whole study loaded at once gives (byte for byte where the
export is deterministic)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from benchmarks.copy_study import copy_into_one_run, copy_run
from toolkit.record.load import load, run_folders


def copies(dst: Path, *sources: Path, n: int) -> Path:
    """``n`` copies of every run of ``sources`` under ``dst`` (fresh ids: each copy's games are games of their
    own)."""
    for k in range(1, n + 1):
        for source in sources:
            for folder in run_folders(source):
                copy_run(folder, dst / f"copy{k}" / source.name / folder.relative_to(source), k, 1000)
    return dst


def one_run(dst: Path, source: Path, n: int) -> Path:
    """One run of ``n`` games: the one run of ``source`` with its game ``n`` times over (fresh game and call ids
    and seeds; the run is one), in row groups of 500 rows, as a sweep's cell holds its games (its row groups are
    8 MB of JSONL, about 2,000 calls)."""
    (folder,) = run_folders(source)
    copy_into_one_run(folder, dst, range(1, n + 1), 1000, row_group=500)
    return dst


@pytest.fixture(scope="module")
def study(game_folder, session_folder, tmp_path_factory):
    """Five copies of the game (five games in five runs) and one of the two engineer sessions."""
    dst = copies(tmp_path_factory.mktemp("study") / "games", game_folder, n=5)
    copies(dst / "engineer", session_folder, n=1)
    return dst


def batched(folder, batch):
    from toolkit.export.study import Study

    return Study(folder, batch=batch)


def same_json_logs(old: Path, new: Path) -> bool:
    """Two Inspect ``.json`` logs equal but for the id Inspect draws for each log (``eval.eval_id``)."""
    a, b = json.loads(old.read_text()), json.loads(new.read_text())
    a["eval"].pop("eval_id"), b["eval"].pop("eval_id")
    return a == b


@pytest.mark.interop  # Inspect, otel, hf and mini write through the interop extra
@pytest.mark.parametrize("batch", [1, 2, 1000])
def test_every_export_writes_what_the_whole_load_writes(study, tmp_path, batch):
    from toolkit.export import hf, inspect_log, kaggle, mini, otel

    whole = load(study)
    assert len(whole.games) == 5 and len(whole.sessions) == 2
    parts = batched(study, batch)
    for name, write in {"kaggle": lambda r, d: kaggle.write(r, d),
                        "inspect": lambda r, d: inspect_log.write(r, d, max_samples=2, suffix=".json"),
                        "otel": lambda r, d: otel.write(r, d),
                        "hf": lambda r, d: hf.write(r, d, source="study"),
                        "mini": lambda r, d: mini.write(r if r is whole else r.rest(), d, {})}.items():
        for side in ("old", "new"):
            (tmp_path / side / name).mkdir(parents=True)
        old, new = write(whole, tmp_path / "old" / name), write(parts, tmp_path / "new" / name)
        assert [p.relative_to(tmp_path / "old") for p in old] == [p.relative_to(tmp_path / "new") for p in new]
        for a, b in zip(old, new):
            if name == "otel":  # the same traces: each batch's in its own order (docs/exports.md)
                assert sorted(a.read_text().splitlines()) == sorted(b.read_text().splitlines())
                assert len(a.read_text().splitlines()) == 5 + 2
            elif name == "inspect":
                assert same_json_logs(a, b), a.name
            elif a.suffix == ".parquet":  # the same rows in the same order, the same types (row groups may differ)
                x, y = pq.read_table(a), pq.read_table(b)
                assert x.schema.equals(y.schema) and x.equals(y), a.name
                pd.testing.assert_frame_equal(pd.read_parquet(a), pd.read_parquet(b))
            else:
                assert a.read_bytes() == b.read_bytes(), a.name
    assert len(list((tmp_path / "new" / "inspect").glob("werewolf_*"))) == 0  # .json logs lead with a time
    assert len(list((tmp_path / "new" / "kaggle").glob("*.json"))) == len(kaggle.decided(whole.games))


@pytest.mark.slow
def test_a_batch_reads_only_its_games_rows(study):
    """Each batch holds the rows of its own games only, read with their ids as the filter (no table whole)."""
    parts = batched(study, 2)
    whole = load(study)
    seen = []
    for part in parts.batches():
        ids = set(part.games["game_id"])
        assert len(ids) <= 2
        for table in ("players", "events", "calls", "beliefs"):
            frame = getattr(part, table)
            assert set(frame["game_id"]) <= ids, table
            expected = getattr(whole, table)
            assert len(frame) == expected["game_id"].isin(ids).sum(), table
        seen += sorted(ids)
    assert sorted(seen) == sorted(whole.games["game_id"])
    rest = parts.rest()
    assert rest.games.empty and rest.calls["game_id"].isna().all() and len(rest.sessions) == 2
    assert len(rest.calls) == whole.calls["game_id"].isna().sum() > 0


@pytest.mark.interop  # otel and Inspect write through the interop extra
@pytest.mark.parametrize("fmt", ["kaggle", "otel", "inspect", "hf"])
def test_an_export_holds_one_batch_when_it_reads_the_next(study, tmp_path, monkeypatch, fmt):
    """When an exporter asks for the next batch of games (or the next piece of a table), nothing holds the one it
    had: its peak is one batch, not two (each exporter's loop variable kept the last batch alive while the next
    was read: at 10,000 games the kaggle export's peak went from 830 MB at its first batch to 1,060 MB from its
    second on)."""
    import gc
    import weakref

    from toolkit.export import hf, inspect_log, kaggle, otel
    from toolkit.export.study import Study

    alive, original = [], {"batches": Study.batches, "rows": Study.rows}

    def watched(name):
        def wrapper(self, *args, **kwargs):
            previous = None
            for item in original[name](self, *args, **kwargs):
                held = weakref.ref(item)
                if previous is not None:
                    gc.collect()
                    alive.append(previous() is not None)
                previous = held
                yield item
                del item  # this wrapper's own reference
        return wrapper

    monkeypatch.setattr(Study, "batches", watched("batches"))
    monkeypatch.setattr(Study, "rows", watched("rows"))
    monkeypatch.setattr("toolkit.export.study.ROWS", 20)  # a table in pieces of 20 rows
    write = {"kaggle": lambda r, d: kaggle.write(r, d), "otel": lambda r, d: otel.write(r, d),
             "inspect": lambda r, d: inspect_log.write(r, d, max_samples=1), "hf": lambda r, d: hf.write(r, d)}[fmt]
    write(Study(study, batch=1), tmp_path)
    assert len(alive) >= 4 and not any(alive), f"{fmt}: {sum(alive)} of {len(alive)} batches held"


@pytest.mark.slow
def test_a_table_is_read_a_piece_at_a_time(game_folder, tmp_path):
    """``rows(table)`` holds one piece of the table while the caller has it, not the table: Arrow's memory while
    the first piece of a 60-game run's calls is held is a small part of what the whole calls table takes (the
    pieces were read from a list of every batch of the table, made before the first was given: the Hugging Face
    export of 10,000 games held 1.5 GB of calls in Arrow's pool for its first piece)."""
    from toolkit.export.study import Study

    folder = one_run(tmp_path / "study", game_folder, 60)
    start = pa.total_allocated_bytes()
    every = list(ds.dataset(folder / "calls.parquet").to_batches(batch_size=40))  # the table, as batches are read
    whole = pa.total_allocated_bytes() - start
    del every
    study = Study(folder)
    study.left_out()  # the completeness check's reads, before the count starts
    before = pa.total_allocated_bytes()
    pieces = study.rows("calls", rows=40)
    first = next(pieces)
    held = pa.total_allocated_bytes() - before
    assert 0 < len(first) < 100
    assert held < whole / 2, f"{held:,} bytes held for a piece of {len(first)} rows; the table is {whole:,}"
    assert sum(len(p) for p in pieces) + len(first) == len(load(folder).calls)


PEAK = """
import sys, warnings
from pathlib import Path
import toolkit.export.kaggle, toolkit.export.otel, toolkit.export.hf, toolkit.export.inspect_log, toolkit.analysis
import inspect_ai.log, opentelemetry.sdk.trace  # the writers' libraries, before the peak is reset
from toolkit.cli import main
batch = {"BATCH": int(sys.argv[1]), "ROWS": int(sys.argv[2])}
try:
    import toolkit.export.study as study
    vars(study).update(batch)
except ImportError:  # the code before batches (what the test shows failing)
    pass
def status(key):
    return next(int(line.split()[1]) for line in Path("/proc/self/status").read_text().splitlines()
                if line.startswith(key + ":"))
Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
before = status("VmRSS")
warnings.simplefilter("ignore")
assert main(sys.argv[3:]) == 0
print(status("VmHWM") - before)
"""


def peak_kb(argv: list[str], batch: int = 2, rows: int = 100) -> int:
    """How far one ``toolkit`` command's resident memory rose above where it started (kB: ``VmHWM`` reset by
    ``/proc/self/clear_refs`` once the writers are imported), in a process of its own."""
    # Arrow's default allocator (mimalloc) keeps freed pages for a while: its resident memory rose over the first
    # tens of batches whatever the study's size; the system allocator returns them
    done = subprocess.run([sys.executable, "-c", PEAK, str(batch), str(rows), *argv], capture_output=True, text=True,
                          timeout=600, cwd=Path(__file__).resolve().parents[2],
                          env={**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system"})
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.split()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["kaggle", "otel"])
def test_an_export_does_not_grow_with_the_games(fmt, game_folder, tmp_path):
    """Ten times the games, about the same peak: an export holds a batch of games (here 2), not the study. Before
    batches, ``export`` loaded every table with its prompts: from 40 games to 200 its peak grew by more than the
    160 more games' prompts (kaggle: +67 MB for 25 MB of prompts); batched, by a few MB (the games table without
    its configs, the paths written: 4-9 MB from 40 to 200 games, 7 MB from 40 to 440, allocator noise included;
    at 40 -> 200 the noise once crossed a third of the prompts in CI, hence 400 games). Inspect holds a log's
    games (up to ``MAX_SAMPLES``, 500) and hf a piece of each table (``ROWS`` rows): the test that they write what
    they wrote is above."""
    prompts = load(game_folder).calls["messages"].str.len().sum() // 1024  # one game's prompts, kB
    peaks = {}
    for n in (40, 400):
        folder = one_run(tmp_path / f"study-{n}", game_folder, n)
        peaks[n] = peak_kb(["export", fmt, str(folder), "--out", str(tmp_path / f"out-{n}")])
    grew = peaks[400] - peaks[40]
    assert grew < 360 * prompts / 3, f"{fmt}: the peak grew by {grew:,} kB from 40 games to 400 ({peaks} kB); " \
                                     f"a game's prompts are {prompts:,} kB"
