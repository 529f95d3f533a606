"""The RoleZero think → act loop, in one readable module.

Each step the model sees the role's instruction, its tools, the plan, the current directory and open
file, and its memory (bounded); it answers with a JSON list of ``{command_name, args}``; the commands run
in order, stopping at the first failure (the rest are reported as skipped); their outputs are the next
observations. The loop ends on ``end``, ``max_react_loop``, a wall-clock limit, a cost budget, or (eval
mode) a git pull/push/commit (``Git.commit``/``create_pull``, or one the environment's git trace shows the
Terminal ran). Commands run in the session's execution environment; tool outputs are redacted before
they reach the model, and trajectories before they are written.
Nothing the model sends can crash it: a bad reply is an observation.
"""

from __future__ import annotations

import json
import os
import string
import time
import uuid
from functools import lru_cache
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import BaseModel, Field

from toolkit.actions import Action, ActionResult, CallContext
from toolkit.agent.codegen import CodeReview, CodeWriter
from toolkit.agent.deployer import Deployer, ImageGetter
from toolkit.agent.editor import Editor
from toolkit.agent.environment import Environment, make_environment
from toolkit.agent.git import Git
from toolkit.agent.human import Channel, Human, ScriptedChannel
from toolkit.agent.plan import Plan
from toolkit.agent.role import RoleConfig
from toolkit.agent.terminal import Terminal
from toolkit.agent.tools import Toolbox, ToolResult
from toolkit.agent.workspace import Workspace
from toolkit.llm import Backend, get_backend
from toolkit.prompts import prompts_dir, render
from toolkit.record import Run
from toolkit.secrets import redact, redact_obj

ELIDE_AFTER = 400  # characters of an old observation kept verbatim
KEEP_EDITOR_VIEWS = 2


class Command(BaseModel):
    command_name: str
    args: dict[str, Any] = Field(default_factory=dict)


class Commands(BaseModel):
    thought: str = ""
    commands: list[Command]

    @classmethod
    def from_list(cls, items: list) -> dict:  # the seed's format: a bare list of commands
        return {"commands": items}


STEP = Action("step", "agent/step.j2", Commands, system="agent/system.j2")


@lru_cache(maxsize=4)
def _feedback_texts(folder: str) -> dict[str, str]:
    return yaml.safe_load((Path(folder) / "agent" / "feedback.yaml").read_text())


def feedback(key: str, **values: Any) -> str:
    """A message from the loop to the model, from ``prompts/agent/feedback.yaml``."""
    return string.Template(_feedback_texts(str(prompts_dir()))[key]).substitute(
        {k: str(v) for k, v in values.items()})


@dataclass
class Entry:
    step: int
    thought: str
    commands: list[dict[str, Any]]
    observations: list[str] = field(default_factory=list)
    editor_view: bool = False


@dataclass
class SessionResult:
    session_id: str
    ended_by: str
    steps: int
    success: bool | None
    cost_usd: float | None
    wall_s: float
    tool_calls: list[ToolResult]


class Agent:
    def __init__(self, role: RoleConfig, task: str, workspace: str | os.PathLike, model: str | Backend = "scripted",
                 run: Run | None = None, channel: Channel | None = None, eval_mode: bool | None = None,
                 max_steps: int | None = None, wall_clock_s: float = 1800, budget_usd: float | None = None,
                 session_id: str | None = None, remote: str = "origin", model_name: str | None = None,
                 native_tools: bool | None = None, environment: str | Environment | None = None,
                 allowed_remotes: list[str | os.PathLike] = ()):
        self.role = role
        self.task = task
        self.workspace = Workspace(workspace)
        self.backend = get_backend(model) if isinstance(model, str) else model
        self.model = model_name or (model if isinstance(model, str) else self.backend.model)
        self.run = run
        self.eval_mode = role.eval if eval_mode is None else eval_mode
        self.native_tools = role.native_tools if native_tools is None else native_tools
        self.max_steps = max_steps or role.max_react_loop
        self.wall_clock_s = wall_clock_s
        self.budget_usd = budget_usd
        self.session_id = session_id or f"s-{uuid.uuid4().hex[:10]}"
        self.ctx = CallContext(run=run, session_id=self.session_id)
        self.channel = channel or ScriptedChannel()
        self.plan = Plan()
        self.editor = Editor(self.workspace)
        self.environment = environment if isinstance(environment, Environment) else make_environment(
            environment, self.workspace.root, role.environment, allowed_remotes)
        self.terminal = Terminal(self.workspace, timeout_s=role.terminal_timeout_s, environment=self.environment)
        self.deployer = Deployer(self.workspace, environment=self.environment)
        self.memory: list[Entry] = []
        self.tool_results: list[ToolResult] = []
        self.steps = 0
        self.stop_requested = False
        objects = {"Plan": self.plan, "Editor": self.editor, "Terminal": self.terminal,
                   "Git": Git(self.workspace, remote, environment=self.environment), "CodeWriter": CodeWriter(self),
                   "CodeReview": CodeReview(self), "Deployer": self.deployer,
                   "ImageGetter": ImageGetter(self.workspace), "Human": Human(self.channel)}
        self.tools = Toolbox()
        for name in role.tools:
            base, _, only = name.partition(".")
            self.tools.add(objects[base], prefix=None if base == "CodeWriter" else base,
                           only=[only] if only else None)
        if "CodeWriter" in role.tools:  # write_new_code is a bare command name, as in the seed
            self.tools.specs = {("write_new_code" if k.endswith("write_new_code") else k): v
                                for k, v in self.tools.specs.items()}
        self.system_values = {"role": role, "tools": self.tools.describe(), "eval_mode": self.eval_mode,
                              "instruction": render(role.instruction, role=role),
                              "examples": render(role.examples, role=role) if role.examples else ""}

    # ------------------------------------------------------------------ model calls
    async def ask(self, action: Action, values: dict[str, Any], what: str) -> ActionResult:
        """A model call on behalf of the loop or a tool, logged in ``calls`` with this session's ids."""
        fallback = {STEP.name: lambda: Commands(commands=[])}.get(action.name, lambda: action.output.model_construct())
        tools = None
        if action is STEP and self.native_tools:
            tools = [spec.schema() for spec in self.tools.specs.values()] + [
                {"name": "end", "description": "End the session: the task is done.", "parameters": {"type": "object"}}]
        return await action.run(self.backend, {**self.system_values, **self.state(), **values}, fallback=fallback,
                                ctx=self.ctx, meta={"seat": self.role.name, "role": self.role.profile,
                                                    "replay_key": f"{self.session_id}/{self.steps}/{what}"},
                                tools=tools)

    def state(self) -> dict[str, Any]:
        return {"task": self.task, "plan": self.plan.status(), "cwd": str(self.workspace.root),
                "open_file": self.workspace.rel(self.editor.current) if self.editor.current else None,
                "memory": self.memory_text(), "step": self.steps + 1, "max_steps": self.max_steps}

    def memory_text(self) -> str:
        """Recent steps verbatim; older long observations elided, except the last few editor views; the
        oldest steps dropped when the whole is over the role's budget."""
        views = [i for i, e in enumerate(self.memory) if e.editor_view][-KEEP_EDITOR_VIEWS:]
        blocks = []
        for i, e in enumerate(self.memory):
            recent = i >= len(self.memory) - 3 or i in views
            obs = [o if recent or len(o) <= ELIDE_AFTER else
                   f"{o[:ELIDE_AFTER // 2]}\n[… {len(o) - ELIDE_AFTER // 2} characters elided …]" for o in e.observations]
            cmds = json.dumps(e.commands, ensure_ascii=False)
            blocks.append(f"## Step {e.step}\nThought: {e.thought}\nCommands: {cmds}\n" + "\n".join(obs))
        dropped = 0
        while blocks and sum(len(b) for b in blocks) > self.role.memory_chars:
            blocks.pop(0)
            dropped += 1
        return (f"({dropped} earlier steps omitted)\n" if dropped else "") + "\n\n".join(blocks)

    # ------------------------------------------------------------------ the loop
    async def step(self) -> str | None:
        """One think → act step. Returns why the session ended, or None to go on."""
        self.steps += 1
        result = await self.ask(STEP, {}, "step")
        if result.fallback:
            self.memory.append(Entry(self.steps, "", [], [feedback("unusable_reply", error=result.error)]))
            return None
        commands = result.value.commands
        entry = Entry(self.steps, result.value.thought, [c.model_dump() for c in commands])
        self.memory.append(entry)
        exclusive = [c.command_name for c in commands if (s := self.tools.specs.get(c.command_name)) and s.exclusive]
        if len(exclusive) > 1:
            entry.observations.append(feedback("exclusive_rejected", commands=", ".join(exclusive)))
            return None
        ended = None
        for i, command in enumerate(commands):
            if command.command_name == "end":
                ended = "end"
                break
            if self.eval_mode and self._is_eval_git(command):
                self._record(ToolResult(command.command_name, command.args, True,
                                        "eval mode: a git pull/push/commit ends the session", time.perf_counter()))
                entry.observations.append(feedback("eval_end"))
                ended = "eval_git"
                break
            outcome = await self.tools.call(command.command_name, command.args)
            outcome.output = redact(outcome.output)
            self._record(outcome)
            entry.observations.append(feedback("command_result", command=command.command_name,
                                               status="executed" if outcome.ok else "failed", output=outcome.output))
            if self.eval_mode and command.command_name == "Terminal.run_command" and self.environment.ran_eval_git():
                entry.observations.append(feedback("eval_end"))
                ended = "eval_git"
                break
            entry.editor_view = entry.editor_view or command.command_name.startswith("Editor.")
            if not outcome.ok:
                skipped = [c.command_name for c in commands[i + 1:]]
                if skipped:
                    entry.observations.append(feedback("skipped", commands=", ".join(skipped)))
                break
        if not commands:
            entry.observations.append(feedback("no_commands"))
        if ended is None:
            await self._check_repeats()
        return ended

    def _is_eval_git(self, command: Command) -> bool:
        """The Git tool's commits end an eval session before they run; git typed in the Terminal is seen
        afterwards, in the environment's git trace (``step``), whatever its spelling (-C, -c, aliases)."""
        return command.command_name in ("Git.commit", "Git.create_pull")

    async def _check_repeats(self) -> None:
        signature = [json.dumps(e.commands, sort_keys=True) for e in self.memory[-5:]]
        if len(signature) >= 3 and len(set(signature[-3:])) == 1 and signature[-1] != "[]":
            entry = self.memory[-1]
            if len(signature) == 5 and len(set(signature)) == 1:
                answer = await self.channel.ask(feedback("repeat_ask_human", task=self.task[:200]))
                entry.observations.append(feedback("human_answer", answer=answer))
            else:
                entry.observations.append(feedback("repeat_nudge"))

    def _record(self, outcome: ToolResult) -> None:
        outcome.step = self.steps
        self.tool_results.append(outcome)
        if self.run is not None:
            self.run.write("tool_calls", {"session_id": self.session_id, "step": self.steps, "tool": outcome.tool,
                                          "args": redact(outcome.args_json()), "ok": outcome.ok,
                                          "error": None if outcome.ok else outcome.output[:500],
                                          "duration_ms": round(outcome.duration_ms, 2),
                                          "output_chars": len(outcome.output), "truncated": outcome.truncated})

    def save_trajectory(self) -> None:
        data = {"session_id": self.session_id, "task": self.task, "model": self.model, "steps": self.steps,
                "plan": self.plan.status(), "environment": self.environment.describe(),
                "memory": [e.__dict__ for e in self.memory]}
        data = redact_obj(json.loads(json.dumps(data, default=str)))
        self.workspace.write_private(f"trajectories/{self.session_id}.json",
                                     json.dumps(data, indent=1, ensure_ascii=False, default=str))

    async def run_session(self, check=None) -> SessionResult:
        """Run to the end. ``check()`` (optional, sync or async) decides success afterwards."""
        started = time.perf_counter()
        ended_by = None
        try:
            while ended_by is None:
                if self.stop_requested:
                    ended_by = "stopped"
                elif self.steps >= self.max_steps:
                    ended_by = "max_steps"
                elif time.perf_counter() - started > self.wall_clock_s:
                    ended_by = "wall_clock"
                elif self.budget_usd is not None and (self.ctx.cost_usd or 0) >= self.budget_usd:
                    ended_by = "budget"
                else:
                    ended_by = await self.step()
                    self.save_trajectory()
        except Exception as exc:  # recorded, not raised: a sweep goes on
            ended_by = "error"
            self.memory.append(Entry(self.steps, "", [], [f"error: {type(exc).__name__}: {exc}"]))
            self.save_trajectory()
        finally:
            await self.terminal.close()
            self.deployer.close()
            await self.environment.stop()
        success = None
        if check is not None:
            outcome = check()
            success = bool(await outcome if hasattr(outcome, "__await__") else outcome)
        wall = time.perf_counter() - started
        if self.run is not None:
            self.run.write("sessions", {"session_id": self.session_id, "run_id": self.run.run_id, "task": self.task,
                                        "model": self.model, "steps": self.steps, "ended_by": ended_by,
                                        "success": success, "cost_usd": self.ctx.cost_usd, "wall_s": round(wall, 3)})
        return SessionResult(self.session_id, ended_by, self.steps, success, self.ctx.cost_usd, wall,
                             self.tool_results)
