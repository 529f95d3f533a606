"""An engineer session: wires a role's tools around the loop, saves the trajectory after every step,
has its recorder write the ``sessions`` row (``toolkit.agent.recorder``) and closes what the tools opened.
The CLI, the suite and the notebook widget all run sessions through this class (``run`` to the end, or
``step``/``stop``/``finish`` from a front end).
"""

from __future__ import annotations

import inspect
import json
import os
import tempfile
import time
import uuid
import warnings
import weakref
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Callable

from toolkit.prompting.structured_call import Action, ActionResult
from toolkit.agent.loop import toolset
from toolkit.agent.loop.toolset import ToolContext
from toolkit.agent.tools.editor import Editor
from toolkit.agent.environments import result
from toolkit.agent.environments.environment import Environment, ResultUnavailable, make_environment
from toolkit.agent.environments.result import ResultError
from toolkit.agent.tools.human import Channel, ScriptedChannel
from toolkit.agent.loop.steps import Agent, AgentExit, LoopLimits
from toolkit.agent.loop.memory import Entry
from toolkit.agent.loop.plan import Plan
from toolkit.agent.loop.role import RoleConfig
from toolkit.agent.recorder import SessionRecorder
from toolkit.agent.tools.base import Toolbox, ToolResult
from toolkit.agent.environments.workspace import Workspace
from toolkit.llm import Model, cost_usd, get_model
from toolkit.record.run_log import CallLog, Run
from toolkit.core.secrets import redact_obj


@dataclass
class SessionResult:
    session_id: str
    ended_by: str
    steps: int
    success: bool | None
    cost_usd: float | None
    wall_s: float
    tool_calls: list[ToolResult]


@dataclass
class SessionConfig:
    """Everything a session is made from. ``model`` is a model spec string (or a ready ``Model``);
    ``record_spec`` is what the ``sessions`` row calls it (the suite records ``scripted:{task}/good.yaml`` rather
    than each task's resolved path). ``environment`` is where commands run (``toolkit.agent.environments``: a
    kind such as ``bubblewrap`` or ``local``, or a ready one; ``None``: the role's, by default bubblewrap where it
    works). ``eval_mode``, ``max_steps`` and ``native_tools`` left None take the role's."""

    role: RoleConfig
    task: str
    workspace: str | os.PathLike
    model: str | Model = "scripted"
    run: Run | None = None
    channel: Channel | None = None
    eval_mode: bool | None = None
    max_steps: int | None = None
    wall_clock_s: float = 1800
    budget_usd: float | None = None
    session_id: str | None = None
    remote: str = "origin"
    record_spec: str | None = None
    native_tools: bool | None = None
    environment: str | Environment | None = None
    allowed_remotes: list[str | os.PathLike] = field(default_factory=list)
    # a study's spending cap (toolkit.llm.budget.Budget) every call is charged to; whether a session may start
    # under it is its caller's decision (a session is not cut mid-way by it: budget_usd bounds one session)
    spending: Any = None


class Session:
    """One session, made from one ``SessionConfig``: its environment, then one ``ToolContext`` from which every
    tool the role names is built (``toolkit.agent.loop.toolset``), then the loop."""

    def __init__(self, config: SessionConfig):
        self.config = config
        role = config.role
        self.role, self.task = role, config.task
        self.model = get_model(config.model) if isinstance(config.model, str) else config.model
        self.spec = config.record_spec or self.model.spec
        if config.budget_usd is not None and not self.model.backend.free and \
                cost_usd(self.model.name, 1, 1) is None:  # an unknown price would make the budget never bind
            raise ValueError(f"budget_usd needs a price for {self.model.name}: add it to a TOOLKIT_PRICES file")
        made = not isinstance(config.environment, Environment)
        self.environment = make_environment(config.environment, config.workspace, role.environment,
                                            config.allowed_remotes) if made else config.environment
        try:
            self.session_id = config.session_id or f"s-{uuid.uuid4().hex[:10]}"
            self.log = CallLog(config.run, budget=config.spending)  # a study's cap: every call charged
            self.channel = config.channel or ScriptedChannel()
            self.plan = Plan()
            self.workspace = Workspace(self.environment.source, self.environment)
            self.editor = Editor(self.workspace)
            self.recorder = SessionRecorder(config.run, self.session_id)
            self.landed: str | None = None  # where the result went (refs/agent/<session>/… or .agent/results/…)
            self.land_error: str | None = None
            self.tools = Toolbox(self.recorder)
            context = ToolContext(self.workspace, self.environment, self.plan, self.editor, self.channel,
                                  weak(self.ask), weak(self.land), config.remote, role.terminal_timeout_s)
            self.tool_objects = toolset.build(role.tools, context, self.tools, role.name)
            self.agent = Agent(self.model, self.tools, role, config.task, self.log, self.session_id, self.channel,
                               LoopLimits(role.max_react_loop if config.max_steps is None else config.max_steps,
                                      config.wall_clock_s, config.budget_usd),
                               weak(self.context),
                               eval_mode=role.eval if config.eval_mode is None else config.eval_mode,
                               native_tools=role.native_tools if config.native_tools is None else config.native_tools,
                               ran_eval_git=self.environment.ran_eval_git, exceeded=self.environment.exceeded)
            # the agent's clock: commands are cut past it
            self.environment.deadline = self.agent.started + config.wall_clock_s
            self.ended_by: str | None = None
            self.result: SessionResult | None = None
            self._started = time.perf_counter()
        except BaseException:  # a session that could not be made leaves no namespaces, copy or cgroup
            if made:
                self.environment.discard()
            raise

    async def ask(self, action: Action, values: dict[str, Any], what: str) -> ActionResult:
        """A model call on the session's behalf (the code-writing tools use it)."""
        return await self.agent.ask(action, values, what)

    def context(self) -> dict[str, Any]:
        return {"plan": self.plan.status(), "cwd": str(self.environment.root), "open_file": self.editor.current}

    @property
    def steps(self) -> int:
        return self.agent.steps

    # ------------------------------------------------------------------ running
    async def step(self) -> str | None:
        """One step; returns why the session ended, or None to go on."""
        if self.ended_by is None:
            try:
                await self.agent.step()
            except AgentExit as exit_:
                self.ended_by = exit_.ended_by
            except Exception as exc:  # recorded, not raised: a sweep goes on
                self._error(exc)
            self.save_trajectory()
        return self.ended_by

    def stop(self) -> None:
        """End before the next step (the step in progress finishes)."""
        self.agent.stop_requested = True

    async def run(self, check: Callable[[], Any] | None = None) -> SessionResult:
        """Run to the end, then ``finish``. Cancelled or interrupted, the environment ends at once (its
        namespaces, private copy and processes) and the exception goes on."""
        try:
            while self.ended_by is None:
                await self.step()
        except BaseException:
            self.environment.discard()
            raise
        return await self.finish(check)

    async def finish(self, check: Callable[[], Any] | None = None) -> SessionResult:
        """Close the tools, decide success with ``check()`` (sync or async), write the ``sessions`` row; once."""
        if self.result is not None:
            return self.result
        self.ended_by = self.ended_by or "stopped"
        self.environment.deadline = None  # the result and the check get their own time
        try:
            await toolset.close(self.tool_objects)
            self.environment.end_processes()  # nothing of the agent's runs on while its result is made
            try:
                self.land()
            except (ResultUnavailable, ResultError) as exc:
                self.land_error = str(exc)
                warnings.warn(str(exc), stacklevel=2)  # the command line shows it as one clean line
            success = None
            if check is not None:  # in the session's copy, after its result was taken
                outcome = check()
                success = bool(await outcome if inspect.isawaitable(outcome) else outcome)
        finally:
            await self.environment.stop()
        self.save_trajectory()
        wall = time.perf_counter() - self._started
        self.recorder.session(task=self.task, spec=self.spec, steps=self.steps, ended_by=self.ended_by,
                              success=success, cost_usd=self.log.cost_usd, wall_s=wall)
        self.result = SessionResult(self.session_id, self.ended_by, self.steps, success, self.log.cost_usd, wall,
                                    self.tools.results)
        return self.result

    def land(self) -> str:
        """Take the session's result in now (made inside the environment, fetched or kept by the host as
        data: ``result.py``); returns the session id its refs or archive are named by."""
        with tempfile.TemporaryDirectory(prefix="toolkit-result-") as folder:
            made = self.environment.collect(Path(folder))
            if made is not None:
                self.landed = result.take(self.workspace.root, self.session_id, made,
                                          self.environment.start_commit, self.environment.start_files)
        return self.session_id

    def _error(self, exc: Exception) -> None:
        self.ended_by = "error"
        self.agent.memory.add(Entry(self.steps, "", [], [f"error: {type(exc).__name__}: {exc}"]))

    def save_trajectory(self) -> None:
        """After every step; secrets masked (the values found in the parent environment, key shapes)."""
        data = {"session_id": self.session_id, "task": self.task, "spec": self.spec, "steps": self.steps,
                "plan": self.plan.status(), "environment": self.environment.describe(),
                "result": self.landed or self.land_error,
                "memory": [e.__dict__ for e in self.agent.memory]}
        data = redact_obj(json.loads(json.dumps(data, default=str)))
        self.workspace.write_private(f"trajectories/{self.session_id}.json",
                                     json.dumps(data, indent=1, ensure_ascii=False, default=str))


def weak(method: Callable) -> Callable:
    """``method`` of a session, held weakly: the tools and the loop call back into the session without
    keeping it alive, so a session dropped unfinished is freed at once, and its environment with it (no
    reference cycle waiting for the garbage collector while the session's namespaces live on)."""
    ref = weakref.WeakMethod(method)

    def call(*args, **kwargs):
        bound = ref()
        if bound is None:
            raise RuntimeError("the session this tool belonged to is gone")
        return bound(*args, **kwargs)

    return call
