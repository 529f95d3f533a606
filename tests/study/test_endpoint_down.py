"""A dead endpoint stops a whole study (issue 42, point 2): real papermill kernels against the loopback server;
the sweep starts no other cell, says which endpoint and why in one line on stderr and exits 4. On 51c499d the
sweep played every cell to its end on fallbacks and exited 1 (each game an ``error``)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toolkit.cli.sweep import cells_line
from toolkit.testing.loopback_server import serve_in_subprocess

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_dead_endpoint_stops_a_sweep_with_one_line_and_exit_4(tmp_path):
    proc, url = serve_in_subprocess(seed=3)
    try:
        sweep = tmp_path / "dead.yaml"
        sweep.write_text(f"""name: dead
notebook: experiments/werewolf.ipynb
parameters: {{n_games: 3, seed: 100, model: "openai:hang@{url}", concurrency: 3}}
grid:
  temperature: [0.0, 0.5, 1.0]
""")
        env = {**os.environ, "PYTHONPATH": str(REPO), "TOOLKIT_TIMEOUT_S": "0.3", "TOOLKIT_MAX_ATTEMPTS": "2",
               "TOOLKIT_ENDPOINT_DEADLINE_S": "2"}
        done = subprocess.run([sys.executable, "-m", "toolkit", "sweep", str(sweep), "--results",
                               str(tmp_path / "results"), "--workers", "1"], cwd=REPO, capture_output=True,
                              text=True, timeout=1200, env=env)
    finally:
        proc.terminate()
        proc.wait(10)
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-2000:]
    stopped = [line for line in done.stderr.splitlines() if line.startswith("stopped: ")]
    assert len(stopped) == 1 and stopped[0].startswith(f"stopped: endpoint openai:hang@{url} is down: no answer "
                                                       "for 2 s"), done.stderr[-2000:]
    assert stopped[0].endswith("; every game on it stopped unfinished (a rerun resumes them) (3 games unfinished)")
    # the other cells never started: the table (status and error) and the last line say so; none reads as a
    # failure (an `ok` column said False for them: review s18)
    assert done.stdout.count("not started") == 2 * 2 + 1
    table = done.stdout.split("summary and plots in")[0]
    assert "interrupted (endpoint)" in table and "False" not in table, table
    assert not list((tmp_path / "results" / "dead").glob("*/DONE.json"))  # a rerun resumes them
    # the stall reached the sweep's stderr (it was only in the cell's notebook: review42 s16 F5), once, before the
    # stop; the cell the endpoint stopped is not a failed one
    lines = done.stderr.splitlines()
    stalls = [i for i, line in enumerate(lines) if line.startswith(f"endpoint openai:hang@{url}: no answer for ")
              and "its games wait for it" in line]
    assert len(stalls) == 1 and stalls[0] < lines.index(stopped[0]), done.stderr[-3000:]
    assert "cells: 3, failed: 0, interrupted (endpoint): 1, not started: 2" in done.stdout, done.stdout[-2000:]


def test_the_last_line_of_a_study_an_endpoint_stopped(capsys):
    """The cells a dead endpoint stopped or kept from starting are counted apart, not as failed (on the code
    before: ``failed: 3``); a cell that failed on its own still is. A sharded cell whose shards were kept from
    starting, all or some, is not started (diff read s17 F4: its error names a shard, and it was ``failed``)."""
    import pandas as pd

    from toolkit.study.shards import NOT_STARTED, cell_status
    from toolkit.study.sweep import Cell

    def sharded(name, *shards):
        cell = Cell(sweep="s", cell_id=name, notebook="n.ipynb", folder=f"/nonexistent/{name}", parameters={},
                    grid_values={})
        return cell_status(cell, [{"cell_id": f"{name}/shard{k}", **s} for k, s in enumerate(shards)])

    done = {"ok": True, "error": None}
    rows = [{"cell_id": "a", "ok": False, "capped": False, "endpoint": "endpoint X is down: why",
             "error": "endpoint X is down: why"},
            {"cell_id": "b", **NOT_STARTED, "capped": False, "endpoint": None},
            {"cell_id": "c", "ok": False, "capped": False, "endpoint": None, "error": "KeyError: x"},
            {"cell_id": "d", "ok": True, "capped": False, "endpoint": None, "error": None},
            sharded("e", NOT_STARTED, NOT_STARTED), sharded("f", done, NOT_STARTED),
            sharded("g", done, {"ok": False, "error": "KeyError: y"}, NOT_STARTED)]
    assert [r["error"] for r in rows[4:]] == ["not started", "1 of 2 shards not done; f/shard1: not started",
                                              "2 of 3 shards not done; g/shard1: KeyError: y"]
    summary = pd.DataFrame(rows)[["cell_id", "ok", "capped", "endpoint", "error", "not_started"]]
    assert cells_line(summary) == 4
    out = capsys.readouterr()
    assert out.err == "stopped: endpoint X is down: why\n"
    assert out.out == "cells: 7, failed: 2, interrupted (endpoint): 1, not started: 3\n"


def test_a_cell_stopped_while_it_ran_is_told_from_one_never_started(tmp_path, capsys):
    """A cell that returned no status (a Dask worker's cell cancelled when an endpoint died) is labelled by what
    happened: one that had started (its STARTED mark, written as a cell starts) was stopped by the endpoint and
    counts with the cells it interrupted; one without the mark never started. On the code before, both read
    ``not started`` (review s18 L8), and the table's ``ok`` column said False for either."""
    import pandas as pd

    from toolkit.study.sweep import STARTED, Cell, state, unfinished

    ran, never = (Cell(sweep="s", cell_id=name, notebook="n.ipynb", folder=str(tmp_path / name), parameters={},
                       grid_values={}) for name in ("ran", "never"))
    (tmp_path / "ran").mkdir()
    (tmp_path / "ran" / STARTED).touch()
    down = "endpoint X is down: no answer for 90 s (6 requests timed out); every game on it stopped unfinished"
    stopped, kept = unfinished(ran, down), unfinished(never, down)
    assert stopped["endpoint"] == down and stopped["error"] == f"stopped while it ran: {down}"
    assert [state(stopped), state(kept), state({"ok": False, "error": "KeyError: x"}), state({"ok": True})] == \
        ["interrupted (endpoint)", "not started", "failed", "ok"]
    summary = pd.DataFrame([{"capped": False, "endpoint": None, "not_started": None, **s}
                            for s in (stopped, kept)])
    assert cells_line(summary) == 4
    out = capsys.readouterr()
    assert out.out == "cells: 2, failed: 0, interrupted (endpoint): 1, not started: 1\n"
    assert out.err == f"stopped: {down}\n"


def test_the_stall_lines_of_a_study_s_kernels_are_said_once_each(tmp_path):
    """``relayed``: the lines the cells' kernels append to their files are said once each while the study runs
    and at its end; an earlier run's lines and a line still being written are not (on the code before nothing
    reached the sweep's stderr: no relay)."""
    from toolkit.study.sweep import relayed

    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text("an earlier run's stall\n")
    said: list[str] = []
    with relayed([a, b], said.append, every_s=0.01):
        with a.open("a") as f:
            f.write("stall 1 of a\n")
        b.write_text("stall 1 of b\nhalf a li")
        deadline = time.monotonic() + 5
        while len(said) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sorted(said) == ["stall 1 of a", "stall 1 of b"]
        with b.open("a") as f:
            f.write("ne\n")
    assert sorted(said) == ["half a line", "stall 1 of a", "stall 1 of b"]


def _said_soon(said, line):
    deadline = time.monotonic() + 5
    while line not in said and time.monotonic() < deadline:
        time.sleep(0.01)
    return line in said


def test_the_relay_outlives_a_file_it_cannot_read_and_reads_a_file_made_again_shorter(tmp_path):
    """A cell's file that cannot be read for a while (here a folder stands in its place) does not stop the relay,
    and a file made again shorter than what was read of it is read from its start. On the code before (diff
    read s17 F10) the first stopped the relay's thread for good (only the end's last look said anything) and
    the second was never read again."""
    from toolkit.study.sweep import relayed

    odd, shrunk = tmp_path / "odd.log", tmp_path / "shrunk.log"
    odd.mkdir()
    shrunk.write_text("an earlier run's long stall line\n")
    said: list[str] = []
    with relayed([odd, shrunk], said.append, every_s=0.01):
        time.sleep(0.1)  # a few ticks meet the folder
        odd.rmdir()
        odd.write_text("stall of odd\n")
        shrunk.write_text("short\n")
        assert _said_soon(said, "stall of odd") and _said_soon(said, "short"), said
    assert sorted(said) == ["short", "stall of odd"]


def test_the_last_line_of_a_study_a_spending_cap_stopped(capsys, tmp_path):
    """A capped sweep says so on stderr in a ``stopped:`` line (it had only the stdout budget line, whose cap of
    0.012 read "of $0.01": a stop that looked overspent). Both fail on the code before."""
    import pandas as pd

    from toolkit.llm.budget import Budget

    ledger = tmp_path / "spend.jsonl"
    assert "of $0.012 (" in Budget(ledger, max_usd=0.012).line() and "of $5.00 (" in Budget(ledger, max_usd=5).line()
    summary = pd.DataFrame([{"cell_id": "a", "ok": False, "capped": True, "endpoint": None},
                            {"cell_id": "b", "ok": True, "capped": False, "endpoint": None}])
    summary.attrs["budget"] = "budget: spent $0.0137 of $0.012 ($0.0000 left), 9,000 tokens; cap reached: 1 game ..."
    summary.attrs["spent"] = "spent $0.0137 of $0.012 ($0.0000 left), 9,000 tokens"
    assert cells_line(summary) == 3
    err = capsys.readouterr().err
    assert err == ("stopped: the spending cap was reached (spent $0.0137 of $0.012 ($0.0000 left), 9,000 tokens): "
                   "1 cell unfinished (a rerun with a higher cap resumes them)\n"), err
