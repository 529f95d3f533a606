"""The model calls a Kaggle replay holds, as rows of this toolkit's ``calls`` table.

Kaggle's LLM harness (``kaggle_environments/envs/werewolf/harness/base.py``) puts each action's prompt and
completion into the action it returns: ``steps[k][i]["action"]["kwargs"]`` holds ``raw_prompt`` (the one user
message it sent through litellm), ``raw_completion`` (the answer's text), ``prompt_tokens``, ``completion_tokens``
and ``cost`` (litellm's usage and price), beside ``actor_id``, ``day``, ``phase`` and the answer's fields. An
action without a prompt (Kaggle's ``random`` agent) is no call. The harness keeps the last prompt and completion
of an action: a re-ask after an unparsable answer is not in the replay (its tokens are in the counts).

Every text is masked through ``toolkit.core.secrets`` with every key shape (the run log scans the calls table
for ``sk-`` keys only). A replay whose calls are not what the harness writes (a prompt that is not text, a
field missing, a count that is not a number, a text longer than ``MAX_CHARS``) is refused by name."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from toolkit.core.secrets import Redactor
from toolkit.record.rows import CallRow
from toolkit.werewolf.engine import roles
from toolkit.werewolf.engine.roles import event_kinds
from toolkit.werewolf.kaggle.replay import KaggleGame

# Kaggle's Action caps its reasoning at 1,000,000 characters (game/actions.py); a prompt or completion longer
# than that is not one its harness wrote, and a few of them would fill memory when the tables are read.
MAX_CHARS = 1_000_000
DAY_PHASES = {"speak": "day_speech", "vote": "day_vote", "bid": "day_speech"}  # this engine's phase of a day call
# a NoOp (the harness's fallback after unparsable answers) is named by the phase the seat was asked in
AWAITED = {"DAY_CHAT_AWAIT": "speak", "DAY_VOTING_AWAIT": "vote", "DAY_BIDDING_AWAIT": "bid"}


def actions() -> dict[str, str]:
    """Kaggle's action class → the decision it answers, as each kind of events row declares it
    (``EventKind.kaggle_action``: the engine's and every role's)."""
    return {k.kaggle_action: k.decision for k in event_kinds().values() if k.kaggle_action and k.decision}


def night_decision(role: str) -> str | None:
    """The decision a role is asked at night that Kaggle's harness answers (the Doctor's heal, the Seer's
    inspection, the wolves' vote); None for a role Kaggle asks nothing at night."""
    known = set(actions().values())
    r = roles.REGISTRY.get(role)
    return next((a for a in r.actions if a in known), None) if r is not None and r.night_order is not None else None


class BadCall(ValueError):
    """A call of the replay that is not what Kaggle's harness writes (the message names it and why)."""


@dataclass(frozen=True)
class KaggleCall:
    step: int
    seat: str
    role: str
    day: int  # this engine's day (Kaggle's night d is the night of day d + 1)
    phase: str
    action: str | None
    prompt: str
    completion: str | None
    target: str | None
    message: str | None
    reasoning: str | None
    ok: bool
    error: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None


def _text(kwargs: dict[str, Any], name: str, where: str, required: bool = False) -> str | None:
    value = kwargs.get(name)
    if value is None:
        if required:
            raise BadCall(f"{where}: no {name} (Kaggle's harness writes it beside raw_completion)")
        return None
    if not isinstance(value, str):
        raise BadCall(f"{where}: {name} is {type(value).__name__}, not text")
    if len(value) > MAX_CHARS:
        raise BadCall(f"{where}: {name} of {len(value):,} characters (over {MAX_CHARS:,}: not one Kaggle's "
                      "harness writes)")
    return value


def _count(kwargs: dict[str, Any], name: str, where: str) -> int | None:
    value = kwargs.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadCall(f"{where}: {name} is {value!r:.40}, not a count")
    return value


def _cost(kwargs: dict[str, Any], where: str) -> float | None:
    value = kwargs.get("cost")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise BadCall(f"{where}: cost is {value!r:.40}, not a price")
    return float(value)


def _awaited(steps: list[Any], k: int, i: int, role: str) -> str | None:
    """The decision a NoOp stood for: the phase the seat's previous observation asked it in."""
    try:
        phase = steps[k - 1][i]["observation"]["raw_observation"]["detailed_phase"]
    except (IndexError, KeyError, TypeError):
        return None
    return night_decision(role) if phase == "NIGHT_AWAIT_ACTIONS" else AWAITED.get(phase)


def read(replay: dict[str, Any], kg: KaggleGame) -> list[KaggleCall]:
    """The replay's model calls in the order they were asked (steps, then seats); ``BadCall`` names a bad one."""
    seat_of = {pid: f"Player{n + 1}" for n, pid in enumerate(kg.ids)}
    kaggle_actions = actions()
    steps = replay.get("steps") or []
    if not isinstance(steps, list):
        raise BadCall(f"steps is {type(steps).__name__}, not a list")
    out = []
    for k, step in enumerate(steps):
        if not isinstance(step, list):
            raise BadCall(f"step {k} is {type(step).__name__}, not a list of the agents' states")
        for i, agent in enumerate(step):
            where = f"step {k}, agent {i}"
            if not isinstance(agent, dict):
                raise BadCall(f"{where} is {type(agent).__name__}, not an agent's state")
            action = agent.get("action")
            kwargs = action.get("kwargs") if isinstance(action, dict) else None
            if kwargs is None:
                continue  # an agent that did not act at this step
            if not isinstance(kwargs, dict):
                raise BadCall(f"{where}: the action's kwargs are {type(kwargs).__name__}, not a mapping")
            completion = _text(kwargs, "raw_completion", where)
            prompt = _text(kwargs, "raw_prompt", where, required=completion is not None)
            if prompt is None:
                continue  # no model call: a scripted agent, or an agent that was not asked
            actor, day, phase = kwargs.get("actor_id"), kwargs.get("day"), kwargs.get("phase")
            if actor not in seat_of:
                raise BadCall(f"{where}: actor_id {actor!r:.40} is no player of the game")
            if isinstance(day, bool) or not isinstance(day, int) or phase not in ("Night", "Day"):
                raise BadCall(f"{where}: day {day!r:.20} and phase {phase!r:.20} (a whole day, Night or Day)")
            seat = seat_of[actor]
            role = kg.roles.get(seat)
            if role is None:
                raise BadCall(f"{where}: {actor} has no role in the moderator's log")
            kind = action.get("action_type")
            name = kaggle_actions.get(kind) if kind != "NoOpAction" else _awaited(steps, k, i, role)
            if kind != "NoOpAction" and name is None:
                raise BadCall(f"{where}: action_type {kind!r:.40} is not one of Kaggle's werewolf actions")
            texts = {f: _text(kwargs, f, where) for f in ("target_id", "message", "reasoning", "error")}
            out.append(KaggleCall(
                step=k, seat=seat, role=role, day=day + 1 if phase == "Night" else day,
                phase="night" if phase == "Night" else DAY_PHASES.get(name or "", "day"), action=name, prompt=prompt,
                completion=completion, target=seat_of.get(texts["target_id"]), message=texts["message"],
                reasoning=texts["reasoning"], ok=kind != "NoOpAction", error=texts["error"],
                prompt_tokens=_count(kwargs, "prompt_tokens", where),
                completion_tokens=_count(kwargs, "completion_tokens", where), cost_usd=_cost(kwargs, where)))
    return out


def models(config: dict[str, Any]) -> dict[str, tuple[str, float | None]]:
    """Seat → (the model its agent configuration names, its temperature): ``llms[0].model_name``, else the
    display name, else the agent id."""
    out = {}
    for n, agent in enumerate(config.get("agents") or []):
        agent = agent if isinstance(agent, dict) else {}
        llms = agent.get("llms") if isinstance(agent.get("llms"), list) else []
        llm = llms[0] if llms and isinstance(llms[0], dict) else {}
        params = llm.get("parameters") if isinstance(llm.get("parameters"), dict) else {}
        temperature = params.get("temperature")
        name = llm.get("model_name") or agent.get("display_name") or agent.get("agent_id") or "unknown"
        out[f"Player{n + 1}"] = (str(name), float(temperature) if isinstance(temperature, (int, float)) else None)
    return out


def usage(calls: list[KaggleCall]) -> dict[str, Any]:
    """The games row's totals of these calls (a price unknown for one call makes the total unknown)."""
    costs = [c.cost_usd for c in calls]
    return {"n_calls": len(calls), "prompt_tokens": sum(c.prompt_tokens or 0 for c in calls),
            "completion_tokens": sum(c.completion_tokens or 0 for c in calls),
            "cost_usd": None if any(v is None for v in costs) else sum(costs)}


def rows(calls: list[KaggleCall], *, run_id: str, game_id: str, first_seq: int, specs: dict[str, str],
         config: dict[str, Any]) -> list[CallRow]:
    """The calls as ``calls`` rows, seq from ``first_seq``; ``specs``: seat → its spec in the players table."""
    mask = Redactor()
    model_of = models(config)
    out = []
    for n, c in enumerate(calls):
        seq = first_seq + n
        model, temperature = model_of.get(c.seat, ("unknown", None))
        answer: dict[str, Any] = {"thought": mask(c.reasoning or "")}
        if c.action == "speak":
            answer["speech"] = mask(c.message or "")
        elif c.action is not None:
            answer["target"] = c.target
        measured = c.prompt_tokens is not None or c.completion_tokens is not None
        out.append(CallRow(
            call_id=f"{game_id}-{seq}", run_id=run_id, game_id=game_id, seq=seq, seat=c.seat, role=c.role,
            day=c.day, phase=c.phase, action=c.action, spec=specs.get(c.seat, "kaggle:unknown"), model=model,
            temperature=temperature, messages=json.dumps([{"role": "user", "content": mask(c.prompt)}]),
            response_text=None if c.completion is None else mask(c.completion),
            parsed=json.dumps(answer) if c.ok else None, ok=c.ok,
            error=None if c.ok else mask((c.error or "Kaggle's harness fell back to NoOp").strip()[-500:]),
            attempts=1, fallback=not c.ok, latency_ms=None, prompt_tokens=c.prompt_tokens,
            completion_tokens=c.completion_tokens, usage_estimated=False if measured else None,
            cost_usd=c.cost_usd, started_at=None, replay_key=None))
    return out
