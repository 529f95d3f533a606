"""Games and engineer sessions as Inspect AI eval logs (``inspect-ai``, its own types and writer): per run,
``werewolf_<run_id>.eval`` with one ``EvalSample`` per game and ``engineer_<run_id>.eval`` with one per session
(``inspect view`` and ``inspect_ai.analysis`` read a folder of logs as readily as one).

A game's sample holds a ``ModelEvent`` per call (the seat as its ``role``, the prompt as its input, the answer
and token usage as its output) and an ``InfoEvent`` per moderator event (``source`` = the event kind), in game
order; its scores are ``village`` and ``werewolves`` (1 for the side that won) and ``winner``. A session's
sample holds a ``ModelEvent`` per call and a ``ToolEvent`` per tool call (arguments, and the output its
trajectory kept), scored ``success``. ``read_eval_log`` and ``inspect_ai.analysis``'s ``evals_df``,
``samples_df``, ``messages_df`` and ``events_df`` read them. Each event's ``uuid`` comes from its row's id
(``call_id``; ``<game_id>-e<seq>`` for a moderator event), so the same results give the same log and an event
joins back to its row.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from toolkit.core.files import file_name, inside
from toolkit.core.secrets import Redactor
from toolkit.export.common import OMITTED, by_key, parse_json, records

EPOCH = "1970-01-01T00:00:00+00:00"


def _time(text: Any, default: str = EPOCH) -> datetime:
    try:
        return datetime.fromisoformat(str(text or default))
    except ValueError:
        return datetime.fromisoformat(default)


def _messages(call: dict, content: bool, mask: Redactor):
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser

    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant,
             "tool": ChatMessageTool}
    out = []
    for m in parse_json(call.get("messages"), []) or []:
        if not isinstance(m, dict):
            continue
        text = m.get("content")
        text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
        out.append(kinds.get(m.get("role"), ChatMessageUser)(content=mask(text) if content else OMITTED))
    return out or [ChatMessageUser(content=OMITTED)]


def model_event(call: dict, content: bool, mask: Redactor):
    from inspect_ai.event import ModelEvent
    from inspect_ai.model import GenerateConfig, ModelOutput, ModelUsage

    model = str(call.get("model") or call.get("spec") or "unknown")
    prompt, completion = int(call.get("prompt_tokens") or 0), int(call.get("completion_tokens") or 0)
    output = ModelOutput.from_content(model, mask(call.get("response_text") or "") if content else OMITTED,
                                      error=call.get("error") or None)
    output.usage = ModelUsage(input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion,
                              input_tokens_cache_read=call.get("cached_tokens"), total_cost=call.get("cost_usd"))
    output.time = (call.get("latency_ms") or 0) / 1000
    return ModelEvent(uuid=str(call["call_id"]) if call.get("call_id") else None, model=model,
                      role=call.get("seat") or call.get("action"), input=_messages(call, content, mask),
                      tools=[], tool_choice="none", config=GenerateConfig(temperature=call.get("temperature")),
                      output=output, retries=max(int(call.get("attempts") or 1) - 1, 0),
                      error=call.get("error") or None, cache="read" if call.get("cache_hit") else None,
                      timestamp=_time(call.get("started_at")), metadata={
                          "call_id": call.get("call_id"), "action": call.get("action"), "day": call.get("day"),
                          "phase": call.get("phase"), "spec": mask(str(call.get("spec") or ""))})


def _usage(calls: list[dict]):
    from inspect_ai.model import ModelUsage

    per: dict[str, ModelUsage] = {}
    for c in calls:
        u = per.setdefault(str(c.get("model") or "unknown"), ModelUsage())
        u.input_tokens += int(c.get("prompt_tokens") or 0)
        u.output_tokens += int(c.get("completion_tokens") or 0)
        u.total_tokens = u.input_tokens + u.output_tokens
    return per


def game_sample(game: dict, players: list[dict], events: list[dict], calls: list[dict], content: bool,
                mask: Redactor):
    from inspect_ai.event import InfoEvent
    from inspect_ai.log import EvalSample
    from inspect_ai.scorer import Score

    items: list[tuple[tuple, Any]] = []
    last = _time(min((c.get("started_at") or EPOCH for c in calls), default=EPOCH))
    for c in calls:
        items.append(((c.get("seq") or 0, 0, str(c.get("call_id"))), model_event(c, content, mask)))
    for e in events:
        text = e["text"] if content or e["kind"] not in ("speech",) else OMITTED
        # the event's fields that hold something (the kind is the InfoEvent's source): Inspect's writer walks
        # every value of every event, so empty ones would cost time for nothing
        data = {"day": e["day"], "phase": e["phase"], "visibility": e["visibility"]}
        data.update((k, e[k]) for k in ("actor", "target") if e[k] is not None)
        if text:
            data["text"] = mask(text)
        items.append(((e["seq"], 1, ""), (e["kind"], e["seq"], data)))
    built = []
    for _, item in sorted(items, key=lambda x: x[0]):
        if isinstance(item, tuple):
            kind, seq, data = item
            built.append(InfoEvent(source=kind, data=data, timestamp=last, uuid=f"{game['game_id']}-e{seq}"))
        else:
            last = item.timestamp
            built.append(item)
    winner = game["winner"]
    seats = {p["seat"]: {"role": p["role"], "side": p["side"], "spec": mask(str(p["spec"])),
                         "survived": bool(p["survived"])} for p in players}
    return EvalSample(
        id=game["game_id"], epoch=1, input=f"Werewolf game {game['game_id']} ({game.get('preset')}, seed "
        f"{game.get('seed')})", target=winner or "", events=built, model_usage=_usage(calls),
        scores={"village": Score(value=int(winner == "village")),
                "werewolves": Score(value=int(winner == "werewolves")),
                "winner": Score(value=winner or "none", explanation=game.get("win_reason"))},
        metadata={"preset": game.get("preset"), "seed": game.get("seed"), "days": game.get("days"),
                  "win_reason": game.get("win_reason"), "seats": seats, "run_id": game.get("run_id")},
        total_time=game.get("wall_s"), completed=True)


def session_sample(session: dict, calls: list[dict], tools: list[dict], trajectory: dict | None, content: bool,
                   mask: Redactor):
    from inspect_ai.event import ToolEvent
    from inspect_ai.log import EvalSample
    from inspect_ai.scorer import Score
    from inspect_ai.tool import ToolCallError

    outputs: dict[int, list] = {int(m.get("step", i + 1)): list(m.get("observations") or [])
                                for i, m in enumerate((trajectory or {}).get("memory") or [])}
    items: list[tuple[tuple, Any]] = []
    for c in calls:
        items.append(((c.get("seq") or 0, 0, 0), model_event(c, content, mask)))
    seen: dict[int, int] = {}
    for t in tools:
        step = int(t.get("step") or 0)
        k = seen[step] = seen.get(step, -1) + 1
        got = outputs.get(step, [])
        result = str(got[k]) if k < len(got) else ""
        args = parse_json(t.get("args"), {}) or {}
        ident = f"{session['session_id']}-{step}-{k}"
        items.append(((step, 1, k), ToolEvent(
            id=ident, uuid=f"{ident}-tool", function=str(t.get("tool")),
            arguments=json.loads(mask(json.dumps(args))) if content else {},
            result=mask(result) if content else OMITTED,
            error=None if t.get("ok") else ToolCallError("unknown", mask(str(t.get("error") or "failed"))),
            metadata={"duration_ms": t.get("duration_ms"), "output_chars": t.get("output_chars"),
                      "truncated": t.get("truncated")})))
    success = session.get("success")
    return EvalSample(
        id=session["session_id"], epoch=1, input=mask(str(session.get("task") or "")) if content else OMITTED,
        target="", events=[e for _, e in sorted(items, key=lambda x: x[0])], model_usage=_usage(calls),
        scores={"success": Score(value=int(bool(success)), explanation=str(session.get("ended_by")))},
        metadata={"spec": mask(str(session.get("spec") or "")), "steps": session.get("steps"),
                  "ended_by": session.get("ended_by"), "run_id": session.get("run_id")},
        total_time=session.get("wall_s"), completed=True)


def eval_log(task: str, samples: list, spec: str, runs: list[dict]):
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalResults, EvalSpec, EvalStats

    started = min((r.get("started_at") or EPOCH for r in runs), default=EPOCH)
    created = _time(started).astimezone(timezone.utc).isoformat()
    return EvalLog(
        status="success",
        eval=EvalSpec(created=created, task=task, run_id=",".join(sorted({str(r.get("run_id")) for r in runs})),
                      dataset=EvalDataset(name=task, samples=len(samples),
                                          sample_ids=[s.id for s in samples]),
                      model=spec, config=EvalConfig(), metadata={"exported_by": "llm-agent-toolkit"}),
        results=EvalResults(total_samples=len(samples), completed_samples=len(samples)),
        stats=EvalStats(started_at=created, completed_at=created), samples=samples)


def _spec(specs: list[str], mask: Redactor) -> str:
    distinct = sorted({str(s) for s in specs if s})
    return "toolkit/" + (mask(distinct[0]) if len(distinct) == 1 else "mixed")


MAX_SAMPLES = 500
"""Samples per log file at most. Inspect's writer buffers every sample of a log and compares each new one with all
those before it, so a log's write time grows with the square of its samples (over the 1746 example games in one
log: 18.7 ms of CPU per game, against 5.3 in logs of 300); a run of more games is written as several logs."""


def _logs(task: str, rows: list[dict], max_samples: int):
    """``(file name, run id, rows)`` per log: one log per run (an eval log is one run of a task), split in parts of
    at most ``max_samples``."""
    for run_id, of_run in by_run(rows).items():
        parts = [of_run[i:i + max_samples] for i in range(0, len(of_run), max_samples)]
        for k, part in enumerate(parts, 1):
            yield file_name(f"{task}_{run_id}{f'_part{k}' if len(parts) > 1 else ''}", ".eval"), run_id, part


def by_run(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in rows:
        out.setdefault(str(row.get("run_id")), []).append(row)
    return out


def write(results, out: Path, content: bool = True, game_ids: list[str] | None = None,
          trajectories: dict[str, dict] | None = None, max_samples: int = MAX_SAMPLES) -> list[Path]:
    """Under ``out``, per run: ``werewolf_<run_id>.eval`` (its games) and ``engineer_<run_id>.eval`` (its sessions);
    a run of more than ``max_samples`` is split into ``..._part<k>.eval`` files."""
    from inspect_ai.log import write_eval_log

    mask = Redactor()
    runs = {str(r["run_id"]): r for r in records(results.runs)}
    written = []
    games = results.games if game_ids is None else results.games[results.games["game_id"].isin(game_ids)]
    if len(games):
        ids = set(games["game_id"])
        players, events, calls = (by_key(t[t["game_id"].isin(ids)], "game_id") for t in
                                  (results.players, results.events, results.calls))
        for name, run_id, part in _logs("werewolf", records(games), max_samples):
            samples = [game_sample(g, players.get(g["game_id"], []), events.get(g["game_id"], []),
                                   calls.get(g["game_id"], []), content, mask) for g in part]
            specs = [p["spec"] for g in part for p in players.get(g["game_id"], [])]
            write_eval_log(eval_log("werewolf", samples, _spec(specs, mask), [runs.get(run_id, {"run_id": run_id})]),
                           str(inside(out, name)))
            written.append(out / name)
    if len(results.sessions) and game_ids is None:
        calls, tools = by_key(results.calls, "session_id"), by_key(results.tool_calls, "session_id")
        for name, run_id, part in _logs("engineer", records(results.sessions), max_samples):
            samples = [session_sample(s, calls.get(s["session_id"], []), tools.get(s["session_id"], []),
                                      (trajectories or {}).get(s["session_id"]), content, mask) for s in part]
            write_eval_log(eval_log("engineer", samples, _spec([s.get("spec") for s in part], mask),
                                    [runs.get(run_id, {"run_id": run_id})]), str(inside(out, name)))
            written.append(out / name)
    return written
