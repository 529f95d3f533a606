"""The RoleZero think → act loop, and only the loop (mini-swe-agent's ``agents/default.py`` is the shape).

Each step the model sees the role's instruction, its tools, the plan, the current directory and open file,
and its memory (bounded); it answers with ``{"thought", "commands": [{command_name, args}]}`` (or native
tool calls, parsed here); the commands run in order, stopping at the first failure (the rest are reported
as skipped); their outputs (secrets masked) are the next observations. The loop ends through a few named exceptions:
``Submitted`` (the model sent ``end``), ``LimitsExceeded`` (steps, wall clock, budget), ``EvalGit`` (eval
mode: a git pull/push/commit: ``Git.commit``/``create_pull`` before they run, git typed in the Terminal as
the environment's git trace shows it, whatever its spelling), ``Stopped`` (the person running it). An
unusable reply is a ``FormatError``:
it becomes an observation and the loop goes on. Nothing the model sends can crash it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import BaseModel, Field

from toolkit.prompting.structured_call import Action, ActionResult, parse, prompts_dir, render, render_string
from toolkit.agent.loop.memory import Entry, Memory
from toolkit.agent.loop.config import SessionConfig
from toolkit.agent.loop.toolset import ToolContext
from toolkit.agent.tools.base import Toolbox, ToolResult
from toolkit.llm import Call, Model, Request
from toolkit.record.run_log import CallLog


# ------------------------------------------------------------------ how a session ends
class AgentExit(Exception):
    """The session is over; ``ended_by`` names why (the ``sessions`` table's column)."""

    ended_by = "error"


class Submitted(AgentExit):
    ended_by = "end"


class LimitsExceeded(AgentExit):
    def __init__(self, limit: str):
        super().__init__(limit)
        self.ended_by = limit  # max_steps, wall_clock, budget or disk


class EvalGit(AgentExit):
    ended_by = "eval_git"


class Stopped(AgentExit):
    ended_by = "stopped"


class FormatError(Exception):
    """The model's reply could not be used; the message goes back to it as an observation."""


# ------------------------------------------------------------------ what the model answers
class Command(BaseModel):
    command_name: str
    args: dict[str, Any] = Field(default_factory=dict)


class Commands(BaseModel):
    thought: str = ""
    commands: list[Command]

    @classmethod
    def from_list(cls, items: list) -> dict:  # the seed's format: a bare list of commands
        return {"commands": items}


class StepAction(Action):
    """The step's model call: JSON commands in the text, or the endpoint's native tool calls."""

    def parse(self, call: Call, output: type[BaseModel]) -> tuple[BaseModel | None, str | None]:
        tool_calls = call.completion.tool_calls if call.completion is not None else None
        if not tool_calls:
            return parse(call.text, output)
        commands = []
        for c in tool_calls:
            try:
                args = json.loads(c.get("arguments") or "{}")
            except ValueError:
                return None, f"the arguments of {c.get('name')} are not JSON"
            commands.append({"command_name": c.get("name", ""), "args": args if isinstance(args, dict) else {}})
        return output.model_validate({"thought": call.text or "", "commands": commands}), None


STEP = StepAction("step", "agent/step.j2", Commands, system="agent/system.j2")
GIT_TOOLS = ("Git.commit", "Git.create_pull")  # in eval mode they end the session instead of running


@lru_cache(maxsize=4)
def _feedback_texts(folder: str) -> dict[str, str]:
    return yaml.safe_load((Path(folder) / "agent" / "feedback.yaml").read_text())


def feedback(key: str, **values: Any) -> str:
    """A message from the loop to the model (``prompts/agent/feedback.yaml``, Jinja)."""
    return render_string(_feedback_texts(str(prompts_dir()))[key], **values)


@dataclass
class LoopLimits:
    max_steps: int
    wall_clock_s: float = 1800
    budget_usd: float | None = None


# ------------------------------------------------------------------ the loop
class Agent:
    """The loop, wired one way: from the session's resolved ``SessionConfig`` (model, role, task, ids, limits,
    eval mode, native tools, the run its calls are logged to) and its ``ToolContext`` (the environment, plan,
    editor and channel the tools were made from: the step prompt shows the plan, working directory and open
    file; eval mode ends when the environment's git trace shows a pull/push/commit; the environment's bounds
    end the session), with ``tools`` the toolbox made from that context. The agent's clock starts here, and the
    environment's commands are cut past it."""

    def __init__(self, config: SessionConfig, context: ToolContext, tools: Toolbox):
        config = config.resolved()
        self.config, self.tool_context, self.tools = config, context, tools
        self.model: Model = config.model
        self.role, self.task, self.session_id, self.channel = config.role, config.task, config.session_id, \
            config.channel
        self.eval_mode, self.native_tools = config.eval_mode, config.native_tools
        self.limits = LoopLimits(config.max_steps, config.wall_clock_s, config.budget_usd)
        self.log = CallLog(config.run, budget=config.spending)  # a study's cap: every call charged
        self.memory = Memory(self.role.memory_chars)
        self.steps = 0
        self.stop_requested = False
        self.started = time.perf_counter()
        context.environment.deadline = self.started + config.wall_clock_s
        self.system_values = {"role": self.role, "tools": self.tools.describe(), "eval_mode": self.eval_mode,
                              "instruction": render(self.role.instruction, role=self.role),
                              "examples": render(self.role.examples, role=self.role) if self.role.examples else ""}

    def context(self) -> dict[str, Any]:
        """The live part of the step prompt: the plan, the working directory, the open file."""
        c = self.tool_context
        return {"plan": c.plan.status(), "cwd": str(c.environment.root), "open_file": c.editor.current}

    async def ask(self, action: Action, values: dict[str, Any], what: str) -> ActionResult:
        """A model call for the loop or a tool, logged with this session's ids."""
        tools = None
        if action is STEP and self.native_tools:
            tools = [spec.schema() for spec in self.tools.specs.values()] + [
                {"name": "end", "description": "End the session: the task is done.", "parameters": {"type": "object"}}]
        request = Request(session_id=self.session_id, seat=self.role.name, role=self.role.profile, tools=tools,
                          replay_key=f"{self.session_id}/{self.steps}/{what}")
        state = {"task": self.task, **self.context(), "memory": self.memory.render(), "step": self.steps + 1,
                 "max_steps": self.limits.max_steps}
        fallback = (lambda: Commands(commands=[])) if action is STEP else action.output.model_construct
        return await action.run(self.model, request, {**self.system_values, **state, **values},
                                fallback=fallback, log=self.log)

    async def query(self) -> Commands:
        result = await self.ask(STEP, {}, "step")
        if result.fallback:
            raise FormatError(result.error)
        return result.value

    def check_limits(self) -> None:
        if self.stop_requested:
            raise Stopped()
        if self.steps >= self.limits.max_steps:
            raise LimitsExceeded("max_steps")
        if time.perf_counter() - self.started > self.limits.wall_clock_s:
            raise LimitsExceeded("wall_clock")
        if self.limits.budget_usd is not None and (self.log.cost_usd or 0) >= self.limits.budget_usd:
            raise LimitsExceeded("budget")
        if self.tool_context.environment.exceeded():  # the environment's bound the session passed (disk)
            raise LimitsExceeded("disk")

    async def step(self) -> None:
        """One think → act step (raises ``AgentExit`` when the session is over)."""
        self.check_limits()
        self.steps += 1
        try:
            commands = await self.query()
        except FormatError as exc:
            self.memory.add(Entry(self.steps, "", [], [feedback("unusable_reply", error=exc)]))
            return
        entry = self.memory.add(Entry(self.steps, commands.thought, [c.model_dump() for c in commands.commands]))
        await self.execute(commands.commands, entry)
        await self._check_repeats()

    async def execute(self, commands: list[Command], entry: Entry) -> None:
        exclusive = [c.command_name for c in commands if (s := self.tools.specs.get(c.command_name)) and s.exclusive]
        if len(exclusive) > 1:
            entry.observations.append(feedback("exclusive_rejected", commands=", ".join(exclusive)))
            return
        if not commands:
            entry.observations.append(feedback("no_commands"))
        for i, command in enumerate(commands):
            if command.command_name == "end":
                raise Submitted()
            if self.eval_mode and command.command_name in GIT_TOOLS:  # not run: the evaluation takes it from here
                self.tools.record(ToolResult(command.command_name, command.args, True,
                                             "eval mode: a git pull/push/commit ends the session", time.perf_counter(),
                                             step=self.steps))
                entry.observations.append(feedback("eval_end"))
                raise EvalGit()
            outcome = await self.tools.call(command.command_name, command.args, self.steps)
            entry.observations.append(feedback("command_result", command=command.command_name,
                                               status="executed" if outcome.ok else "failed", output=outcome.output))
            if self.eval_mode and command.command_name == "Terminal.run_command" \
                    and self.tool_context.environment.ran_eval_git():
                entry.observations.append(feedback("eval_end"))
                raise EvalGit()
            entry.editor_view = entry.editor_view or command.command_name.startswith("Editor.")
            if not outcome.ok:
                skipped = [c.command_name for c in commands[i + 1:]]
                if skipped:
                    entry.observations.append(feedback("skipped", commands=", ".join(skipped)))
                return

    async def _check_repeats(self) -> None:
        signature = [json.dumps(e.commands, sort_keys=True) for e in self.memory.entries[-5:]]
        if len(signature) >= 3 and len(set(signature[-3:])) == 1 and signature[-1] != "[]":
            entry = self.memory[-1]
            if len(signature) == 5 and len(set(signature)) == 1:
                answer = await self.channel.ask(feedback("repeat_ask_human", task=self.task[:200]))
                entry.observations.append(feedback("human_answer", answer=answer))
            else:
                entry.observations.append(feedback("repeat_nudge"))

    async def run(self, on_step: Callable[[], None] | None = None) -> str:
        """Steps until the session ends; returns why (``ended_by``)."""
        while True:
            try:
                await self.step()
            except AgentExit as exit_:
                return exit_.ended_by
            finally:
                if on_step is not None:
                    on_step()
