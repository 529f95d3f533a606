"""ipywidgets front ends for the notebooks: ``WerewolfSession``, ``EngineerSession``, ``ResultsExplorer``.

Games and agents run as asyncio tasks on the kernel's own event loop, so the UI stays responsive while
they run and Stop works mid-game (it takes effect after the phase in progress). A seat whose model is
``human`` is played through input widgets that offer only the legal choices.
"""

from __future__ import annotations

import asyncio
import html
import json
import time
from pathlib import Path
from typing import Any

import ipywidgets as W

from toolkit.llm import Completion, Request
from toolkit.llm.spec import OFFLINE_SPECS
from toolkit.record import Run
from toolkit.werewolf.game import GameConfig, GameRunner
from toolkit.werewolf.players import SeatConfig
from toolkit.werewolf.preset import available_presets, load_preset
from toolkit.werewolf.rules import PUBLIC, Event

ROLE_COLOURS = {"Werewolf": "#c0392b", "Seer": "#8e44ad", "Witch": "#16a085", "Guard": "#2c3e50",
                "Villager": "#27ae60"}
MODEL_CHOICES = ["heuristic", "random", "chaos:0.3", "human", "local", "openai:gpt-4o-mini"]


class HumanBackend:
    """A seat played by the person at the notebook: each decision waits for the widget's answer."""

    model = "human"
    base_url = None

    def __init__(self, session: "WerewolfSession"):
        self.session = session

    async def complete(self, request: Request) -> Completion:
        answer = await self.session.ask_human(request.observation or {})
        return Completion(text=json.dumps(answer), model="human")


class WerewolfSession(W.VBox):
    def __init__(self, results_dir: str = "results/sessions", preset: str = "classic7", seed: int = 0,
                 model: str = "heuristic"):
        self.results_dir = results_dir
        self.preset = W.Dropdown(options=available_presets(), value=preset, description="preset")
        self.seed = W.IntText(value=seed, description="seed", layout=W.Layout(width="160px"))
        self.reflection = W.Checkbox(value=False, description="reflection")
        self.experience = W.Checkbox(value=False, description="experience")
        self.god_view = W.ToggleButton(value=False, description="god view", icon="eye")
        self.seat_box = W.VBox()
        self.default_model = model
        self.buttons = {name: W.Button(description=name) for name in ("Start", "Step", "Run to end", "Stop", "Reset")}
        self.status = W.HTML()
        self.transcript = W.HTML(layout=W.Layout(max_height="420px", overflow="auto", border="1px solid #ddd"))
        self.chart = W.HTML()
        self.call_picker = W.Dropdown(options=[], description="call")
        self.call_view = W.HTML()
        self.human_box = W.VBox()
        self.runner: GameRunner | None = None
        self.run: Run | None = None
        self.task: asyncio.Task | None = None
        self.calls: list[dict[str, Any]] = []
        self.events: list[Event] = []
        self._pending_human: asyncio.Future | None = None
        self._stop = False
        self.preset.observe(lambda _: self._build_seats(), names="value")
        self.god_view.observe(lambda _: self._render(), names="value")
        self.call_picker.observe(lambda _: self._show_call(), names="value")
        self.buttons["Start"].on_click(lambda _: self.start())
        self.buttons["Step"].on_click(lambda _: self._launch(self._step_once()))
        self.buttons["Run to end"].on_click(lambda _: self._launch(self._run_to_end()))
        self.buttons["Stop"].on_click(lambda _: self.stop())
        self.buttons["Reset"].on_click(lambda _: self.reset())
        self._build_seats()
        super().__init__([
            W.HBox([self.preset, self.seed, self.reflection, self.experience]),
            W.HTML(f"<b>Models per seat</b> (offline: {', '.join(OFFLINE_SPECS)}; <code>human</code> = you)"),
            self.seat_box, W.HBox(list(self.buttons.values()) + [self.god_view]), self.status,
            W.HBox([self.transcript, self.chart], layout=W.Layout(align_items="flex-start")),
            self.human_box, W.HTML("<b>Call inspector</b>"), self.call_picker, self.call_view])
        self._render()

    # ------------------------------------------------------------------ set-up
    def _build_seats(self) -> None:
        seats = load_preset(self.preset.value).seats
        self.seat_models = {s: W.Combobox(value=self.default_model, options=MODEL_CHOICES, description=s,
                                          ensure_option=False, layout=W.Layout(width="260px")) for s in seats}
        rows = [list(self.seat_models.values())[i:i + 3] for i in range(0, len(seats), 3)]
        self.seat_box.children = [W.HBox(r) for r in rows]

    def start(self) -> None:
        """A new game from the controls (an unfinished one is left in the tables without a games row)."""
        self.reset()
        humans = [s for s, w in self.seat_models.items() if w.value.strip() == "human"]
        seats = {s: SeatConfig(spec=w.value.strip(),
                               reflection=self.reflection.value, experience=self.experience.value)
                 for s, w in self.seat_models.items()}
        config = GameConfig(preset=self.preset.value, seed=self.seed.value, seats=seats)
        self.run = Run(self.results_dir, "session", config={"preset": self.preset.value, "seed": self.seed.value,
                                                            "seats": {s: w.value for s, w in self.seat_models.items()}})
        self.run.subscribe(self._on_row)
        try:
            self.runner = GameRunner(config, self.run, on_event=self._on_event,
                                     seat_backends={s: HumanBackend(self) for s in humans})
        except ValueError as exc:
            self.status.value = f"<span style='color:#c0392b'>error: {html.escape(str(exc))}</span>"
            return
        self.runner.write_events()
        self._started = time.perf_counter()
        self._render()

    def reset(self) -> None:
        self.stop()
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self._pending_human is not None and not self._pending_human.done():
            self._pending_human.cancel()
        if self.run is not None and not self.run.closed:
            self.run.close()
        self.runner, self.run, self.task = None, None, None
        self.events, self.calls = [], []
        self.human_box.children = []
        self.call_picker.options = []
        self._stop = False
        self._render()

    # ------------------------------------------------------------------ running
    def _launch(self, coro) -> asyncio.Task | None:
        if self.runner is None:
            self.start()
        if self.task is not None and not self.task.done():
            coro.close()
            return self.task  # one thing at a time
        self._stop = False
        self.task = asyncio.get_event_loop().create_task(coro)
        return self.task

    async def _step_once(self) -> None:
        """One phase: the night, the day's speeches, the vote (each may take several rounds of asks)."""
        if self.runner is not None and not self.runner.game.over:
            g = self.runner.game
            phase = (g.day, g.phase)
            while not g.over and (g.day, g.phase) == phase and not self._stop:
                await self.runner.step()
                self._render()
            self._finish_if_over()
        self._render()

    async def _run_to_end(self) -> None:
        while self.runner is not None and not self.runner.game.over and not self._stop:
            await self.runner.step()
            self._render()
        self._finish_if_over()
        self._render()

    def step(self) -> asyncio.Task | None:
        return self._launch(self._step_once())

    def run_to_end(self) -> asyncio.Task | None:
        return self._launch(self._run_to_end())

    def stop(self) -> None:
        """Halt after the phase in progress; the tables stay consistent (every row is complete)."""
        self._stop = True

    def _finish_if_over(self) -> None:
        r = self.runner
        if r is not None and r.game.over and self.run is not None and not self.run.closed:
            r.finish(r.game.winner, r.game.win_reason, time.perf_counter() - self._started)
            self.run.close()

    # ------------------------------------------------------------------ the human seat
    async def ask_human(self, obs: dict[str, Any]) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        self._pending_human = future = loop.create_future()
        head = W.HTML(f"<b>{obs.get('seat')} ({obs.get('role')})</b>: day {obs.get('day')}, "
                      f"<b>{obs.get('action')}</b>")
        if obs.get("action") in ("speak", "reflect"):
            field = W.Textarea(placeholder="what you say", layout=W.Layout(width="500px"))
            submit = W.Button(description="Say", button_style="primary")
            key = "speech" if obs.get("action") == "speak" else "reflection"
            submit.on_click(lambda _: future.done() or future.set_result({key: field.value or "..."}))
        else:
            options = list(obs.get("choices", [])) + (["(pass)"] if obs.get("can_pass") else [])
            field = W.Dropdown(options=options, description="choose")
            submit = W.Button(description="Submit", button_style="primary")
            submit.on_click(lambda _: future.done() or future.set_result(
                {"target": None if field.value == "(pass)" else field.value}))
        self.human_box.children = [head, W.HBox([field, submit])]
        self.human_field, self.human_submit = field, submit
        try:
            return await future
        finally:
            self.human_box.children = []

    @property
    def waiting_for_human(self) -> bool:
        return self._pending_human is not None and not self._pending_human.done()

    # ------------------------------------------------------------------ display
    def _on_event(self, event: Event, game) -> None:
        self.events.append(event)

    def _on_row(self, table: str, row: dict[str, Any]) -> None:
        if table == "calls":
            self.calls.append(row)
            self.call_picker.options = [(f"#{c['seq']} {c['seat']} {c['action']} d{c['replay_key'].split('/d')[1].split('/')[0]}"
                                         + (" [fallback]" if c["fallback"] else ""), i)
                                        for i, c in enumerate(self.calls)]

    def _show_call(self) -> None:
        i = self.call_picker.value
        if i is None or i >= len(self.calls):
            self.call_view.value = ""
            return
        c = self.calls[i]
        messages = "".join(f"<div><b>{m['role']}</b><pre style='white-space:pre-wrap'>{html.escape(m['content'])}</pre>"
                           f"</div>" for m in json.loads(c["messages"]))
        self.call_view.value = (f"<div style='font-size:12px'>model <code>{c['model']}</code>, tokens "
                                f"{c['prompt_tokens']}+{c['completion_tokens']}, latency {c['latency_ms']:.1f} ms, "
                                f"ok={c['ok']}, fallback={c['fallback']}, error={html.escape(str(c['error']))}"
                                f"<details><summary>messages</summary>{messages}</details>"
                                f"<b>raw answer</b><pre>{html.escape(str(c['response_text']))}</pre>"
                                f"<b>parsed</b><pre>{html.escape(str(c['parsed']))}</pre></div>")

    def transcript_lines(self) -> list[str]:
        god = self.god_view.value
        game = self.runner.game if self.runner else None
        lines = []
        for e in self.events:
            if e.visibility != PUBLIC and not god:
                continue
            who = ""
            if e.actor and game:
                role = game.roles[e.actor]
                who = (f"<b style='color:{ROLE_COLOURS[role]}'>{e.actor} ({role})</b>: " if god
                       else f"<b>{e.actor}</b>: ")
            private = "" if e.visibility == PUBLIC else f"<i>(private to {e.visibility})</i> "
            lines.append(f"<div>[day {e.day} {e.phase}] {private}{who}{html.escape(e.text)}</div>")
        return lines

    def _render(self) -> None:
        lines = self.transcript_lines()
        self.transcript.value = "".join(lines) or "<i>Press Start, then Step or Run to end.</i>"
        r = self.runner
        if r is None:
            self.status.value = "<i>no game</i>"
            self.chart.value = ""
            return
        g = r.game
        state = (f"<b>winner: {g.winner}</b> ({g.win_reason})" if g.over else f"day {g.day}, phase {g.phase}")
        self.status.value = f"game <code>{r.game_id}</code>: {state}; {r.ctx.calls} calls, {r.ctx.fallbacks} fallbacks"
        wolves = len(g.living("Werewolf"))
        village = len(g.alive) - wolves
        bar = lambda n, colour: f"<div style='background:{colour};height:14px;width:{18 * n}px'></div>"  # noqa: E731
        self.chart.value = (f"<div style='padding-left:12px;font-size:12px'><b>alive</b><br>village {village}"
                            f"{bar(village, '#27ae60')}werewolves {wolves}{bar(wolves, '#c0392b')}</div>")


class WidgetChannel:
    """The engineer's human channel in a notebook: questions appear with a text box to answer."""

    def __init__(self, box: W.VBox, log: W.HTML):
        self.box, self.log = box, log
        self.future: asyncio.Future | None = None

    async def ask(self, question: str) -> str:
        self.future = asyncio.get_running_loop().create_future()
        self.field = W.Text(placeholder="your answer", layout=W.Layout(width="400px"))
        button = W.Button(description="Answer", button_style="primary")
        button.on_click(lambda _: self.future.done() or self.future.set_result(self.field.value))
        self.box.children = [W.HTML(f"<b>The agent asks:</b> {html.escape(question)}"), W.HBox([self.field, button])]
        self.button = button
        try:
            return await self.future
        finally:
            self.box.children = []

    async def tell(self, message: str) -> None:
        self.log.value += f"<div><b>The agent says:</b> {html.escape(message)}</div>"


class EngineerSession(W.VBox):
    def __init__(self, task: str = "", workspace: str = "results/workspace", model: str = "openai:gpt-4o-mini",
                 role: str = "engineer", results_dir: str = "results/sessions"):
        self.results_dir = results_dir
        self.task_text = W.Textarea(value=task, description="task", layout=W.Layout(width="600px"))
        self.workspace = W.Text(value=workspace, description="workspace")
        self.model = W.Text(value=model, description="model")
        self.role = W.Text(value=role, description="role")
        self.buttons = {name: W.Button(description=name) for name in ("Step", "Run", "Stop")}
        self.status = W.HTML()
        self.tool_table = W.HTML(layout=W.Layout(max_height="360px", overflow="auto"))
        self.open_file = W.HTML()
        self.human_box = W.VBox()
        self.said = W.HTML()
        self.channel = WidgetChannel(self.human_box, self.said)
        self.agent = None
        self.run: Run | None = None
        self.task: asyncio.Task | None = None
        self.ended_by: str | None = None
        self._stop = False
        self.buttons["Step"].on_click(lambda _: self.step())
        self.buttons["Run"].on_click(lambda _: self.run_all())
        self.buttons["Stop"].on_click(lambda _: self.stop())
        super().__init__([self.task_text, W.HBox([self.workspace, self.model, self.role]),
                          W.HBox(list(self.buttons.values())), self.status, self.human_box, self.said,
                          W.HTML("<b>Tool calls</b>"), self.tool_table, W.HTML("<b>Open file</b>"), self.open_file])

    def _ensure_agent(self) -> None:
        if self.agent is None:
            from toolkit.agent.loop import Agent
            from toolkit.agent.role import load_role

            self.run = Run(self.results_dir, "engineer-session", config={"task": self.task_text.value,
                                                                         "model": self.model.value})
            self.agent = Agent(load_role(self.role.value), self.task_text.value, self.workspace.value,
                               self.model.value, run=self.run, channel=self.channel)

    def _launch(self, coro) -> asyncio.Task:
        self._ensure_agent()
        if self.task is not None and not self.task.done():
            coro.close()
            return self.task
        self._stop = False
        self.task = asyncio.get_event_loop().create_task(coro)
        return self.task

    async def _one(self) -> None:
        if self.ended_by is None:
            if self.agent.steps >= self.agent.max_steps:
                self.ended_by = "max_steps"
            else:
                self.ended_by = await self.agent.step()
                self.agent.save_trajectory()
        self._render()

    async def _all(self) -> None:
        while self.ended_by is None and not self._stop:
            await self._one()
        self._render()

    def step(self) -> asyncio.Task:
        return self._launch(self._one())

    def run_all(self) -> asyncio.Task:
        return self._launch(self._all())

    def stop(self) -> None:
        self._stop = True

    def _render(self) -> None:
        a = self.agent
        if a is None:
            return
        rows = "".join(f"<tr><td>{t.step}</td><td>{'✔' if t.ok else '✘'}</td><td><code>{html.escape(t.tool)}</code>"
                       f"</td><td><pre style='white-space:pre-wrap;margin:0'>{html.escape(t.output[:600])}</pre></td></tr>"
                       for t in a.tool_results)
        self.tool_table.value = f"<table><tr><th>step</th><th>ok</th><th>tool</th><th>output</th></tr>{rows}</table>"
        self.open_file.value = f"<pre>{html.escape(a.editor.view())}</pre>"
        self.status.value = f"steps: {a.steps}" + (f"; ended by <b>{self.ended_by}</b>" if self.ended_by else "")


class ResultsExplorer(W.VBox):
    """Pick a results folder: its win-rate and tool-usage tables (HTML) and plots (PNG images)."""

    def __init__(self, folder: str = "results"):
        self.folder = W.Text(value=folder, description="folder")
        self.load_button = W.Button(description="Load")
        self.summary = W.HTML()
        self.tables_view = W.HTML()
        self.images = W.VBox()
        self.load_button.on_click(lambda _: self.load())
        super().__init__([W.HBox([self.folder, self.load_button]), self.summary, self.tables_view, self.images])

    def load(self) -> None:
        import io

        from toolkit import analysis as A
        from toolkit import plots as P
        from toolkit.experiments import run_params
        from toolkit.report import PARAMS, varying
        from toolkit.results import load

        if not Path(self.folder.value).exists():
            self.summary.value = f"<span style='color:#c0392b'>no folder {html.escape(self.folder.value)}</span>"
            self.tables_view.value, self.images.children = "", []
            return
        tables = load(self.folder.value, complete_games=True)
        self.tables = tables
        self.summary.value = (f"{len(tables.runs)} runs, {len(tables.games)} games, {len(tables.sessions)} "
                              f"sessions, {len(tables.calls)} model calls")
        parts, figures = [], []
        if len(tables.games):
            games = run_params(tables)
            by = varying(games, PARAMS)
            parts.append("<h4>Win rates</h4>" + A.win_rates(games, by).to_html(index=False, float_format="%.3f"))
            figures.append(P.plot_win_rates(games, by))
        if len(tables.sessions):
            parts.append("<h4>Tool usage</h4>" + A.tool_usage(tables.tool_calls, tables.sessions)
                         .to_html(index=False, float_format="%.3f"))
            figures.append(P.plot_tool_usage(tables.tool_calls, tables.sessions))
        self.tables_view.value = "".join(parts)
        images = []
        for fig in figures:
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png", dpi=90)
            P.plt.close(fig)
            images.append(W.Image(value=buffer.getvalue(), format="png"))
        self.images.children = images
