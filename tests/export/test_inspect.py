"""The Inspect export read by Inspect AI's own code: ``read_eval_log`` gives one sample per game (and per
session) and one model event per logged call; the four ``inspect_ai.analysis`` dataframes load the file."""

import pytest

from toolkit.export import html, inspect_log
from toolkit.record.load import load

log_api = pytest.importorskip("inspect_ai.log", reason="the interop extra (inspect-ai) is not installed")
analysis = pytest.importorskip("inspect_ai.analysis")


def test_a_game_is_one_sample_and_each_call_one_model_event(game, tmp_path):
    results, gid = game
    path, = inspect_log.write(results, tmp_path)
    assert path.name == f"werewolf_{results.runs['run_id'].iloc[0]}.eval"
    log = log_api.read_eval_log(str(path))
    assert log.status == "success" and [s.id for s in log.samples] == [gid]
    sample = log.samples[0]
    models = [e for e in sample.events if e.event == "model"]
    assert len(models) == len(results.calls)
    assert {e.role for e in models} == set(results.calls["seat"])
    assert sum(e.output.usage.input_tokens for e in models) == results.calls["prompt_tokens"].sum()
    assert [e.output.completion for e in models[:3]] == list(results.calls.sort_values("seq")["response_text"][:3])
    infos = [e for e in sample.events if e.event == "info"]
    assert len(infos) == len(results.events)
    assert [e.uuid for e in models] == list(results.calls.sort_values("seq")["call_id"])  # events join their rows
    by_seq = results.events.set_index("seq")
    by_seq = by_seq.astype(object).where(by_seq.notna(), None)
    for e in infos:  # each moderator event whole: its kind as the source, its non-empty fields as the data
        row = by_seq.loc[int(e.uuid.rsplit("-e", 1)[1])]
        assert e.source == row["kind"] and e.data["day"] == row["day"] and e.data.get("target") == row["target"]
        assert None not in e.data.values()
    winner = results.games["winner"].iloc[0]
    assert sample.scores["winner"].value == winner  # max_days=3: a draw (both sides 0) is possible
    assert [sample.scores[side].value for side in ("village", "werewolves")] == [
        int(winner == "village"), int(winner == "werewolves")]
    for frame in (analysis.evals_df, analysis.samples_df, analysis.messages_df, analysis.events_df):
        assert len(frame(str(path))) > 0
    assert len(analysis.samples_df(str(path))) == 1
    events = analysis.events_df(str(path))
    assert (events["event"] == "model").sum() == len(results.calls)


def test_a_session_is_one_sample_with_its_tool_calls_as_tool_events(session_folder, tmp_path):
    results = load(session_folder)
    trajectories = {s: html.find_trajectory(session_folder, s) for s in results.sessions["session_id"]}
    path, = inspect_log.write(results, tmp_path, trajectories=trajectories)
    assert path.name == f"engineer_{results.runs['run_id'].iloc[0]}.eval"
    log = log_api.read_eval_log(str(path))
    assert sorted(s.id for s in log.samples) == sorted(results.sessions["session_id"])
    for sample in log.samples:
        tools = [e for e in sample.events if e.event == "tool"]
        assert len(tools) == (results.tool_calls["session_id"] == sample.id).sum() > 0
        assert any(e.result for e in tools)  # outputs from the trajectory
        assert sample.scores["success"].value == 1
    assert len(analysis.samples_df(str(path))) == len(results.sessions)


def test_no_content_leaves_prompts_out(game, tmp_path):
    results, _ = game
    path, = inspect_log.write(results, tmp_path, content=False)
    sample = log_api.read_eval_log(str(path)).samples[0]
    model = next(e for e in sample.events if e.event == "model")
    assert model.output.completion == "[content omitted]" and model.input[0].text == "[content omitted]"


def test_a_run_is_one_log_and_a_long_run_is_split(tmp_path):
    """Two runs of the committed example study, five games each, in logs of at most two samples: each run's games
    come back from its own logs, and Inspect's samples_df reads the folder whole."""
    results = load("results/examples")
    runs = list(results.runs["run_id"][:2])
    ids = [g for run in runs for g in results.games[results.games["run_id"] == run]["game_id"][:5]]
    paths = inspect_log.write(results, tmp_path, game_ids=ids, max_samples=2)
    assert [p.name for p in paths] == [f"werewolf_{run}_part{k}.eval" for run in runs for k in (1, 2, 3)]
    logs = [log_api.read_eval_log(str(p)) for p in paths]
    for run in runs:
        of_run = [s.id for log in logs if log.eval.run_id == run for s in log.samples]
        assert sorted(of_run) == sorted(results.games[results.games["game_id"].isin(ids)
                                                      & (results.games["run_id"] == run)]["game_id"])
    assert [len(log.samples) for log in logs] == [2, 2, 1] * 2
    assert len(analysis.samples_df(str(tmp_path))) == len(ids)
