"""Games and engineer sessions as Inspect AI eval logs (``inspect-ai``, its own types and writer): per run,
``werewolf_<run_id>.eval`` with one ``EvalSample`` per game and ``engineer_<run_id>.eval`` with one per session
(``inspect view`` and ``inspect_ai.analysis`` read a folder of logs as readily as one).

A game's sample holds a ``ModelEvent`` per call (the seat as its ``role``, the prompt as its input, the answer
and token usage as its output) and an ``InfoEvent`` per phase's record: the moderator events of one day and
phase, in ``seq`` order, as ``data["events"]`` (each event's non-empty fields), the phase as its ``source``. A
call comes before the record of its day and phase. Its scores are ``village`` and ``werewolves`` (1 for the side
that won) and ``winner``. A session's sample holds, per step, its call's ``ModelEvent`` then a ``ToolEvent`` per
tool call (arguments, and the output its trajectory kept), scored ``success``. ``read_eval_log`` and
``inspect_ai.analysis``'s ``evals_df``, ``samples_df``, ``messages_df`` and ``events_df`` read them. Each event's
``uuid`` comes from its row's id (``call_id``; ``<game_id>-e<seq>`` for a record, the seq of its first event)
and its ``working_start`` is seconds since the sample's first call, so the same results give the same events
and an event joins back to its row.
"""

from __future__ import annotations

import gc
import json
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from toolkit.core.files import file_name, inside
from toolkit.core.secrets import Redactor
from toolkit.export.common import OMITTED, by_key, conditions, parse_json, records, varying_keys
from toolkit.export.study import Study

EPOCH = "1970-01-01T00:00:00+00:00"


def _time(text: Any, default: str = EPOCH) -> datetime:
    """An ISO time (UTC when it names no zone; ``default`` when it is empty or not a time)."""
    try:
        t = datetime.fromisoformat(str(text or default))
    except ValueError:
        t = datetime.fromisoformat(default)
    return t.astimezone(timezone.utc) if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _messages(call: dict, content: bool, mask: Redactor, ident: str | None):
    """The call's prompt as Inspect messages, their ids ``<ident>-m<k>`` (Inspect would draw random ones)."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser

    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant,
             "tool": ChatMessageTool}
    texts = []
    for m in parse_json(call.get("messages"), []) or []:
        if isinstance(m, dict):
            text = m.get("content")
            texts.append((m.get("role"), text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)))
    return [kinds.get(role, ChatMessageUser)(content=mask(text) if content else OMITTED,
                                             id=f"{ident}-m{k}" if ident else None)
            for k, (role, text) in enumerate(texts or [("user", OMITTED)])]


def model_event(call: dict, content: bool, mask: Redactor, start: datetime | None = None):
    """A call as a ``ModelEvent``; its ``working_start`` is seconds since ``start`` (the sample's first call)."""
    from inspect_ai.event import ModelEvent
    from inspect_ai.model import GenerateConfig, ModelOutput, ModelUsage

    model = str(call.get("model") or call.get("spec") or "unknown")
    prompt, completion = int(call.get("prompt_tokens") or 0), int(call.get("completion_tokens") or 0)
    output = ModelOutput.from_content(model, mask(call.get("response_text") or "") if content else OMITTED,
                                      error=call.get("error") or None)
    output.usage = ModelUsage(input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion,
                              input_tokens_cache_read=call.get("cached_tokens"), total_cost=call.get("cost_usd"))
    output.time = (call.get("latency_ms") or 0) / 1000
    ident = str(call["call_id"]) if call.get("call_id") else None
    if ident:
        output.choices[0].message.id = f"{ident}-answer"
    return ModelEvent(uuid=ident, model=model,
                      role=call.get("seat") or call.get("action"), input=_messages(call, content, mask, ident),
                      tools=[], tool_choice="none", config=GenerateConfig(temperature=call.get("temperature")),
                      output=output, retries=max(int(call.get("attempts") or 1) - 1, 0),
                      error=call.get("error") or None, cache="read" if call.get("cache_hit") else None,
                      timestamp=(at := _time(call.get("started_at"))),
                      working_start=(at - (start or at)).total_seconds(), metadata={
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
        if c.get("cost_usd") is not None and c.get("cost_usd") == c.get("cost_usd"):  # (NaN: no price known)
            u.total_cost = (u.total_cost or 0.0) + float(c["cost_usd"])
    return per


def _line(e: dict, content: bool, mask: Redactor) -> dict:
    """One moderator event as a line of its phase's record: its fields that hold something (Inspect's writer walks
    every value of every event, so empty ones would cost time for nothing)."""
    line = {"seq": e["seq"], "kind": e["kind"], "visibility": e["visibility"]}
    line.update((k, e[k]) for k in ("actor", "target") if e[k] is not None)
    text = e["text"] if content or e["kind"] != "speech" else OMITTED
    if text:
        line["text"] = mask(text)
    if e.get("fallback"):
        line["fallback"] = True
    return line


def _phases(events: list[dict]) -> list[tuple[int, str, list[dict]]]:
    """``(day, phase, events)`` per run of consecutive events (in ``seq`` order) of one day and phase."""
    out: list[tuple[int, str, list[dict]]] = []
    for e in sorted(events, key=lambda e: e["seq"]):
        if out and out[-1][:2] == (e["day"], e["phase"]):
            out[-1][2].append(e)
        else:
            out.append((e["day"], e["phase"], [e]))
    return out


def _place(calls: list[dict], blocks: list[tuple[int, str, list[dict]]]) -> list[list[dict]]:
    """The calls that come before each block (one list more for those after the last): a call goes before the
    first record of its day and phase (its decision, then what came of it), else before the first record of a
    later day, else at the end; in ``seq`` order."""
    before: list[list[dict]] = [[] for _ in range(len(blocks) + 1)]
    first: dict[tuple, int] = {}
    for i, (day, phase, _) in enumerate(blocks):
        first.setdefault((day, phase), i)
    for c in sorted(calls, key=lambda c: c.get("seq") or 0):
        day = c.get("day")
        i = first.get((day, c.get("phase")))
        if i is None:
            i = next((k for k, b in enumerate(blocks) if day is not None and b[0] > day), len(blocks))
        before[i].append(c)
    return before


def game_sample(game: dict, players: list[dict], events: list[dict], calls: list[dict], content: bool,
                mask: Redactor):
    """One game as an ``EvalSample``: a ``ModelEvent`` per call and an ``InfoEvent`` per phase's record (the
    moderator events of one day and phase, in order, as ``data["events"]``; the phase as its ``source``)."""
    from inspect_ai.event import InfoEvent
    from inspect_ai.log import EvalSample
    from inspect_ai.scorer import Score

    start = _time(min((c.get("started_at") or EPOCH for c in calls), default=EPOCH))
    last, built = start, []
    blocks = _phases(events)
    for block, before in zip([*blocks, None], _place(calls, blocks)):
        for c in before:
            event = model_event(c, content, mask, start)
            last = event.timestamp
            built.append(event)
        if block is not None:
            day, phase, rows = block
            # built unvalidated: its data is plain JSON made here (validating it walks every value, a twentieth
            # of the export's time); read_eval_log validates the written log
            built.append(InfoEvent.model_construct(
                event="info", source=phase, data={"day": day, "phase": phase,
                                                  "events": [_line(e, content, mask) for e in rows]},
                timestamp=last, working_start=(last - start).total_seconds(),
                uuid=f"{game['game_id']}-e{rows[0]['seq']}"))
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
    """One session as an ``EvalSample``: per step, its call's ``ModelEvent`` (a session asks one call a step, in
    ``seq`` order) then a ``ToolEvent`` per tool call of the step (timed as the call that asked for it)."""
    from inspect_ai.event import ToolEvent
    from inspect_ai.log import EvalSample
    from inspect_ai.scorer import Score
    from inspect_ai.tool import ToolCallError

    outputs: dict[int, list] = {int(m.get("step", i + 1)): list(m.get("observations") or [])
                                for i, m in enumerate((trajectory or {}).get("memory") or [])}
    calls = sorted(calls, key=lambda c: c.get("seq") or 0)
    start = _time(min((c.get("started_at") or EPOCH for c in calls), default=EPOCH))
    items: list[tuple[tuple, Any]] = [((step, 0, 0), model_event(c, content, mask, start))
                                      for step, c in enumerate(calls, 1)]
    asked = {step: event.timestamp for (step, _, _), event in items}
    seen: dict[int, int] = {}
    for t in tools:
        step = int(t.get("step") or 0)
        k = seen[step] = seen.get(step, -1) + 1
        got = outputs.get(step, [])
        result = str(got[k]) if k < len(got) else ""
        args = parse_json(t.get("args"), {}) or {}
        ident = f"{session['session_id']}-{step}-{k}"
        at = asked.get(step, start)
        items.append(((step, 1, k), ToolEvent(
            id=ident, uuid=f"{ident}-tool", function=str(t.get("tool")),
            arguments=json.loads(mask(json.dumps(args))) if content else {},
            result=mask(result) if content else OMITTED,
            error=None if t.get("ok") else ToolCallError("unknown", mask(str(t.get("error") or "failed"))),
            timestamp=at, working_start=(at - start).total_seconds(),
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


def headline(task: str, samples: list):
    """The log's headline score, as ``inspect view`` shows it above the samples: the village's win rate (games)
    or the success rate (sessions), with its 95% interval and n (``analysis.intervals.proportion``)."""
    from inspect_ai.log import EvalMetric, EvalScore

    from toolkit.analysis.intervals import proportion

    name = "village" if task == "werewolf" else "success"
    hits = [int(s.scores[name].value) for s in samples if s.scores and name in s.scores]
    r = proportion(sum(hits), len(hits))
    metrics = {"accuracy": EvalMetric(name="accuracy", value=r["rate"]),
               "ci_low": EvalMetric(name="ci_low", value=r["ci_low"]),
               "ci_high": EvalMetric(name="ci_high", value=r["ci_high"])}
    return EvalScore(name=name, scorer=name, scored_samples=len(hits), unscored_samples=len(samples) - len(hits),
                     params={"interval": f"95% {r['method']}", "n": r["n"]}, metrics=metrics)


def eval_log(task: str, samples: list, spec: str, runs: list[dict], mask: Redactor | None = None,
             varying: set[str] | frozenset = frozenset()):
    """An ``EvalLog`` of one run's samples: the run's conditions as task arguments (the study's ``varying`` ones
    first) and in the metadata, the headline score with its interval, and the tokens and costs of every call
    summed per model."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalResults, EvalSpec, EvalStats

    mask = mask or Redactor()
    started = min((r.get("started_at") or EPOCH for r in runs), default=EPOCH)
    created = _time(started).astimezone(timezone.utc).isoformat()
    args = conditions(runs, mask, varying)
    usage = _total_usage(samples)
    run_meta = {k: runs[0].get(k) for k in ("experiment", "git_sha", "toolkit_version") if runs and runs[0].get(k)}
    return EvalLog(
        status="success",
        eval=EvalSpec(created=created, task=task, run_id=",".join(sorted({str(r.get("run_id")) for r in runs})),
                      task_args=args, dataset=EvalDataset(name=task, samples=len(samples),
                                                          sample_ids=[s.id for s in samples]),
                      model=spec, config=EvalConfig(), metadata={"exported_by": "llm-agent-toolkit",
                                                                 "conditions": args, **run_meta}),
        results=EvalResults(total_samples=len(samples), completed_samples=len(samples),
                            scores=[headline(task, samples)] if samples else []),
        stats=EvalStats(started_at=created, completed_at=created, model_usage=usage), samples=samples)


def _total_usage(samples: list) -> dict:
    """Every sample's ``model_usage`` summed per model (``inspect view``'s TOKENS)."""
    from inspect_ai.model import ModelUsage

    total: dict[str, ModelUsage] = {}
    for s in samples:
        for model, u in (s.model_usage or {}).items():
            t = total.setdefault(model, ModelUsage())
            t.input_tokens += u.input_tokens
            t.output_tokens += u.output_tokens
            t.total_tokens += u.total_tokens
            if u.total_cost is not None:
                t.total_cost = (t.total_cost or 0.0) + u.total_cost
    return total


def _spec(specs: list[str], mask: Redactor) -> str:
    """A log's model: its seats' specs, e.g. ``toolkit/heuristic+random`` (never a name of its own: ``mixed`` is
    a real spec)."""
    return "toolkit/" + "+".join(mask(s) for s in sorted({str(s) for s in specs if s}))


MAX_SAMPLES = 500
"""Samples per log file at most. Inspect's writer buffers every sample of a log and compares each new one with all
those before it, so a log's write time grows with the square of its samples (over the 1746 example games in one
log: 18.7 ms of CPU per game, against 5.3 in logs of 300); a run of more games is written as several logs."""


def _logs(task: str, rows: list[dict], max_samples: int, suffix: str = ".eval"):
    """``(file name, run id, rows)`` per log: one log per run (an eval log is one run of a task), split in parts of
    at most ``max_samples``."""
    for run_id, of_run in by_run(rows).items():
        parts = [of_run[i:i + max_samples] for i in range(0, len(of_run), max_samples)]
        for k, part in enumerate(parts, 1):
            yield file_name(f"{task}_{run_id}{f'_part{k}' if len(parts) > 1 else ''}", suffix), run_id, part


def by_run(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in rows:
        out.setdefault(str(row.get("run_id")), []).append(row)
    return out


@contextmanager
def _no_gc():
    """Python's cycle collector paused: building and writing a log makes objects by the million, few of them in
    cycles, and each collection walks every live object (the loaded tables too). Over the 1746 example games the
    collector took about a tenth of the export's CPU time, for a few hundred objects freed."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _stamped(name: str, run: dict | None) -> str:
    """A ``.json`` log's name: Inspect lists a ``.json`` file as a log (``inspect view``, ``inspect_ai.analysis``)
    only when its name starts with a time, as its own do (``2026-12-02T17-01-18_<task>_<id>.json``, UTC); the
    run's start is that time."""
    return f"{_time((run or {}).get('started_at')).strftime('%Y-%m-%dT%H-%M-%S')}_{name}"


FORMATS = (".eval", ".json")
"""Inspect's two log formats. ``.eval`` (the default, what ``inspect eval`` writes) is a zip of zstd-compressed
samples, long texts pooled as attachments; ``.json`` is one plain JSON document: the same samples, written about
four times as fast (Inspect's writer skips condensing them) at about 23 times the size (docs/exports.md)."""


def write(results, out: Path, content: bool = True, game_ids: list[str] | None = None,
          trajectories: dict[str, dict] | None = None, max_samples: int = MAX_SAMPLES,
          suffix: str = ".eval") -> list[Path]:
    """Under ``out``, per run: ``werewolf_<run_id>.eval`` (its games) and ``engineer_<run_id>.eval`` (its sessions);
    a run of more than ``max_samples`` is split into ``..._part<k>.eval`` files. ``suffix=".json"``: the same logs
    in Inspect's ``.json`` format, each name led by the run's start time (``_stamped``)."""
    if suffix not in FORMATS:
        raise ValueError(f"an Inspect log is {' or '.join(FORMATS)}, not {suffix!r}")
    with _no_gc():
        return _write(results, out, content, game_ids, trajectories, max_samples, suffix)


def _write(results, out: Path, content: bool, game_ids: list[str] | None, trajectories: dict[str, dict] | None,
           max_samples: int, suffix: str) -> list[Path]:
    from inspect_ai.log import write_eval_log

    mask = Redactor()
    runs = {str(r["run_id"]): r for r in records(results.runs)}
    varying = varying_keys(list(runs.values()))
    written = []
    games = results.games if game_ids is None else results.games[results.games["game_id"].isin(game_ids)]
    logs = list(_logs("werewolf", records(games), max_samples, suffix))
    for (name, run_id, part), (players, events, calls) in zip(logs, _game_rows(results, logs)):
        name = _stamped(name, runs.get(run_id)) if suffix == ".json" else name
        samples = [game_sample(g, players.get(g["game_id"], []), events.get(g["game_id"], []),
                               calls.get(g["game_id"], []), content, mask) for g in part]
        specs = [p["spec"] for g in part for p in players.get(g["game_id"], [])]
        write_eval_log(eval_log("werewolf", samples, _spec(specs, mask), [runs.get(run_id, {"run_id": run_id})],
                                mask, varying), str(inside(out, name)))
        written.append(out / name)
        del samples, players, events, calls  # before the next batch is read
    if len(results.sessions) and game_ids is None:
        rest = results.rest() if isinstance(results, Study) else results
        calls, tools = by_key(rest.calls, "session_id"), by_key(rest.tool_calls, "session_id")
        for name, run_id, part in _logs("engineer", records(rest.sessions), max_samples, suffix):
            name = _stamped(name, runs.get(run_id)) if suffix == ".json" else name
            samples = [session_sample(s, calls.get(s["session_id"], []), tools.get(s["session_id"], []),
                                      (trajectories or {}).get(s["session_id"]), content, mask) for s in part]
            write_eval_log(eval_log("engineer", samples, _spec([s.get("spec") for s in part], mask),
                                    [runs.get(run_id, {"run_id": run_id})], mask, varying), str(inside(out, name)))
            written.append(out / name)
    return written


def _game_rows(results, logs: list) -> Iterator[tuple[dict, dict, dict]]:
    """Each log's games' players, events and calls by game id: a ``Study`` reads each log's games as a batch (a
    log is at most ``max_samples`` games); a ``Results`` is grouped once."""
    if isinstance(results, Study):
        for batch in results.batches([[g["game_id"] for g in part] for _, _, part in logs]):
            grouped = tuple(by_key(t, "game_id") for t in (batch.players, batch.events, batch.calls))
            del batch  # and the caller drops what it was given: one batch in memory, not two
            yield grouped
            del grouped
            gc.collect()  # the batch's tables, before the next is read (the collector is paused while logs are made)
        return
    if logs:
        ids = {g["game_id"] for _, _, part in logs for g in part}
        grouped = tuple(by_key(t[t["game_id"].isin(ids)], "game_id") for t in
                        (results.players, results.events, results.calls))
        for _ in logs:
            yield grouped
