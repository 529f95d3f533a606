"""Every export carries the study: a two-cell sweep (the cells' results folders side by side under the sweep's
folder, as ``toolkit sweep`` lays them out; each cell played by ``run_werewolf_cell``, what a sweep cell's
notebook calls, against the loopback server) keeps its cells apart in each format — the cell's conditions,
its headline rate where the format has a place for one, and the tokens its calls really spent (was: hf, mini,
otel and kaggle dropped the conditions, so two cells' exports could not be told apart)."""

import json

import pytest

from tests.export.conftest import run_apart
from toolkit.export import hf, inspect_log, kaggle, mini, otel
from toolkit.record.load import load
from toolkit.testing.loopback_server import FakeOpenAIServer

pytestmark = [pytest.mark.interop, pytest.mark.slow]

CELLS = {"wolves-random": "random", "wolves-heuristic": "heuristic"}  # the grid: wolf_model


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    from toolkit.study.experiments import run_werewolf_cell

    root = tmp_path_factory.mktemp("sweep")
    with FakeOpenAIServer(seed=2) as server:
        for cell, wolves in CELLS.items():
            run_apart(_cell(run_werewolf_cell, str(root / cell), f"openai:det@{server.base_url}", wolves))
    results = load(root)
    assert len(results.runs) == 2 and len(results.games) == 4 and len(results.calls)
    return results


async def _cell(run, folder, model, wolves):
    import asyncio

    return await asyncio.to_thread(run, folder, n_games=2, model=model, wolf_model=wolves, concurrency=2)


def wolves_of_run(results) -> dict[str, str]:
    return {str(r.run_id): json.loads(r.config)["wolf_model"] for r in results.runs.itertuples()}


def game_tokens(results, game_id) -> tuple[int, int, bool]:
    calls = results.calls[results.calls["game_id"] == game_id]
    return (int(calls["prompt_tokens"].sum()), int(calls["completion_tokens"].sum()),
            bool(calls["usage_estimated"].fillna(False).astype(bool).any()))


def test_kaggle_replays_carry_the_cell_and_the_tokens(sweep, tmp_path):
    wolves = wolves_of_run(sweep)
    paths = kaggle.write(sweep, tmp_path)
    decided = sweep.games[sweep.games["winner"].isin(["village", "werewolves"])]
    assert len(paths) == len(decided) >= 1
    for path in paths:
        replay = json.loads(path.read_text())
        study = replay["info"]["TOOLKIT"]
        game = sweep.games[sweep.games["game_id"] == replay["id"]].iloc[0]
        assert study["run_id"] == game["run_id"] and study["conditions"]["wolf_model"] == wolves[game["run_id"]]
        assert study["conditions"]["n_games"] == 2 and "results_dir" not in study["conditions"]
        prompt, completion, estimated = game_tokens(sweep, replay["id"])
        assert (study["prompt_tokens"], study["completion_tokens"]) == (prompt, completion) and prompt > 0
        assert study["tokens_estimated"] is estimated


def test_otel_game_spans_carry_the_cell_and_the_tokens(sweep, tmp_path):
    wolves = wolves_of_run(sweep)
    path, = otel.write(sweep, tmp_path)
    seen = set()
    for line in path.read_text().splitlines():
        for span in (s for r in json.loads(line)["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]):
            if not span["name"].startswith("werewolf "):
                continue
            attrs = {a["key"]: next(iter(a["value"].values()), None) for a in span["attributes"]}
            gid = span["name"].removeprefix("werewolf ")
            run_id = attrs["toolkit.run_id"]
            assert attrs["toolkit.condition.wolf_model"] == wolves[run_id]
            assert sweep.games.set_index("game_id").loc[gid, "run_id"] == run_id
            prompt, completion, estimated = game_tokens(sweep, gid)
            assert (int(attrs["toolkit.prompt_tokens"]), int(attrs["toolkit.completion_tokens"])) == (
                prompt, completion) and prompt > 0
            assert attrs["toolkit.tokens_estimated"] is estimated
            seen.add(gid)
    assert seen == set(sweep.games["game_id"])


def test_the_hf_card_lists_each_cell_with_its_headline_and_tokens(sweep, tmp_path):
    hf.write(sweep, tmp_path, source="results/sweep")
    card = (tmp_path / "README.md").read_text()
    runs = [line for line in card.splitlines() if line.startswith("| ") and "wolf_model" in line]
    assert len(runs) == 2
    for run_id, wolves in wolves_of_run(sweep).items():
        row, = (r for r in runs if r.startswith(f"| {run_id} |"))
        assert f'"wolf_model": "{wolves}"' in row
        games = sweep.games[sweep.games["run_id"] == run_id]
        village = int((games["winner"] == "village").sum())
        assert f"village win rate {village / len(games):.3f} [" in row and f"(n = {len(games)}, 95% exact)" in row
        calls = sweep.calls[sweep.calls["run_id"] == run_id]
        note = " (estimated)" if calls["usage_estimated"].fillna(False).astype(bool).any() else ""
        prompt, completion = int(calls["prompt_tokens"].sum()), int(calls["completion_tokens"].sum())
        assert row.endswith(f"| {prompt}{note} | {completion}{note} |")


def test_inspect_logs_carry_the_cell(sweep, tmp_path):
    wolves = wolves_of_run(sweep)
    from inspect_ai.log import read_eval_log

    logs = [read_eval_log(str(p)) for p in inspect_log.write(sweep, tmp_path)]
    assert sorted(log.eval.task_args["wolf_model"] for log in logs) == sorted(wolves.values())
    for log in logs:
        assert log.eval.task_args["wolf_model"] == wolves[log.eval.run_id] and log.results.scores


@pytest.mark.sandbox
def test_mini_trajectories_carry_the_cell_and_the_tokens(tmp_path):
    """Two engineer cells (the correct and the wrong scripted trajectory as the grid's two models)."""
    from toolkit.study.experiments import run_engineer_cell

    models = {"good": "scripted:{task}/good.yaml", "bad": "scripted:{task}/bad.yaml"}
    for cell, model in models.items():
        run_engineer_cell(str(tmp_path / "sweep" / cell), tasks=["add_cli_flag"], model=model)
    results = load(tmp_path / "sweep")
    paths = mini.write(results, tmp_path / "traj", {})
    assert len(paths) == 2
    seen = set()
    for path in paths:
        info = json.loads(path.read_text())["info"]["toolkit"]
        session = results.sessions.set_index("session_id").loc[info["session_id"]]
        assert info["run_id"] == session["run_id"] and info["conditions"]["tasks"] == ["add_cli_flag"]
        seen.add(info["conditions"]["model"])
        calls = results.calls[results.calls["session_id"] == info["session_id"]]
        assert info["prompt_tokens"] == int(calls["prompt_tokens"].sum()) > 0
        assert info["completion_tokens"] == int(calls["completion_tokens"].sum())
    assert seen == set(models.values())
