"""The Inspect export read by Inspect AI's own code: ``read_eval_log`` gives one sample per game (and per
session) and one model event per logged call; the four ``inspect_ai.analysis`` dataframes load the file."""

import pytest

from toolkit.export import html, inspect_log
from toolkit.record.load import load

pytestmark = pytest.mark.interop

log_api = pytest.importorskip("inspect_ai.log", reason="the interop extra (inspect-ai) is not installed")
analysis = pytest.importorskip("inspect_ai.analysis")


def test_a_game_is_one_sample_and_each_call_one_model_event(game, tmp_path):
    results, gid = game
    path, = inspect_log.write(results, tmp_path)
    assert path.name == f"werewolf_{results.runs['run_id'].iloc[0]}.eval"
    log = log_api.read_eval_log(str(path), resolve_attachments=True)  # texts over 100 characters are attachments
    assert log.status == "success" and [s.id for s in log.samples] == [gid]
    sample = log.samples[0]
    models = [e for e in sample.events if e.event == "model"]
    assert len(models) == len(results.calls)
    assert {e.role for e in models} == set(results.calls["seat"])
    assert sum(e.output.usage.input_tokens for e in models) == results.calls["prompt_tokens"].sum()
    assert [e.output.completion for e in models[:3]] == list(results.calls.sort_values("seq")["response_text"][:3])
    infos = [e for e in sample.events if e.event == "info"]
    lines = [line for e in infos for line in e.data["events"]]
    assert [line["seq"] for line in lines] == sorted(results.events["seq"])  # every moderator event, in order
    assert [e.uuid for e in models] == list(results.calls.sort_values("seq")["call_id"])  # events join their rows
    by_seq = results.events.set_index("seq")
    by_seq = by_seq.astype(object).where(by_seq.notna(), None)
    for e in infos:  # one record per phase: its events whole, each with its non-empty fields
        assert e.uuid == f"{gid}-e{e.data['events'][0]['seq']}" and e.source == e.data["phase"]
        for line in e.data["events"]:
            row = by_seq.loc[line["seq"]]
            assert (row["day"], row["phase"]) == (e.data["day"], e.data["phase"])
            assert {k: line.get(k) for k in ("kind", "actor", "target", "visibility", "text")} == {
                k: row[k] for k in ("kind", "actor", "target", "visibility", "text")}
            assert None not in line.values()
    assert len(infos) < len(results.events) / 2  # records per phase, not per line
    for i, e in enumerate(sample.events):  # a call comes before the record of its day and phase
        if e.event == "model":
            after = next(x for x in sample.events[i:] if x.event == "info")
            assert (after.data["day"], after.data["phase"]) == (e.metadata["day"], e.metadata["phase"])
    assert [e.working_start for e in sample.events] == sorted(e.working_start for e in sample.events)
    assert models[0].working_start == 0  # seconds since the game's first call, not this machine's clock
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
        steps = [int(e.id.split("-")[-2]) for e in tools]  # each step: its call, then its tool calls
        assert steps == [sum(x.event == "model" for x in sample.events[:sample.events.index(e)]) for e in tools]
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


def test_a_fallback_event_says_so(tmp_path):
    """The example games' moderator events that a seat's fallback decided keep that mark in their phase's record."""
    results = load("results/examples")
    fell = results.events[results.events["fallback"]]
    path, = inspect_log.write(results, tmp_path, game_ids=[fell["game_id"].iloc[0]])
    lines = [line for e in log_api.read_eval_log(str(path)).samples[0].events if e.event == "info"
             for line in e.data["events"]]
    assert [line["seq"] for line in lines if line.get("fallback")] == sorted(
        fell[fell["game_id"] == fell["game_id"].iloc[0]]["seq"])


def test_the_same_results_give_the_same_events(game, tmp_path):
    """Ids and times come from the rows (none from this machine's clock), so a second export holds the same
    events."""
    results, _ = game
    first, second = (log_api.read_eval_log(str(inspect_log.write(results, tmp_path / k)[0])).samples[0]
                     for k in ("a", "b"))
    assert [e.model_dump() for e in first.events] == [e.model_dump() for e in second.events]


def test_a_studys_logs_carry_its_conditions_a_headline_score_and_the_tokens(tmp_path):
    """Two cells of a reflection study: `inspect view` lists them apart (task arguments), each with the village's
    win rate and its interval, and the tokens its calls spent (was: task_args {}, no score, TOKENS 0)."""
    from toolkit.study.experiments import run_werewolf_cell

    logs = {}
    for reflection in (False, True):
        folder = tmp_path / f"reflection-{reflection}"
        run_werewolf_cell(str(folder), n_games=3, model="heuristic", wolf_model="random", reflection=reflection)
        path, = inspect_log.write(load(folder), tmp_path / f"logs-{reflection}")
        logs[reflection] = (load(folder), log_api.read_eval_log(str(path)))
    for reflection, (results, log) in logs.items():
        args = log.eval.task_args
        assert args["reflection"] is reflection and args["wolf_model"] == "random" and args["n_games"] == 3
        assert "results_dir" not in args and log.eval.metadata["conditions"] == args
        score, = log.results.scores
        village = int((results.games["winner"] == "village").sum())
        assert score.name == "village" and score.metrics["accuracy"].value == village / 3
        low, high = score.metrics["ci_low"].value, score.metrics["ci_high"].value
        assert 0 <= low <= village / 3 <= high <= 1 and high - low > 0.3  # 3 games: a wide, exact interval
        assert score.params["n"] == 3 and "exact" in score.params["interval"]
        tokens = sum(u.total_tokens for u in log.stats.model_usage.values())
        assert tokens == results.calls["prompt_tokens"].sum() + results.calls["completion_tokens"].sum() > 0
    assert logs[False][1].eval.task_args != logs[True][1].eval.task_args


def same(sample) -> dict:
    """A sample's dump without its model inputs' message ids: the .eval writer pools a message a later call repeats
    and gives it the first call's id (``<call_id>-m<k>``), where the .json log keeps each call's own."""
    dump = sample.model_dump(exclude={"attachments", "events_data"})
    for event in dump["events"]:
        for message in event.get("input") or [] if event["event"] == "model" else []:
            message.pop("id", None)
    return dump


def test_json_logs_hold_what_eval_logs_hold(game, session_folder, tmp_path):
    """``suffix=".json"`` (``export inspect --json``) writes Inspect's .json format: the same file names but
    ``.json``, led by the run's start time, and ``read_eval_log`` gives the same log, every sample's events, scores
    and metadata and the task arguments, as from the .eval file (texts resolved from the .eval's attachments);
    ``inspect_ai.analysis`` reads as many events from either (none from a .json log named without a time)."""
    results, _ = game
    sessions = load(session_folder)
    trajectories = {s: html.find_trajectory(session_folder, s) for s in sessions.sessions["session_id"]}
    for res, traj in ((results, None), (sessions, trajectories)):
        made = {suffix: inspect_log.write(res, tmp_path / suffix[1:], trajectories=traj, suffix=suffix)
                for suffix in (".eval", ".json")}
        # Inspect lists a .json file as a log only when its name starts with a time (as its own logs' do)
        assert [p.with_suffix(".json").name for p in made[".eval"]] == [
            p.name.split("_", 1)[1] for p in made[".json"]]
        assert all(log_api.list_eval_logs(str(tmp_path / "json")))
        for a, b in zip(made[".eval"], made[".json"]):
            ev = log_api.read_eval_log(str(a), resolve_attachments=True)
            js = log_api.read_eval_log(str(b), resolve_attachments=True)
            assert len(js.samples) == len(ev.samples) > 0
            assert js.eval.task_args == ev.eval.task_args and js.results == ev.results
            for x, y in zip(ev.samples, js.samples):
                assert same(y) == same(x)
            assert len(analysis.events_df(str(b))) == len(analysis.events_df(str(a)))
    with pytest.raises(ValueError, match="not '.txt'"):
        inspect_log.write(results, tmp_path / "txt", suffix=".txt")
