"""Engineer sessions as mini-swe-agent trajectories (``.traj.json``, ``trajectory_format: mini-swe-agent-1.1``,
the shape its ``DefaultAgent.serialize`` writes and its inspector, ``mini-extra inspector``, opens).

Per session: ``info`` (``exit_status`` = how the session ended, ``submission``, ``model_stats`` with the cost
and the number of model calls; under ``toolkit`` the task, spec and success, the run's ``conditions`` (a sweep
cell's parameters) and the calls' tokens, ``tokens_estimated`` when any count is an estimate), and
``messages``: a system message (the first call's system prompt, when calls were logged), the task as the first
user message, then per step one assistant message (the thought and each command, ``extra.actions`` holding the
commands: a terminal command as itself, any other tool as ``Tool.name {json args}``) and one user message per
command output (``extra.raw_output``, ``extra.returncode`` 0 or 1), as its text-based agent writes them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolkit.core.files import inside
from toolkit.core.secrets import Redactor
from toolkit.export.common import OMITTED, by_key, conditions_by_run, parse_json, records, tokens, write_json

FORMAT = "mini-swe-agent-1.1"
TERMINAL = ("Terminal.run_command", "Terminal.run", "bash")


def action(command: dict) -> str:
    """One toolkit command as a mini-swe-agent action string."""
    name = command.get("command_name", "")
    args = command.get("args") or {}
    if name in TERMINAL and isinstance(args, dict) and len(args) >= 1:
        return str(args.get("cmd") or args.get("command") or next(iter(args.values())))
    return f"{name} {json.dumps(args, ensure_ascii=False)}"


def trajectory(session: dict, calls: list[dict], trajectory: dict | None, content: bool = True,
               conditions: dict[str, Any] | None = None) -> dict[str, Any]:
    """One session as a mini-swe-agent trajectory dict; ``info.toolkit`` holds its run's ``conditions`` (a sweep
    cell's parameters) and its calls' tokens."""
    memory = (trajectory or {}).get("memory") or []
    system = next((m for c in calls for m in parse_json(c.get("messages"), []) or []
                   if isinstance(m, dict) and m.get("role") == "system"), None)
    task = str(session.get("task") or (trajectory or {}).get("task") or "")
    messages: list[dict] = []
    if system:
        messages.append({"role": "system", "content": system.get("content") if content else OMITTED})
    messages.append({"role": "user", "content": task if content else OMITTED})
    for i, m in enumerate(memory):
        commands = [c for c in m.get("commands") or [] if isinstance(c, dict)]
        actions = [{"command": action(c) if content else OMITTED} for c in commands]
        body = "\n".join([f"THOUGHT: {m.get('thought', '')}"] + [f"```bash\n{a['command']}\n```" for a in actions])
        messages.append({"role": "assistant", "content": body if content else OMITTED,
                         "extra": {"actions": actions, "step": m.get("step", i + 1)}})
        for j, out in enumerate(m.get("observations") or []):
            text = str(out)
            failed = text.startswith("Command ") and " failed" in text.split("\n", 1)[0]
            messages.append({"role": "user", "content": (f"<returncode>{int(failed)}</returncode>\n<output>\n"
                                                         f"{text}\n</output>") if content else OMITTED,
                             "extra": {"raw_output": text if content else OMITTED, "returncode": int(failed)}})
    ended = str(session.get("ended_by") or "")
    cost = float(session.get("cost_usd") or 0.0)
    return {
        "info": {"model_stats": {"instance_cost": cost, "api_calls": len(calls)},
                 "config": {"agent": {}, "agent_type": "toolkit.agent"}, "mini_version": "",
                 "exit_status": "Submitted" if ended == "end" and session.get("success") else ended,
                 "submission": "", "toolkit": {"session_id": session["session_id"], "spec": session.get("spec"),
                                               "steps": session.get("steps"), "ended_by": ended,
                                               "success": session.get("success"), "wall_s": session.get("wall_s"),
                                               "run_id": session.get("run_id"), "conditions": conditions or {},
                                               **tokens(calls)}},
        "messages": messages,
        "trajectory_format": FORMAT,
    }


def write(results, out: Path, trajectories: dict[str, dict | None], content: bool = True) -> list[Path]:
    """One ``<session_id>.traj.json`` per session under ``out``."""
    mask = Redactor()
    calls = by_key(results.calls, "session_id")
    cells = conditions_by_run(results, mask)
    written = []
    for s in records(results.sessions):
        sid = s["session_id"]
        data = trajectory(s, calls.get(sid, []), trajectories.get(sid), content, cells.get(str(s.get("run_id"))))
        written.append(write_json(inside(out, sid, ".traj.json"), data, mask, indent=1))
    return written
