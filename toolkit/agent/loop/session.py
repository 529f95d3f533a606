"""An engineer session: wires a role's tools around the loop, saves the trajectory after every step,
has its recorder write the ``sessions`` row (``toolkit.agent.recorder``) and closes what the tools opened.
The CLI, the suite and the notebook widget all run sessions through this class (``run`` to the end, or
``step``/``stop``/``finish`` from a front end).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import tempfile
import time
import warnings
import weakref
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable

from toolkit.prompting.structured_call import Action, ActionResult
from toolkit.agent.loop import toolset
from toolkit.agent.loop.toolset import ToolContext
from toolkit.agent.tools.editor import Editor
from toolkit.agent.environments import result
from toolkit.agent.environments.environment import Environment, ResultUnavailable, make_environment
from toolkit.agent.environments.result import ResultError
from toolkit.agent.loop.config import SessionConfig  # noqa: F401  (its callers import it from here)
from toolkit.agent.loop.steps import Agent, AgentExit
from toolkit.agent.loop.memory import Entry
from toolkit.agent.loop.plan import Plan
from toolkit.agent.recorder import SessionRecorder
from toolkit.agent.tools.base import Toolbox, ToolResult
from toolkit.agent.environments.workspace import Workspace
from toolkit.record.run_log import CallLog
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


class Session:
    """One session, made from one ``SessionConfig`` (resolved once: ``SessionConfig.resolved``): its environment,
    then one ``ToolContext`` from which every tool the role names is built (``toolkit.agent.loop.toolset``), then
    the loop from the same config and context (``steps.Agent``)."""

    def __init__(self, config: SessionConfig):
        self.config = config = config.resolved()
        self.role, self.task, self.model, self.spec = config.role, config.task, config.model, config.record_spec
        self.session_id, self.channel = config.session_id, config.channel
        made = not isinstance(config.environment, Environment)
        self.environment = make_environment(config.environment, config.workspace, self.role.environment,
                                            config.allowed_remotes) if made else config.environment
        try:
            self.plan = Plan()
            self.workspace = Workspace(self.environment.source, self.environment)
            self.editor = Editor(self.workspace)
            self.recorder = SessionRecorder(config.run, self.session_id)
            self.landed: str | None = None  # where the result went (.agent/results/<session>.tar)
            self.land_error: str | None = None
            self.tools = Toolbox(self.recorder)
            context = ToolContext(self.workspace, self.environment, self.plan, self.editor, self.channel,
                                  weak(self.ask), weak(self.land), config.remote, self.role.terminal_timeout_s)
            self.tool_objects = toolset.build(self.role.tools, context, self.tools, self.role.name)
            self.agent = Agent(config, context, self.tools)
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
        """The live part of the step prompt (plan, working directory, open file)."""
        return self.agent.context()

    @property
    def log(self) -> CallLog:
        """The session's model calls (the agent's: counts, cost)."""
        return self.agent.log

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
        """Run to the end, then ``finish``. Cancelled or interrupted (Ctrl-C reaches the coroutine as a
        cancellation: ``asyncio.run`` cancels it, then raises ``KeyboardInterrupt``; the two are one case here),
        the environment ends at once (its namespaces, private copy and processes: nothing of the agent's may
        outlive a session), then ``interrupted`` keeps what the session did, and the exception goes on."""
        try:
            while self.ended_by is None:
                await self.step()
        except BaseException as exc:
            self.environment.discard()
            if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt)):
                self.interrupted(exc)
            raise
        return await self.finish(check)

    def interrupted(self, exc: BaseException) -> None:
        """What an interrupted session keeps: its trajectory (the step in progress as far as it got, then an
        entry that says it was interrupted) and its ``sessions`` row, ``ended_by="interrupted"``, ``steps`` the
        steps begun, success unknown. Its result is not taken (the environment was ended mid-step, and its copy
        with it); the tool and model calls were written as they returned. Once; nothing when the session had
        already ended."""
        if self.result is not None or self.ended_by is not None:
            return
        self.ended_by = "interrupted"
        self.agent.memory.add(Entry(self.steps, "", [], [f"interrupted ({type(exc).__name__}) during step "
                                                         f"{self.steps}; the session's result is not taken"]))
        self._ended(success=None)

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
            except (ResultUnavailable, ResultError, OSError) as exc:  # e.g. a full disk: the row is still written
                self.land_error = str(exc)
                warnings.warn(str(exc), stacklevel=2)  # the command line shows it as one clean line
            success = None
            if check is not None:  # in the session's copy, after its result was taken
                outcome = check()
                success = bool(await outcome if inspect.isawaitable(outcome) else outcome)
        finally:
            await self.environment.stop()
        return self._ended(success)

    def _ended(self, success: bool | None) -> SessionResult:
        """The end of every session (``finish``, ``interrupted``): the trajectory saved, the ``sessions`` row
        written and the result kept, from one set of values."""
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
                                          self.environment.start_files, self.environment.config.limits)
        return self.session_id

    def _error(self, exc: Exception) -> None:
        self.ended_by = "error"
        self.agent.memory.add(Entry(self.steps, "", [], [f"error: {type(exc).__name__}: {exc}"]))

    def save_trajectory(self) -> None:
        """After every step; secrets masked (the values found in the parent environment, key shapes)."""
        data = {"session_id": self.session_id, "task": self.task, "spec": self.spec, "steps": self.steps,
                "plan": self.plan.status(), "environment": self.environment.describe(),
                "result": self.landed or self.land_error,
                "commands": [{"step": t.step, "tool": t.tool, **t.command} for t in self.tools.results if t.command],
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
