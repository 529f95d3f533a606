"""Games and engineer sessions as Inspect AI eval logs (``inspect-ai``, its own types and writer):
``werewolf.eval`` with one ``EvalSample`` per game and ``engineer.eval`` with one per session.

A game's sample holds a ``ModelEvent`` per call (the seat as its ``role``, the prompt as its input, the answer
and token usage as its output) and an ``InfoEvent`` per moderator event (``source`` = the event kind), in game
order; its scores are ``village`` and ``werewolves`` (1 for the side that won) and ``winner``. A session's
sample holds a ``ModelEvent`` per call and a ``ToolEvent`` per tool call (arguments, and the output its
trajectory kept), scored ``success``. ``read_eval_log`` and ``inspect_ai.analysis``'s ``evals_df``,
``samples_df``, ``messages_df`` and ``events_df`` read them.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

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
    return ModelEvent(model=model, role=call.get("seat") or call.get("action"), input=_messages(call, content, mask),
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
        items.append(((e["seq"], 1, ""), {"kind": e["kind"], "day": e["day"], "phase": e["phase"],
                                          "actor": e["actor"], "target": e["target"], "text": mask(text or ""),
                                          "visibility": e["visibility"]}))
    built = []
    for _, item in sorted(items, key=lambda x: x[0]):
        if isinstance(item, dict):
            built.append(InfoEvent(source=item["kind"], data=item, timestamp=last))
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
        items.append(((step, 1, k), ToolEvent(
            id=f"{session['session_id']}-{step}-{k}", function=str(t.get("tool")),
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


def write(results, out: Path, content: bool = True, game_ids: list[str] | None = None,
          trajectories: dict[str, dict] | None = None) -> list[Path]:
    """``werewolf.eval`` (when there are games) and ``engineer.eval`` (when there are sessions) under ``out``."""
    from inspect_ai.log import write_eval_log

    mask = Redactor()
    runs = records(results.runs)
    written = []
    games = results.games if game_ids is None else results.games[results.games["game_id"].isin(game_ids)]
    if len(games):
        ids = set(games["game_id"])
        players, events, calls = (by_key(t[t["game_id"].isin(ids)], "game_id") for t in
                                  (results.players, results.events, results.calls))
        samples = [game_sample(g, players.get(g["game_id"], []), events.get(g["game_id"], []),
                               calls.get(g["game_id"], []), content, mask) for g in records(games)]
        log = eval_log("werewolf", samples, _spec(list(results.players["spec"]), mask), runs)
        write_eval_log(log, str(out / "werewolf.eval"))
        written.append(out / "werewolf.eval")
    if len(results.sessions) and game_ids is None:
        calls, tools = by_key(results.calls, "session_id"), by_key(results.tool_calls, "session_id")
        samples = [session_sample(s, calls.get(s["session_id"], []), tools.get(s["session_id"], []),
                                  (trajectories or {}).get(s["session_id"]), content, mask)
                   for s in records(results.sessions)]
        log = eval_log("engineer", samples, _spec(list(results.sessions["spec"]), mask), runs)
        write_eval_log(log, str(out / "engineer.eval"))
        written.append(out / "engineer.eval")
    return written
