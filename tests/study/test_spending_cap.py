"""A spending cap stops a sweep and a tournament mid-way (real papermill kernels, the loopback server in a
process of its own, priced); a rerun with a higher cap, after a kill -9 too, plays what is missing and
nothing twice."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from toolkit.llm.budget import Budget
from toolkit.record.load import load
from toolkit.testing.loopback_server import serve_in_subprocess

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def endpoint(prices):
    proc, url = serve_in_subprocess(seed=3)
    prices("det: {input: 1.0, output: 4.0}")  # the subprocesses inherit it
    yield url
    proc.terminate()
    proc.wait(10)


def toolkit(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "toolkit", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=600, **kwargs)


def cells(folder):
    """A sweep's cell folders (not its hidden ``.limits``, the endpoints' limits its workers share)."""
    return [c for c in folder.iterdir() if c.is_dir() and not c.name.startswith(".")]


def spent(folder):
    return Budget(Path(folder) / "spend.jsonl").spent()


@pytest.mark.slow
def test_a_dollar_cap_stops_a_sweep_and_a_rerun_after_kill_9_continues(tmp_path, endpoint):
    sweep = tmp_path / "capped.yaml"
    sweep.write_text(f"""name: capped
notebook: experiments/werewolf.ipynb
parameters: {{n_games: 4, seed: 100, model: "openai:det@{endpoint}", concurrency: 1}}
grid:
  temperature: [0.0, 1.0]
max_usd: 0.03
""")
    results = tmp_path / "results"
    first = toolkit("sweep", sweep, "--results", results)
    assert first.returncode == 3, first.stdout[-2000:] + first.stderr[-2000:]
    last = first.stdout.strip().splitlines()[-1]
    assert last.startswith("budget: spent $") and "of $0.03 ($0.0000 left)" in last, last
    folder = results / "capped"
    assert spent(folder)[0] >= 0.03
    # the games the cap stopped are said once, for their cell (review s19, 7: for the sweep's folder too)
    said = [line for line in first.stderr.splitlines() if "partial game" in line]
    assert said and f"{folder}: left out" not in first.stderr, said
    assert not all((c / "DONE.json").exists() for c in cells(folder))
    before = load(folder, complete_games=True).games
    assert len(before) < 8

    # A higher cap, killed with SIGKILL once a game more has been written, then run again.
    proc = subprocess.Popen([sys.executable, "-m", "toolkit", "sweep", str(sweep), "--results", str(results),
                             "--max-usd", "5"], cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        rows = sum(len(p.read_text().splitlines()) for p in folder.glob("*/*/games.jsonl"))
        if rows >= 1:
            break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # The sweep's kernels run in sessions of their own (jupyter_client starts them so): killing the sweep's group
    # leaves them to ipykernel's parent poller, which ends them within about a second; a call already sent is
    # still paid and written to the ledger. Wait until the ledger has been still for 3 s (at most 60 s).
    paid_before_rerun, still_since, deadline = spent(folder)[0], time.time(), time.time() + 60
    while time.time() - still_since < 3 and time.time() < deadline:
        time.sleep(0.2)
        if (now := spent(folder)[0]) != paid_before_rerun:
            paid_before_rerun, still_since = now, time.time()
    assert time.time() < deadline, "the killed sweep's kernels went on spending for 60 s"
    assert paid_before_rerun >= 0.03

    rerun = toolkit("sweep", sweep, "--results", results, "--max-usd", "5")
    assert rerun.returncode == 0, rerun.stdout[-2000:] + rerun.stderr[-2000:]
    assert rerun.stdout.strip().splitlines()[-1].startswith("budget: spent $")
    for cell in cells(folder):
        games = load(cell, complete_games=True).games
        assert sorted(games["seed"]) == [100, 101, 102, 103], cell.name  # every game once
    calls = load(folder, complete_games=False).calls
    # Every call paid for is in the ledger: the stopped and the killed games' calls included. The calls the kill
    # left unsettled (in flight: no row; or written, their settling not) count there at their estimates: up to a
    # round of a game's decisions (7 votes at once), over 2% of the whole once (6 in flight, 0.0043 of 0.2107)
    lines = [json.loads(x) for x in (folder / "spend.jsonl").read_text().splitlines() if x.strip()]
    settled = {x["settles"] for x in lines if "settles" in x}
    unsettled = sum(x["usd"] for x in lines if "pending" in x and x["pending"] not in settled)
    assert spent(folder)[0] - unsettled == pytest.approx(calls["cost_usd"].sum(), rel=0.02)
    assert spent(folder)[0] > paid_before_rerun


@pytest.mark.slow
def test_a_token_cap_stops_a_tournament_mid_way_and_a_rerun_finishes_it(tmp_path, endpoint):
    spec = f"openai:det@{endpoint}"
    path = tmp_path / "t.yaml"
    path.write_text(f"""name: capped-t
models: ["{spec}", heuristic]
presets: [classic7]
games: 2
games_per_cell: 4
concurrency: 1
max_tokens: 60000
""")
    results = tmp_path / "results"
    first = toolkit("tournament", path, "--results", results)
    assert first.returncode == 3, first.stdout[-2000:] + first.stderr[-2000:]
    assert "tokens (0 left)" in first.stdout.strip().splitlines()[-1]
    folder = results / "capped-t"
    played = load(folder, complete_games=True).games
    assert 0 < len(played) < 8  # stopped mid-way

    rerun = toolkit("tournament", path, "--results", results, "--max-tokens", "10000000")
    assert rerun.returncode == 0, rerun.stdout[-2000:] + rerun.stderr[-2000:]
    games = load(folder, complete_games=True).games
    plan = pd.read_parquet(folder / "schedule.parquet")
    assert sorted(games["seed"]) == sorted(plan["seed"].unique())  # the whole plan, each game once
    assert set(played["game_id"]) <= set(games["game_id"])  # the games of the first run were kept, not replayed


@pytest.mark.slow
def test_a_dollar_cap_with_an_unpriced_model_is_refused_in_one_line(tmp_path, endpoint):
    out = toolkit("play", "--model", f"openai:unpriced@{endpoint}", "--max-usd", "1", "--out", tmp_path / "r")
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and "needs a price" in out.stderr
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


@pytest.mark.slow
def test_play_stops_its_game_at_the_cap(tmp_path, endpoint):
    out = toolkit("play", "--model", f"openai:det@{endpoint}", "--max-usd", "0.001", "--quiet", "--out",
                  tmp_path / "r")
    assert out.returncode == 3, out.stdout + out.stderr
    assert "budget: spent $" in out.stdout and "1 stopped unfinished" in out.stdout
    assert len(load(tmp_path / "r", complete_games=True).games) == 0
    # each call in the ledger before it was sent, as in a study (review s19, 7: play wrote its calls after them,
    # so a play killed mid-call had that call on no ledger)
    (ledger,) = (tmp_path / "r").glob("**/spend.jsonl")
    lines = [json.loads(x) for x in ledger.read_text().splitlines() if x.strip()]
    calls = load(tmp_path / "r", complete_games=False).calls
    assert lines and all("pending" in x or "settles" in x for x in lines), lines[:3]
    assert sum("pending" in x for x in lines) == sum("settles" in x for x in lines) == len(calls)


@pytest.mark.slow
def test_a_token_cap_stops_an_engineer_cell_between_sessions_and_a_rerun_runs_the_rest(tmp_path, server, prices):
    """The engineer notebook's runner (run_engineer_cell, what experiments/engineer.ipynb calls) under the same
    cap as the CLI's: against the loopback server (priced), the first session spends past the cap, the second is
    not started; a rerun with a higher cap runs only the second; a dollar cap on an unpriced model is refused
    before any session."""
    from toolkit.llm.budget import BudgetError, BudgetReached
    from toolkit.study.experiments import run_engineer_cell

    prices("det: {input: 1.0, output: 4.0}")
    cell, tasks = tmp_path / "cell", ["fix_function", "add_cli_flag"]
    kwargs = dict(tasks=tasks, model=f"openai:det@{server.base_url}", max_steps=2, environment="local")
    with pytest.raises(BudgetReached, match=r"budget: spent .* tokens .*cap reached: 1 session not started"):
        run_engineer_cell(str(cell), max_tokens=1, **kwargs)
    first = load(cell).sessions
    assert len(first) == 1 and spent(cell)[1] > 1  # the session in flight finished, its calls all charged
    tables = run_engineer_cell(str(cell), max_tokens=10**7, **kwargs)
    assert sorted(tables.sessions["session_id"]) == sorted({*first["session_id"], *tables.sessions["session_id"]})
    assert len(tables.sessions) == 2 and tables.sessions["task"].is_unique  # nothing run twice
    assert spent(cell)[1] == int(tables.calls[["prompt_tokens", "completion_tokens"]].sum().sum())
    with pytest.raises(BudgetError, match="needs a price for every model, and openai:unpriced@"):
        run_engineer_cell(str(tmp_path / "other"), max_usd=1.0,
                          **{**kwargs, "model": f"openai:unpriced@{server.base_url}"})
    assert not (tmp_path / "other").exists() or load(tmp_path / "other").sessions.empty
