"""Sweeps through real papermill kernels: killed with kill -9 and rerun, nothing is lost or duplicated;
the same on a Dask LocalCluster. Also the papermill command of docs/experiments.md."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from toolkit.record.load import load

REPO = Path(__file__).resolve().parents[2]
N_GAMES = 40


def sweep_file(tmp_path, name):
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"""name: {name}
notebook: experiments/werewolf.ipynb
parameters: {{n_games: {N_GAMES}, seed: 100}}
grid:
  wolf_model: [heuristic, random]
  village_model: [heuristic, random]
""")
    return path


def sweep_cmd(path, results, executor):
    return [sys.executable, "-m", "toolkit", "sweep", str(path), "--workers", "2", "--executor", executor,
            "--results", str(results)]


@pytest.mark.parametrize("executor", ["local", "dask"])
@pytest.mark.slow
def test_kill_9_then_rerun_finishes_the_grid_without_loss_or_duplicates(tmp_path, executor):
    path, results = sweep_file(tmp_path, f"kill-{executor}"), tmp_path / "results"
    proc = subprocess.Popen(sweep_cmd(path, results, executor), cwd=REPO, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 180
    while time.time() < deadline:  # kill once some games of some cell have been written
        written = sum(p.stat().st_size for p in results.glob("*/*/*/games.jsonl"))
        if written > 3000:
            break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    sweep_dir = results / f"kill-{executor}"
    cells = sorted(p for p in sweep_dir.iterdir() if p.is_dir() and not p.name.startswith("."))  # .limits: shared
    assert cells and not all((c / "DONE.json").exists() for c in cells)  # killed mid-way

    rerun = subprocess.run(sweep_cmd(path, results, executor), cwd=REPO, capture_output=True, text=True,
                           timeout=600)
    assert rerun.returncode == 0, rerun.stdout[-2000:] + rerun.stderr[-2000:]
    summary = pd.read_parquet(sweep_dir / "summary.parquet")
    assert len(summary) == 4 and summary["ok"].all() and (summary["games"] == N_GAMES).all()
    for cell in cells:
        tables = load(cell, complete_games=True)
        seeds = sorted(tables.games["seed"])
        assert seeds == list(range(100, 100 + N_GAMES)), cell.name  # none lost, none twice
        assert set(tables.calls["game_id"]) == set(tables.games["game_id"])  # no rows of a killed game
        assert tables.players.groupby("game_id").size().eq(7).all()
    assert (sweep_dir / "win_rates.png").stat().st_size > 10_000


@pytest.mark.slow
def test_a_killed_sweeps_kernel_sends_no_request_after_the_kill(tmp_path):
    """``kill -9`` of a sweep whose cell plays 8 games at once against a loopback endpoint (0.5 s an answer): the
    cell's worker dies with it (its parent-death signal), and the cell's kernel, re-parented, sends no request
    once it can know (toolkit.core.lifeline: it checks its parent before each request). What reaches the server
    after the kill is at most one request a game, sent before the worker was gone or still on its way (5 and 6
    here at load 16-19). On the code before (review s19, 1) the kernel played on until ipykernel's parent
    poller ended it: 16 requests up to 1.1 s after the kill here (4-14 in the review), paid again by the
    resumed study."""
    from toolkit.testing.loopback_server import FakeOpenAIServer

    arrivals: list[float] = []
    with FakeOpenAIServer(latency=0.5) as server:
        record = server.record

        def timed(*args, **kwargs):
            arrivals.append(time.monotonic())
            record(*args, **kwargs)

        server.record = timed
        path = tmp_path / "k.yaml"
        path.write_text(f"""name: k
notebook: experiments/werewolf.ipynb
parameters: {{n_games: 8, seed: 100, model: "openai:ok@{server.base_url}", concurrency: 8}}
grid:
  temperature: [0.0]
""")
        with open(tmp_path / "sweep.err", "wb") as err:
            proc = subprocess.Popen(sweep_cmd(path, tmp_path / "results", "local"), cwd=REPO,
                                    start_new_session=True, stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.time() + 480
            while len(arrivals) < 24 and time.time() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert len(arrivals) >= 24, (tmp_path / "sweep.err").read_text()[-2000:]
            os.kill(proc.pid, signal.SIGKILL)  # the sweep only, as a user's kill -9 PID
            killed = time.monotonic()
            proc.wait()
            time.sleep(4)  # the old kernel went on for up to 3 s
            after = [round(t - killed, 2) for t in arrivals if t > killed]
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of its group
            except ProcessLookupError:
                pass
    # counted, not timed: this process's server threads are themselves slow on a loaded machine (6 arrivals spread
    # over 1.4 s at load 19, one game's worth each)
    assert len(after) <= 8, f"requests {after} s after the kill"
    # the kernel's own line ("... is gone: stopping before another request is sent") is usually in its
    # kernel.log, but ipykernel's parent poller may end it first when no request was due: not asserted


@pytest.mark.slow
def test_failed_cell_is_recorded_and_the_others_finish(tmp_path):
    """A cell that fails while it runs (every setting is checked before: a bad preset is refused up front, so
    the failure here is one the notebook raises) is recorded, and the other cell still finishes."""
    import nbformat

    notebook = nbformat.read(REPO / "experiments" / "werewolf.ipynb", as_version=4)
    params = next(c for c in notebook.cells if "parameters" in c.metadata.get("tags", []))
    params.source += "\nfail_with = None\n"
    notebook.cells.insert(notebook.cells.index(params) + 1,
                          nbformat.v4.new_code_cell("if fail_with:\n    raise RuntimeError(fail_with)"))
    nbformat.write(notebook, tmp_path / "failing.ipynb")
    path = tmp_path / "fails.yaml"
    path.write_text("""name: fails
notebook: failing.ipynb
parameters: {n_games: 3}
grid:
  fail_with: ["", "the cell broke at run time"]
""")
    out = subprocess.run([sys.executable, "-m", "toolkit", "sweep", str(path), "--out", str(tmp_path / "r")],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and "failed: 1" in out.stdout, out.stderr[-2000:]
    # it says where its summary and plots went (--out: every command's name; --results, the old one, still works
    # in the other tests here)
    assert f"summary and plots in {tmp_path / 'r' / 'fails'}/: summary.parquet, win_rates.png" in out.stdout
    summary = pd.read_parquet(tmp_path / "r" / "fails" / "summary.parquet").set_index("fail_with")
    assert summary.loc["", "ok"] and summary.loc["", "games"] == 3
    broken = summary.loc["the cell broke at run time"]
    assert not broken["ok"] and "the cell broke at run time" in broken["error"]
    # the notebook's error as its one line (was papermill's message: the kernel's whole traceback, colours and
    # all, in the summary and in the table printed at the end); the traceback is in FAILED.json
    assert broken["error"].startswith("RuntimeError: the cell broke at run time (the kernel's own log: ")
    row = next(line for line in out.stdout.splitlines() if "the cell broke at run time" in line)
    assert "\x1b" not in row and "Traceback" not in row and len(row) < 600, row
    failed = json.loads(next((tmp_path / "r" / "fails").glob("*/FAILED.json")).read_text())
    assert "raise RuntimeError(fail_with)" in failed["traceback"]
    # the kernels' own logging (an ERROR "KeyboardInterrupt caught in kernel." at each shutdown) goes to each
    # cell's kernel.log, not to the sweep's terminal; a failed cell's error names that log
    assert "KeyboardInterrupt" not in out.stderr and "IPKernelApp" not in out.stderr, out.stderr[-2000:]
    logs = sorted((tmp_path / "r" / "fails").glob("*/kernel.log"))
    assert len(logs) == 2 and "kernel.log" in broken["error"]


@pytest.mark.slow
def test_the_readme_papermill_command(tmp_path):
    out = subprocess.run(["papermill", "experiments/werewolf.ipynb", str(tmp_path / "out.ipynb"), "-p", "n_games",
                          "20", "-p", "model", "heuristic", "-p", "results_dir", str(tmp_path / "try")],
                         cwd=REPO, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert len(load(tmp_path / "try").games) == 20
    assert "village" in (tmp_path / "out.ipynb").read_text()


@pytest.mark.slow
def test_engineer_notebook_runs_the_suite(tmp_path):
    out = subprocess.run(["papermill", "experiments/engineer.ipynb", str(tmp_path / "out.ipynb"),
                          "-p", "results_dir", str(tmp_path / "eng")], cwd=REPO, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
    assert out.returncode == 0, out.stderr[-2000:]
    sessions = load(tmp_path / "eng").sessions
    assert len(sessions) >= 8 and sessions["success"].all()


def test_the_summary_counts_interrupted_sessions_apart(tmp_path):
    """An interrupted session (Ctrl-C) is not a session run (as ``tasks_done`` says): the summary's ``sessions``
    leaves it out and ``interrupted`` counts it (before, ``sessions`` was 2 here and nothing said one was cut)."""
    from toolkit.record.rows import SessionRow, ToolCallRow
    from toolkit.record.run_log import Run
    from toolkit.study.sweep import Cell, summarise

    folder = tmp_path / "eng"
    with Run(folder / "c1", "engineer") as run:
        for sid, ended_by, success in (("s-done", "end", True), ("s-cut", "interrupted", None)):
            run.write(SessionRow(session_id=sid, run_id=run.run_id, task="t", spec="scripted", steps=1,
                                 ended_by=ended_by, success=success, cost_usd=None, wall_s=1.0))
            run.write(ToolCallRow(session_id=sid, step=1, tool="terminal.run", args=None, ok=True, error=None,
                                  duration_ms=1.0, output_chars=0, truncated=False))
    cell = Cell("eng", "c1", "experiments/engineer.ipynb", str(folder / "c1"), {}, {"model": "scripted"})
    row = summarise({"name": "eng", "grid": {"model": ["scripted"]}}, [cell], [{"cell_id": "c1", "ok": True}],
                    folder).iloc[0]
    assert (row["sessions"], row["interrupted"], row["success_rate"]) == (1, 1, 1.0)


def test_a_sweeps_and_a_tournaments_options_are_one_object_the_commands_offer_and_a_misspelt_one_writes_nothing(
        tmp_path, monkeypatch):
    """``run_sweep`` and ``run_tournament`` take one ``SweepOptions`` as keywords (they took ten and nine
    parameters, the tournament passing each on by name); each option but the progress bar is an option of both
    commands, and a misspelt one is a TypeError naming it before the plan or any folder is written. Everything
    after the path goes by keyword: ``run_sweep("s.yaml", 4)`` (the old positional workers) is a TypeError, not a
    results folder named 4."""
    import argparse
    from dataclasses import fields

    from toolkit.cli import sweep as sweep_cli, tournament as tournament_cli
    from toolkit.study.sweep import SweepOptions, run_sweep
    from toolkit.study.tournament import run_tournament

    for cli in (sweep_cli, tournament_cli):
        parser = argparse.ArgumentParser()
        cli.add_arguments(parser)
        offered = {a.dest for a in parser._actions}
        assert {f.name for f in fields(SweepOptions)} - offered <= {"progress", "shard_games"}, cli.__name__
    monkeypatch.chdir(tmp_path)  # where a folder named 4 would go
    with pytest.raises(TypeError, match="positional"):  # run_sweep(path, workers) was the old order
        run_sweep(sweep_file(tmp_path, "s"), 4)
    with pytest.raises(TypeError, match="positional"):
        run_tournament(REPO / "experiments" / "tournaments" / "smoke.yaml", 4)
    with pytest.raises(TypeError, match="worker"):
        run_sweep(sweep_file(tmp_path, "s"), results_root=tmp_path / "results", worker=2)
    with pytest.raises(TypeError, match="worker"):
        run_tournament(REPO / "experiments" / "tournaments" / "smoke.yaml", results_root=tmp_path / "results",
                       worker=2)
    assert not (tmp_path / "results").exists() and not (tmp_path / "4").exists()
