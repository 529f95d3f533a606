"""The engineer widget: a task, a workspace, a model spec, a role and where its commands run (the kinds of
environment the registry declares, ``toolkit.agent.environments.kinds``: the role's by default, as ``--env``);
Step, Run, Stop; the tool calls as a
table, the open file, and questions from the agent answered in a text box. It drives the agent's
``Session`` (``step``/``stop``/``finish``), the same runner as ``toolkit engineer``: a session ended here
writes its ``sessions`` row and closes its run."""

from __future__ import annotations

import asyncio
import html

import ipywidgets as W

from toolkit.agent.environments import kinds
from toolkit.agent.loop.role import load_role
from toolkit.agent.loop.session import Session, SessionConfig
from toolkit.agent.tools.base import ToolError
from toolkit.core.files import one_line
from toolkit.llm import get_model
from toolkit.llm.budget import Budget, BudgetReached
from toolkit.record.run_log import Run
from toolkit.ui.kernel_loop import KernelLoop
from toolkit.ui.style import WRAP


class WidgetChannel:
    """The engineer's human channel in a notebook: questions appear with a text box to answer."""

    def __init__(self, box: W.VBox, log: W.HTML, kernel: KernelLoop | None = None):
        self.box, self.log = box, log
        self.kernel = kernel or KernelLoop()
        self.future: asyncio.Future | None = None
        self.on_change = lambda: None  # the session widget's status follows the question

    async def ask(self, question: str) -> str:
        self.future = future = asyncio.get_running_loop().create_future()
        self.field = W.Text(placeholder="your answer", layout=W.Layout(width="400px"))
        button = W.Button(description="Answer", button_style="primary")
        button.on_click(lambda _: self.kernel.resolve(future, self.field.value))
        self.field.on_submit(lambda _: self.kernel.resolve(future, self.field.value))  # Enter answers too
        self.box.children = [W.HTML(f"<b>The agent asks:</b> {html.escape(question)}"), W.HBox([self.field, button])]
        self.button = button
        self.on_change()
        try:
            return await future
        finally:
            self.box.children = []
            self.on_change()

    @property
    def waiting(self) -> bool:
        return self.future is not None and not self.future.done()

    async def tell(self, message: str) -> None:
        self.log.value += f"<div><b>The agent says:</b> {html.escape(message)}</div>"


class EngineerSession(W.VBox):
    def __init__(self, task: str = "", workspace: str = "results/workspace", model: str = "openai:gpt-4o-mini",
                 role: str = "engineer", results_dir: str = "results/sessions", max_usd: float | None = None,
                 max_tokens: int | None = None, environment: str | None = None):
        if environment is not None and environment not in kinds.choices():
            raise ValueError(f"environment {environment!r}: choose one of {', '.join(kinds.choices())} (or None: "
                             "the role's)")
        self.results_dir = results_dir
        # A spending cap over results_dir's ledger (toolkit.llm.budget), shared by every session run there: no
        # session starts once it is reached, and a running one stops after the step that reached it.
        self.budget = Budget.at(results_dir, max_usd, max_tokens)
        self.kernel = KernelLoop()  # clicks may arrive on another thread: run them on this loop
        self.task_text = W.Textarea(value=task, description="task", layout=W.Layout(width="90%", height="80px"))
        wide = W.Layout(width="90%")  # a long workspace path or scripted:PATH spec shows whole
        self.workspace = W.Text(value=workspace, description="workspace", layout=wide)
        self.model = W.Text(value=model, description="model", layout=wide)
        self.role = W.Text(value=role, description="role")
        # where commands run: the role's kind (as engineer --env left out), or one the registry declares
        self.environment = W.Dropdown(options=[("the role's", None), *((k, k) for k in kinds.choices())],
                                      value=environment, description="env")
        self.buttons = {name: W.Button(description=name) for name in ("Step", "Run", "Stop", "Apply")}
        self.buttons["Apply"].tooltip = "merge the finished session's result into the workspace folder"
        self.applied = ""
        self.status = W.HTML()
        self.status.add_class("toolkit-status")
        self.tool_table = W.HTML(layout=W.Layout(max_height="360px", overflow="auto"))
        self.open_file = W.HTML()
        self.human_box = W.VBox()
        self.said = W.HTML()
        self.channel = WidgetChannel(self.human_box, self.said, self.kernel)
        self.channel.on_change = self._render
        self.running = False
        self.capped = False  # the running session was stopped at the spending cap
        self.session: Session | None = None
        self.run: Run | None = None
        self.task: asyncio.Task | None = None
        on = self.kernel.handler
        self.buttons["Step"].on_click(on(self.step))
        self.buttons["Run"].on_click(on(self.run_all))
        self.buttons["Stop"].on_click(on(self.stop))
        self.buttons["Apply"].on_click(on(self.apply))
        super().__init__([self.task_text, self.workspace, self.model, self.role, self.environment,
                          W.HBox(list(self.buttons.values())), self.status, self.human_box, self.said,
                          W.HTML("<b>Tool calls</b>"), self.tool_table, W.HTML("<b>Open file</b>"), self.open_file])

    @property
    def ended_by(self) -> str | None:
        return self.session.ended_by if self.session else None

    def _ensure_session(self) -> None:
        if self.session is None:
            role = load_role(self.role.value)
            kind = self.environment.value or role.environment.kind
            problem = kinds.refusal(kind)
            if problem:  # as engineer --env: one line, and nothing is made
                where = "env" if self.environment.value else f"role {self.role.value}: environment"
                raise ValueError(f"{where} {kind}: {problem}")
            if self.budget is not None:
                self.budget.check_prices([get_model(self.model.value)])
                if self.budget.exhausted():
                    raise BudgetReached(self.budget.line(skipped=1, unit="session"))
            self.run = Run(self.results_dir, "engineer-session", config={"task": self.task_text.value,
                                                                         "spec": self.model.value})
            try:
                self.session = Session(SessionConfig(role, self.task_text.value, self.workspace.value,
                                                     self.model.value, run=self.run, channel=self.channel,
                                                     spending=self.budget, environment=self.environment.value))
            except BaseException:  # no session: its run is closed, not left open
                self.run.close()
                raise

    def _launch(self, coro_fn) -> asyncio.Task | None:
        try:
            self._ensure_session()
        except Exception as exc:  # a click's exception goes to a log nobody reads: the status line says it
            self.status.value = f"<span style='color:#c0392b'>error: {html.escape(one_line(exc))}</span>"
            if isinstance(exc, ValueError):  # a refused environment, role, spec or unpriced model: said, no session
                return None
            raise  # the cap reached (BudgetReached) and anything else: said, and raised to the caller too
        if self.task is None or self.task.done():
            self.running = True
            self.task = self.kernel.loop.create_task(coro_fn())
            self._render()
        return self.task

    async def _steps(self, n: int | None) -> None:
        try:
            while self.session.ended_by is None and (n is None or n > 0):
                await self.session.step()
                n = None if n is None else n - 1
                if self.budget is not None and self.budget.exhausted():
                    self.session.stop()
                    self.capped = True
                self._render()
            if self.session.ended_by is not None:
                await self.session.finish()
                self.run.close()
        except (asyncio.CancelledError, KeyboardInterrupt) as exc:
            # the task cancelled (the user stopped it), as Session.run's Ctrl-C: nothing of the agent's outlives
            # it, its trajectory and sessions row are kept (ended_by interrupted, success unknown), its run closed
            self.session.environment.discard()
            self.session.interrupted(exc)
            self.run.close()
            raise
        finally:
            self.running = False
            self._render()

    def step(self) -> asyncio.Task:
        return self._launch(lambda: self._steps(1))

    def run_all(self) -> asyncio.Task:
        return self._launch(lambda: self._steps(None))

    def stop(self) -> None:
        """End the session after the step in progress (its row is written and the run closed)."""
        if self.session is not None:
            self.session.stop()
            if self.task is None or self.task.done():
                self._launch(lambda: self._steps(1))
            self._render()

    def apply(self) -> str:
        """Merge the finished session's result into the workspace folder (as ``engineer --apply``); until
        then the folder is as it was. Returns the line the status shows."""
        from toolkit.agent.environments.result import ResultError, apply

        if self.session is None or self.session.result is None:
            self.applied = "nothing to apply yet: the session has not finished"
        else:
            try:
                self.applied = apply(self.session.workspace.root, self.session.session_id)
            except ResultError as exc:
                self.applied = str(exc)
        self._render()
        return self.applied

    def _render(self) -> None:
        s = self.session
        if s is None:
            return
        rows = "".join(f"<tr><td>{t.step}</td><td>{'✔' if t.ok else '✘'}</td><td><code>{html.escape(t.tool)}</code>"
                       f"</td><td><pre style='{WRAP};margin:0'>{html.escape(t.output[:600])}</pre>"
                       "</td></tr>"
                       for t in s.tools.results)
        self.tool_table.value = f"<table><tr><th>step</th><th>ok</th><th>tool</th><th>output</th></tr>{rows}</table>"
        if s.result is None:  # once the session has ended its copy is gone: the last view stays
            try:
                self.open_file.value = f"<pre style='{WRAP}'>{html.escape(s.editor.view())}</pre>"
            except ToolError as exc:
                self.open_file.value = f"<pre style='{WRAP}'>{html.escape(str(exc))}</pre>"
        if s.ended_by:
            state = f"; ended by <b>{s.ended_by}</b>"
            if self.capped:
                state += f" at the spending cap ({html.escape(self.budget.line())})"
        elif self.channel.waiting:
            state = "; <b>the agent asks you</b> (below)"
        elif self.running and s.agent.stop_requested:
            state = "; <span class='toolkit-busy'>⏳ stopping after this step…</span>"
        elif self.running:
            state = "; <span class='toolkit-busy'>⏳ running…</span>"
        else:
            state = ""
        applied = f"<br>{html.escape(self.applied)}" if self.applied else ""
        # where its commands run, as the run log records it: the dropdown's choice or the role's
        env = html.escape(s.environment.name)
        if not s.environment.confined:  # said on every render: the folder may have changed without --apply
            env = f"<b style='color:#b00'>{env}: UNCONFINED</b> (commands run as you on this host)"
        self.status.value = f"steps: {s.steps}; env {env}{state}{applied}"
