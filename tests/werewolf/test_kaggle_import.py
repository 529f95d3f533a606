"""``python -m toolkit import kaggle REPLAY_DIR --out RESULTS``: Kaggle replays (``env.toJSON()`` files of games
played by Kaggle's engine) become this toolkit's tables; an imported game replays here to identical events; the
report runs on the imported folder; an LLM agent's prompts and completions become calls rows; a bad folder or
replay is one line, exit 2, nothing written.

The LLM game is played by Kaggle's own LLM agent (``harness/base.py``'s ``LLMWerewolfAgent``, through litellm)
in a subprocess, against the loopback OpenAI-compatible server over real HTTP. The server is the one test double:
no model runs here, so it answers each of Kaggle's prompts with a legal JSON answer read off the prompt (a target
from the list the prompt gives, or a speech). That one game takes 15-40 s (litellm's import is ~8 s of it on a free
core): the least that runs Kaggle's own agent and harness; it is played once for the module."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import random
import re
import subprocess
import sys

import pandas as pd
import pytest

pytest.importorskip("kaggle_environments", reason="needs kaggle-environments (make test installs it, --no-deps)")

from toolkit.core.secrets import redact  # noqa: E402
from toolkit.testing.loopback_server import FakeOpenAIServer  # noqa: E402
from toolkit.werewolf.kaggle import replay  # noqa: E402

pytestmark = pytest.mark.interop

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2"  # a GitHub key shape in a completion: masked on import

# Kaggle's LLM agent in every seat of its default 7-seat game, against base_url (argv 1); the replay to argv 2
PLAY_LLM_GAME = r"""
import json, os, random, sys
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # litellm's price list from its package, not the network
from kaggle_environments import make
from kaggle_environments.envs.werewolf import werewolf
from kaggle_environments.envs.werewolf.harness.base import LLMWerewolfAgent
from toolkit.werewolf.kaggle import harness

werewolf.register_agents({"llm": werewolf.AgentFactoryWrapper(
    LLMWerewolfAgent, model_name="openai/gpt-4o-mini", system_prompt=werewolf.LLM_SYSTEM_PROMPT,
    litellm_model_proxy_kwargs={"api_base": sys.argv[1], "api_key": os.environ["OPENAI_API_KEY"]})})
config = harness.configuration("default7", 1)
config["actTimeout"] = 120  # Kaggle's 3 s would time out the first call (litellm's import)
for agent in config["agents"]:
    agent.update(agent_id="llm", display_name="gpt-4o-mini",
                 llms=[{"model_name": "openai/gpt-4o-mini", "parameters": {"temperature": 0.7}}])
env = make("werewolf", configuration=config)
random.seed(1)
env.run(["llm"] * len(config["agents"]))
with open(sys.argv[2], "w") as f:
    json.dump(env.toJSON(), f)
"""


class KaggleAnswers(FakeOpenAIServer):
    """The loopback server answering Kaggle's prompts: a target from the list the prompt gives, else a speech,
    as the JSON block its harness asks for (seeded by the request's number)."""

    def answer(self, body, usage, say):
        prompt = body["messages"][-1]["content"]
        n = len(self.requests)
        listed = re.findall(r"(?:Valid targets are|must be in this list): `(\[.*?\])`", prompt)
        if listed:
            answer = {"perceived_threat_level": "SAFE", "reasoning": f"call {n}: a target from the list",
                      "target_id": random.Random(n).choice(ast.literal_eval(listed[-1]))}
        else:
            answer = {"perceived_threat_level": "UNEASY", "reasoning": f"call {n}: {TOKEN if n == 5 else 'talk'}",
                      "message": f"Speech {n}: I am watching the quiet ones."}
        text = "```json\n" + json.dumps(answer) + "\n```"
        return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4,
                          "total_tokens": len(prompt) // 4 + len(text) // 4}}


def toolkit(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "toolkit", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def import_kaggle(*args):
    return toolkit("import", "kaggle", *args)


@pytest.fixture(scope="module")
def few_games():
    """Four Kaggle games of their own (a few seconds; the 200 of the differential test are not needed here)."""
    from toolkit.werewolf.kaggle import harness

    return [((name, 1), harness.play(name, 1)) for name in ("default7", "arena8", "random10", "bidturn7")]


@pytest.fixture(scope="module")
def imported(few_games, tmp_path_factory):
    """Four Kaggle games (7 and 8 seats, 10 seats with a random first speaker and abstentions, and a turn-by-turn
    bidding discussion) imported into one run."""
    root = tmp_path_factory.mktemp("kaggle")
    replays = root / "replays"
    replays.mkdir()
    chosen = {}
    for (name, seed), rep in few_games:
        (replays / f"{name}-{seed}.json").write_text(json.dumps(rep))
        chosen[f"kaggle-{rep.get('id') or f'{name}-{seed}'}"] = replay.read(rep)
    done = import_kaggle(replays, "--out", root / "results")
    assert done.returncode == 0, done.stderr
    assert "imported 4 games" in done.stdout
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
        bids = events[(events.game_id == game_id) & (events.kind == "bid")]
        assert list(bids.text) == [f"{d.seat} bids {d.bid}." for d in kg.decisions if d.action == "bid"]
        assert (calls.game_id == game_id).sum() == len(kg.decisions)  # one call per Kaggle decision
        assert set(calls[calls.game_id == game_id].spec) == {"kaggle-decisions"}
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
    assert "4" in summary and ("village" in summary or "werewolves" in summary)


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
        shuffled = dict(rep, configuration=dict(rep["configuration"], discussion_protocol={
            "name": "RandomOrderDiscussion", "params": {}}))  # Kaggle's, not played here
        (replays / "good.json").write_text(json.dumps(rep))
        (replays / "z.json").write_text(json.dumps(shuffled))
    done = import_kaggle(replays, "--out", tmp_path / "results")
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert {"no folder": "no such folder", "empty": "no Kaggle replay", "not json": "not JSON",
            "not a replay": "not a Kaggle replay", "unsupported": "RandomOrderDiscussion",
            "fifo": "not a regular file"}[case] in lines[0]
    assert not (tmp_path / "results").exists()


@pytest.fixture(scope="module")
def llm_game(tmp_path_factory):
    """A Kaggle game played by Kaggle's LLM agent against the loopback server, imported: (root, run, replay,
    the requests the server got)."""
    if importlib.util.find_spec("litellm") is None:  # not imported here: at import it reaches for a price list
        pytest.skip("Kaggle's LLM agent needs litellm (the interop extra)")
    root = tmp_path_factory.mktemp("kaggle-llm")
    (root / "replays").mkdir()
    path = root / "replays" / "llm7.json"
    env = dict(os.environ, OPENAI_API_KEY="sk-test-not-a-real-key-0123456789")
    with KaggleAnswers(seed=1) as server:
        done = subprocess.run([sys.executable, "-c", PLAY_LLM_GAME, server.base_url, path], capture_output=True,
                              text=True, timeout=600, env=env, cwd=root)  # no .env of the checkout
        assert done.returncode == 0, done.stderr[-3000:]
        requests = list(server.requests)
    done = import_kaggle(root / "replays", "--out", root / "results")
    assert done.returncode == 0, done.stderr
    (run,) = (root / "results").iterdir()
    return root, run, json.loads(path.read_text()), requests, done.stdout


def kaggle_prompts(rep):
    """The replay's prompts in the order the harness asked them (steps, then agents)."""
    return [a["action"]["kwargs"]["raw_prompt"] for step in rep["steps"] for a in step
            if (a.get("action") or {}).get("kwargs", {}).get("raw_prompt")]


def test_an_llm_replay_imports_its_prompts_and_completions_as_calls(llm_game):
    root, run, rep, requests, stdout = llm_game
    calls = pd.read_parquet(run / "calls.parquet")
    games = pd.read_parquet(run / "games.parquet")
    kaggle = calls[calls.spec == "kaggle:llm"].sort_values("seq")
    # one row per request Kaggle's agent sent, in the order sent, each with the prompt the server received
    assert len(requests) > 10 and len(kaggle) == len(requests) == len(kaggle_prompts(rep))
    assert f"model calls: {len(requests)} (prompts and completions) from 1 of 1 replay" in stdout
    sent = [[dict(m, content=redact(m["content"])) for m in r["messages"]] for r in requests]  # the key below
    assert [json.loads(m) for m in kaggle.messages] == sent
    assert [json.loads(m)[0]["content"] for m in kaggle.messages] == [redact(p) for p in kaggle_prompts(rep)]
    assert "### Current Game State" in sent[0][0]["content"]
    assert kaggle.response_text.str.startswith("```json").all() and kaggle.ok.all() and not kaggle.fallback.any()
    assert set(kaggle.model) == {"openai/gpt-4o-mini"} and set(kaggle.temperature) == {0.7}
    # Kaggle's token counts are the server's usage, as litellm read it
    usage = [len(r["messages"][-1]["content"]) // 4 for r in requests]
    assert list(kaggle.prompt_tokens) == usage and not kaggle.usage_estimated.any()
    assert (kaggle.cost_usd > 0).all()
    # the decisions the calls made are the game's (seat, day, kind), and each call's answer is in the events
    kg = replay.read(rep)
    assert sorted(zip(kaggle.seat, kaggle.day, kaggle.action)) == sorted((d.seat, d.day, d.action)
                                                                           for d in kg.decisions)
    events = pd.read_parquet(run / "events.parquet")
    speeches = set(events[events.kind == "speech"].text)
    for row in kaggle[kaggle.action == "speak"].itertuples():
        assert json.loads(row.parsed)["speech"] in speeches
    # the games row is the Kaggle game's model usage, not this engine's re-play
    (game,) = games.itertuples()
    assert (game.n_calls, game.prompt_tokens) == (len(requests), sum(usage))
    assert game.cost_usd == pytest.approx(kaggle.cost_usd.sum())
    # a key shape in a completion is masked (the run log alone would scan for sk- keys only)
    assert TOKEN in json.dumps(rep)
    for path in run.rglob("*"):  # the tables and the scripted re-play's file
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    assert kaggle.response_text.str.contains("[redacted key]", regex=False).sum() == 1  # and in later prompts


def test_the_report_and_the_prompt_analyses_run_on_an_imported_llm_game(llm_game):
    from toolkit.analysis.prompt_cache import cached_share, shared_prefixes
    from toolkit.record.load import load

    root, run, rep, requests, _ = llm_game
    done = toolkit("report", run, "--out", root / "report")
    assert done.returncode == 0, done.stderr
    summary = (root / "report" / "summary.md").read_text()
    assert "kaggle:llm" in summary
    calls = load(run).calls
    kaggle = calls[calls.spec == "kaggle:llm"]
    share = cached_share(kaggle)
    assert list(share.calls) == [len(requests)] and int(share.prompt_tokens.iloc[0]) == kaggle.prompt_tokens.sum()
    prefixes = shared_prefixes(kaggle)
    # every later call of a seat shares at least Kaggle's system prompt with the seat's previous one
    assert len(prefixes) == len(kaggle) - kaggle.seat.nunique()
    assert (prefixes.shared_chars >= len("You are a master strategist playing the game of Werewolf.")).all()
    assert (prefixes.shared_chars < prefixes.prompt_chars).all()


def test_a_replay_without_prompts_imports_with_no_model_calls(imported):
    root, run, chosen = imported
    games = pd.read_parquet(run / "games.parquet")
    calls = pd.read_parquet(run / "calls.parquet")
    assert not calls.spec.str.startswith("kaggle:").any()
    assert set(games.n_calls) == {0} and set(games.prompt_tokens) == {0} and set(games.cost_usd) == {0.0}


def _first_call(rep):
    return next(a["action"]["kwargs"] for step in rep["steps"] for a in step
                if (a.get("action") or {}).get("kwargs", {}).get("raw_prompt"))


@pytest.mark.parametrize("case", ["huge completion", "no prompt", "no actor", "content not text", "tokens as text",
                                  "agent not a state"])
def test_a_hostile_llm_replay_is_refused_by_name(case, llm_game, tmp_path):
    """Each bad call is named (in-process: the command's one line, exit 2, is the next test's)."""
    from toolkit.core.files import FileError
    from toolkit.werewolf.kaggle import importer
    from toolkit.werewolf.kaggle.calls import MAX_CHARS

    rep = json.loads(json.dumps(llm_game[2]))
    call = _first_call(rep)
    if case == "huge completion":
        call["raw_completion"] = "x" * (MAX_CHARS + 1)
    elif case == "no prompt":  # a completion without the prompt it answered
        del call["raw_prompt"]
    elif case == "no actor":
        del call["actor_id"]
    elif case == "content not text":
        call["raw_completion"] = {"content": [{"type": "text", "text": "hi"}]}
    elif case == "tokens as text":
        call["prompt_tokens"] = "1156"
    else:
        rep["steps"][2][3] = "Player 4"
    (tmp_path / "llm.json").write_text(json.dumps(rep))
    with pytest.raises(FileError) as refused:
        importer.check(tmp_path)
    message = str(refused.value)
    assert "llm.json: a model call Kaggle's harness does not write: step " in message and "\n" not in message
    assert {"huge completion": "raw_completion of 1,000,001 characters", "no prompt": "no raw_prompt",
            "no actor": "actor_id None is no player", "content not text": "raw_completion is dict, not text",
            "tokens as text": "prompt_tokens is '1156', not a count",
            "agent not a state": "step 2, agent 3 is str, not an agent's state"}[case] in message, message


def test_the_command_refuses_a_hostile_llm_replay_in_one_line_exit_2_nothing_written(llm_game, tmp_path):
    rep = json.loads(json.dumps(llm_game[2]))
    _first_call(rep)["raw_completion"] = "y" * 5_000_000
    replays = tmp_path / "replays"
    replays.mkdir()
    (replays / "llm.json").write_text(json.dumps(rep))
    done = import_kaggle(replays, "--out", tmp_path / "results")
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "llm.json: a model call Kaggle's harness does not write" in lines[0] and "5,000,000" in lines[0]
    assert not (tmp_path / "results").exists()


def test_an_imported_llm_game_replays_here_to_identical_events(llm_game):
    """The replay's own calls (no replay key) sit beside the decisions ``replay`` answers from."""
    import asyncio

    from toolkit.werewolf.replay import event_tuple, replay_game

    root, run, rep, requests, _ = llm_game
    (game_id,) = pd.read_parquet(run / "games.parquet").game_id
    result, recorded = asyncio.run(replay_game(run, game_id))
    assert len(recorded) > 20 and [event_tuple(e.__dict__) for e in result.events] == recorded


def test_a_noop_fallback_is_a_failed_call_of_the_decision_it_stood_for(llm_game):
    """Kaggle's harness answers NoOp (with the last prompt and completion) after three unparsable answers."""
    from toolkit.werewolf.kaggle import calls as kaggle_calls

    rep = json.loads(json.dumps(llm_game[2]))
    kg = replay.read(rep)
    before = kaggle_calls.read(rep, kg)
    speech = next(c for c in before if c.action == "speak")
    action = rep["steps"][speech.step][int(speech.seat.removeprefix("Player")) - 1]["action"]
    action["action_type"] = "NoOpAction"
    action["kwargs"].update(message=None, error="LLMActionException: Failed to parse LLM output.")
    after = kaggle_calls.read(rep, kg)
    noop = next(c for c in after if c.step == speech.step and c.seat == speech.seat)
    assert (noop.action, noop.phase, noop.ok, noop.prompt) == ("speak", "day_speech", False, speech.prompt)
    (row,) = kaggle_calls.rows([noop], run_id="r", game_id="g", first_seq=0, specs={}, config=kg.config)
    assert (row.ok, row.fallback, row.parsed) == (False, True, None) and "Failed to parse" in row.error
