"""``python -m toolkit import kaggle REPLAY_DIR --out RESULTS``: Kaggle replays (``env.toJSON()`` files of games
played by Kaggle's engine, from the session's ``kaggle_games``) become this toolkit's tables; an imported game
replays here to identical events; the report runs on the imported folder; a bad folder or replay is one line,
exit 2, nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

pytest.importorskip("kaggle_environments", reason="needs kaggle-environments (make test installs it, --no-deps)")

from toolkit.werewolf.kaggle import replay  # noqa: E402


def toolkit(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "toolkit", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def import_kaggle(*args):
    return toolkit("import", "kaggle", *args)


@pytest.fixture(scope="module")
def few_games():
    """Three Kaggle games of their own (a few seconds; the 200 of the differential test are not needed here)."""
    from toolkit.werewolf.kaggle import harness

    return [((name, 1), harness.play(name, 1)) for name in ("default7", "arena8", "random10")]


@pytest.fixture(scope="module")
def imported(few_games, tmp_path_factory):
    """Three Kaggle games (7 and 8 seats, and 10 seats with a random first speaker) imported into one run."""
    root = tmp_path_factory.mktemp("kaggle")
    replays = root / "replays"
    replays.mkdir()
    chosen = {}
    for (name, seed), rep in few_games:
        (replays / f"{name}-{seed}.json").write_text(json.dumps(rep))
        chosen[f"kaggle-{rep.get('id') or f'{name}-{seed}'}"] = replay.read(rep)
    done = import_kaggle(replays, "--out", root / "results")
    assert done.returncode == 0, done.stderr
    assert "imported 3 games" in done.stdout
    (run,) = (root / "results").iterdir()
    return root, run, chosen


def test_the_imported_tables_are_the_kaggle_games(imported):
    root, run, chosen = imported
    games = pd.read_parquet(run / "games.parquet").set_index("game_id")
    players = pd.read_parquet(run / "players.parquet")
    events = pd.read_parquet(run / "events.parquet")
    calls = pd.read_parquet(run / "calls.parquet")
    assert set(games.index) == set(chosen)
    for game_id, kg in chosen.items():
        assert (games.loc[game_id, "winner"], int(games.loc[game_id, "days"])) == (kg.winner, kg.final_day)
        assert int(games.loc[game_id, "n_fallbacks"]) == 0
        rows = players[players.game_id == game_id]
        assert dict(zip(rows.seat, rows.role)) == kg.roles
        assert set(rows.spec) == {"kaggle:random"}  # the Kaggle agent in each seat
        deaths = {r.seat: (int(r.death_day), "day" if r.death_cause == "vote" else "night")
                  for r in rows.itertuples() if not r.survived}
        assert deaths == kg.eliminations
        speeches = events[(events.game_id == game_id) & (events.kind == "speech")]
        assert list(speeches.text) == [d.text for d in kg.decisions if d.action == "speak"]
        assert (calls.game_id == game_id).sum() == len(kg.decisions)  # one call per Kaggle decision
    assert set(games.preset) == {"kaggle7", "kaggle8", "kaggle"}


def test_an_imported_game_replays_here_to_identical_events(imported):
    root, run, chosen = imported
    for game_id in chosen:
        done = toolkit("replay", run, "--game", game_id, "--out", root / "replays-out", "--quiet")
        assert done.returncode == 0, done.stderr
        assert "identical to the recording" in done.stdout, done.stdout


def test_the_report_runs_on_an_imported_folder(imported):
    root, run, chosen = imported
    done = toolkit("report", run, "--out", root / "report")
    assert done.returncode == 0, done.stderr
    summary = (root / "report" / "summary.md").read_text()
    assert "3" in summary and ("village" in summary or "werewolves" in summary)


@pytest.mark.parametrize("case", ["no folder", "empty", "not json", "not a replay", "unsupported", "fifo"])
def test_a_bad_replay_folder_is_one_line_exit_2_and_nothing_written(case, few_games, tmp_path):
    replays = tmp_path / "replays"
    if case != "no folder":
        replays.mkdir()
    (_, rep) = few_games[0]
    if case == "not json":
        (replays / "a.json").write_text("{not json")
    elif case == "not a replay":
        (replays / "a.json").write_text(json.dumps({"steps": []}))
    elif case == "fifo":  # reading it would block forever
        os.mkfifo(replays / "a.json")
    elif case == "unsupported":
        bidding = dict(rep, configuration=dict(rep["configuration"], discussion_protocol={
            "name": "TurnByTurnBiddingDiscussion", "params": {}}))
        (replays / "good.json").write_text(json.dumps(rep))
        (replays / "z.json").write_text(json.dumps(bidding))
    done = import_kaggle(replays, "--out", tmp_path / "results")
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert {"no folder": "no such folder", "empty": "no Kaggle replay", "not json": "not JSON",
            "not a replay": "not a Kaggle replay", "unsupported": "TurnByTurnBiddingDiscussion",
            "fifo": "not a regular file"}[case] in lines[0]
    assert not (tmp_path / "results").exists()
