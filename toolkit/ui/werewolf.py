"""The werewolf widget: pick models per seat, then Start, Step (one phase), Run to end, Stop; a god view,
an alive chart and a call inspector. It drives ``GameRunner`` (``step_phase``/``play``/``stop``), the same
runner as ``toolkit play``. A seat whose spec is ``human`` is played through input widgets that offer only
the legal choices, beside a panel of what that seat knows (``seat_panel``: its role and private record, from the
observation a model seat would get). Every other part (transcript, call inspector, status line, alive chart)
shows what ``viewer.Viewer`` lets the person see: outside god view, what the human seats' own observations hold
(their private events as they happen, their own calls, the roles and sides they know); god view shows
everything.

A human-vs-model study: ``god_view`` is ``"auto"`` (the default: locked, the toggle hidden, for a game with a human
seat; a person at the screen who plays a seat is a participant, and one click must not show them every role),
``"locked"`` (never) or ``"allowed"`` (a demo: the toggle stays, and every use during a game with a human seat is
written to the run's ``god_view.jsonl``: when, the game, the day and phase). A game with a human seat writes its
run's tables in a private temporary folder and moves them to ``results_dir`` when the game ends (or is Stopped and
Reset): the live ``calls.jsonl``/``events.jsonl`` hold every seat's prompts and roles, and must not be in reach of
JupyterLab's file browser mid-game. ``seed=None``: each Start draws a random seed, recorded in the run and the
games table, neither the field nor the game id shows it (the seed fixes the deal)."""

from __future__ import annotations

import asyncio
import datetime as dt
import html
import json
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import ipywidgets as W

from toolkit.llm import Backend, Completion, Model, Request, known_specs
from toolkit.record.run_log import Run
from toolkit.ui import seat_panel, transcript
from toolkit.ui.viewer import Viewer
from toolkit.ui.kernel_loop import KernelLoop
from toolkit.ui.style import WRAP
from toolkit.werewolf.game import GameConfig, GameRunner, SeatConfig
from toolkit.werewolf.engine.discussions import REGISTRY as DISCUSSIONS
from toolkit.werewolf.engine.preset import available_presets, load_preset
from toolkit.werewolf.engine.rules import Event


def model_choices() -> list[str]:
    """The specs a seat's box offers: every provider's ready example (toolkit.llm's registry), and ``human``."""
    from toolkit.llm.registry import providers

    return [*(p.example for p in providers() if p.example), "human"]


GOD_VIEW = ("auto", "locked", "allowed")  # WerewolfSession's god_view: see the module's docstring


class HumanBackend(Backend):
    """A seat played by the person at the notebook: each decision waits for the widget's answer."""

    model = "human"
    free = True

    def __init__(self, session: "WerewolfSession"):
        self.session = session

    async def complete(self, request: Request) -> Completion:
        return Completion(json.dumps(await self.session.ask_human(request.observation or {})), self.model)


class WerewolfSession(W.VBox):
    def __init__(self, results_dir: str = "results/sessions", preset: str = "classic7", seed: int | None = 0,
                 model: str = "heuristic", god_view: str = "auto"):
        if god_view not in GOD_VIEW:
            raise ValueError(f"god_view={god_view!r}: one of {', '.join(map(repr, GOD_VIEW))}")
        self.results_dir = results_dir
        self.god_view_mode = god_view
        self.god_view_uses: list[dict[str, Any]] = []  # the rows of god_view.jsonl, this session's
        self.hidden_seed = seed is None  # a study's: drawn at each Start, shown nowhere
        self.kernel = KernelLoop()  # clicks may arrive on another thread: run them on this loop
        self.preset = W.Dropdown(options=available_presets(), value=preset, description="preset")
        self.seed = W.IntText(value=seed or 0, description="seed",
                              layout=W.Layout(width="160px", display="none" if seed is None else None))
        # the day's talk: the preset's, or any registered protocol (toolkit.werewolf.engine.discussions)
        self.discussion = W.Dropdown(options=[("the preset's", None), *((n, n) for n in DISCUSSIONS)], value=None,
                                     description="discussion")
        self.reflection = W.Checkbox(value=False, description="reflection")
        self.experience = W.Checkbox(value=False, description="experience")
        self.god_view = W.ToggleButton(value=False, description="god view", icon="eye")
        self.seat_box = W.VBox()
        self.default_model = model
        self.buttons = {name: W.Button(description=name) for name in ("Start", "Step", "Run to end", "Stop", "Reset")}
        self.status = W.HTML()
        self.status.add_class("toolkit-status")
        self.transcript = W.HTML(layout=W.Layout(width="70%", border="1px solid #ddd"))
        self.chart = W.HTML()
        self.call_picker = W.Dropdown(options=[], description="call")
        self.call_view = W.HTML()
        self.call_view.add_class("toolkit-call")
        self.call_picker.add_class("toolkit-call-picker")
        self.human_box = W.VBox()
        self.seat_view = W.HTML()  # what the human seat last asked knows (seat_panel), kept between questions
        self.humans: tuple[str, ...] = ()
        self.runner: GameRunner | None = None
        self.run: Run | None = None
        self.task: asyncio.Task | None = None
        self.calls: list[dict[str, Any]] = []
        self.shown_calls: list[dict[str, Any]] = []  # the calls the viewer may open, as the picker lists them
        self.events: list[Event] = []
        self._pending_human: asyncio.Future | None = None
        self.stopped = False  # the last run was halted by Stop
        self.running = False  # a step or run is in progress
        on = self.kernel.handler
        self.preset.observe(on(self._build_seats), names="value")
        self.god_view.observe(on(self._god_view_changed), names="value")
        self.call_picker.observe(on(self._show_call), names="value")
        self.buttons["Start"].on_click(on(self.start))
        self.buttons["Step"].on_click(on(self.step))
        self.buttons["Run to end"].on_click(on(self.run_to_end))
        self.buttons["Stop"].on_click(on(self.stop))
        self.buttons["Reset"].on_click(on(self.reset))
        self._build_seats()
        super().__init__([
            W.HBox([self.preset, self.seed, self.discussion, self.reflection, self.experience]),
            W.HTML(f"<b>Models per seat</b> ({html.escape(known_specs())}; <code>human</code> = you)"),
            self.seat_box, W.HBox(list(self.buttons.values()) + [self.god_view]), self.status,
            W.HBox([self.transcript, self.chart], layout=W.Layout(align_items="flex-start")),
            W.HBox([self.human_box, self.seat_view]),
            W.HTML("<b>Call inspector</b>"), self.call_picker, self.call_view])
        self._lock_god_view()
        self._render()

    # ------------------------------------------------------------------ set-up
    def _build_seats(self) -> None:
        seats = load_preset(self.preset.value).seats
        self.seat_models = {s: W.Combobox(value=self.default_model, options=model_choices(), description=s,
                                          ensure_option=False, layout=W.Layout(width="260px")) for s in seats}
        rows = [list(self.seat_models.values())[i:i + 3] for i in range(0, len(seats), 3)]
        self.seat_box.children = [W.HBox(r) for r in rows]

    def start(self) -> None:
        """A new game from the controls (an unfinished one is left in the tables without a games row)."""
        self.reset()
        specs = {s: w.value.strip() for s, w in self.seat_models.items()}
        seats = {s: SeatConfig(spec=spec, reflection=self.reflection.value, experience=self.experience.value)
                 for s, spec in specs.items()}
        humans = {s: Model("human", HumanBackend(self)) for s, spec in specs.items() if spec == "human"}
        self.humans = tuple(humans)
        seed = random.SystemRandom().randrange(2**31) if self.hidden_seed else self.seed.value
        config = GameConfig(preset=self.preset.value, seed=seed, seats=seats, discussion=self.discussion.value)
        # a human seat's game writes where JupyterLab's file browser cannot reach until it ends (_close_run)
        where = tempfile.mkdtemp(prefix="toolkit-session-") if humans else self.results_dir
        self.run = Run(where, "session", seed=seed,
                       config={"preset": self.preset.value, "seed": seed, "discussion": self.discussion.value,
                               "seats": specs, "god_view": self.god_view_mode, "hidden_seed": self.hidden_seed})
        self._lock_god_view()
        self.run.subscribe(self._on_row)
        try:
            self.runner = GameRunner(config, self.run, on_event=self._on_event, seat_models=humans)
        except ValueError as exc:
            self.status.value = f"<span style='color:#c0392b'>error: {html.escape(str(exc))}</span>"
            return
        self.runner.start()
        if self.god_view.value:
            self._record_god_view("on")  # on before Start: the game starts in god view
        self._render()

    def reset(self) -> None:
        self.stop()
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self._pending_human is not None and not self._pending_human.done():
            self._pending_human.cancel()
        self._close_run()
        self.runner, self.run, self.task, self.running, self.stopped = None, None, None, False, False
        self.events, self.calls, self.shown_calls = [], [], []
        self.human_box.children = []
        self.seat_view.value = ""
        self.humans = ()
        self.call_picker.options = []
        self._lock_god_view()
        self._render()

    def _close_run(self) -> None:
        """Close the run; a human seat's game moves its folder from the private temporary one to results_dir."""
        run = self.run
        if run is None or run.closed:
            return
        run.close()
        if self.humans:
            final = Path(self.results_dir) / run.run_id
            final.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(run.folder), str(final))
            shutil.rmtree(run.folder.parent, ignore_errors=True)
            run.folder = final

    # ------------------------------------------------------------------ god view: a study's lock and its record
    @property
    def god_view_locked(self) -> bool:
        return self.god_view_mode == "locked" or (self.god_view_mode == "auto" and bool(self.humans))

    def _lock_god_view(self) -> None:
        locked = self.god_view_locked
        if locked:
            self.god_view.value = False
        self.god_view.disabled = locked
        self.god_view.layout.display = "none" if locked else None

    def _god_view_changed(self) -> None:
        if self.god_view_locked:
            if self.god_view.value:
                self._record_god_view("refused")  # only code can get here (the toggle is hidden): noted, and off
                self.god_view.value = False
            return
        self._record_god_view("on" if self.god_view.value else "off")
        self._render()

    def _record_god_view(self, what: str) -> None:
        """A god-view switch during a game with a human seat: a row of the run's god_view.jsonl (and of
        ``god_view_uses``), so a researcher can tell afterwards whether, and when, the participant looked."""
        if not self.humans or self.runner is None or self.run is None or self.run.closed:
            return
        g = self.runner.game
        row = {"at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "game_id": self.runner.game_id,
               "day": g.day, "phase": g.phase, "god_view": what, "human_seats": list(self.humans)}
        self.god_view_uses.append(row)
        self.run.write_log("god_view.jsonl", json.dumps(row))

    # ------------------------------------------------------------------ running: the runner's own hooks
    def _launch(self, work) -> asyncio.Task | None:
        if self.runner is None:
            self.start()
        if self.runner is None or (self.task is not None and not self.task.done()):
            return self.task  # one thing at a time
        self.runner.stop_requested, self.stopped, self.running = False, False, True
        self.task = self.kernel.loop.create_task(self._drive(work))
        self._render()
        return self.task

    async def _drive(self, work) -> None:
        runner = self.runner
        try:
            await work(runner)
        finally:
            if self.runner is runner:  # not a game that Reset already replaced
                self.stopped, self.running = runner.stop_requested and not runner.finished, False
                if runner.finished:
                    self._close_run()
                self._render()

    def step(self) -> asyncio.Task | None:
        """One phase: the night, the day's speeches, the vote."""
        return self._launch(GameRunner.step_phase)

    def run_to_end(self) -> asyncio.Task | None:
        return self._launch(GameRunner.play)

    def stop(self) -> None:
        """Halt after the group of decisions in progress; the tables stay consistent."""
        if self.runner is not None:
            self.runner.stop()
            self._render()

    # ------------------------------------------------------------------ the human seat
    async def ask_human(self, obs: dict[str, Any]) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        self._pending_human = future = loop.create_future()
        head = W.HTML(f"<b>{obs.get('seat')} ({obs.get('role')})</b>: day {obs.get('day')}, "
                      f"<b>{obs.get('action')}</b>")
        self.seat_view.value = seat_panel.panel(obs)
        if obs.get("action") in ("speak", "reflect"):
            field = W.Textarea(placeholder="what you say", layout=W.Layout(width="500px"))
            submit = W.Button(description="Say", button_style="primary")
            key = "speech" if obs.get("action") == "speak" else "reflection"
            submit.on_click(lambda _: self.kernel.resolve(future, {key: field.value or "..."}))
        elif obs.get("action") == "bid":  # how urgently to speak: 0 (listen) to 4 (must speak now)
            scale = list((obs.get("bidding") or {}).get("scale") or range(5))
            field = W.Dropdown(options=[(str(label), i) for i, label in enumerate(scale)], description="bid")
            submit = W.Button(description="Submit", button_style="primary")
            submit.on_click(lambda _: self.kernel.resolve(future, {"bid": field.value}))
        else:
            options = list(obs.get("choices", [])) + (["(pass)"] if obs.get("can_pass") else [])
            field = W.Dropdown(options=options, description="choose")
            submit = W.Button(description="Submit", button_style="primary")
            submit.on_click(lambda _: self.kernel.resolve(
                future, {"target": None if field.value == "(pass)" else field.value}))
        self._render()  # the status says whose turn it is before the question shows (updates reach the page in order)
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
        self._render()

    def _on_row(self, table: str, row: dict[str, Any]) -> None:
        if table == "calls":
            self.calls.append(row)
            self._list_calls()

    @property
    def viewer(self) -> Viewer:
        """Who is watching: the human seats (none: a spectator), or everything in god view."""
        return Viewer(self.runner.game if self.runner else None, self.humans, self.god)

    @property
    def god(self) -> bool:
        """God view applies: on, and not locked (a locked session never shows it, whatever the toggle says)."""
        return self.god_view.value and not self.god_view_locked

    def _list_calls(self) -> None:
        """The picker lists the calls the viewer may open. Outside god view they are numbered among themselves
        (a call's place in the game's sequence would tell how many calls of others came before it)."""
        god = self.god
        shown = self.viewer.calls(self.calls)
        labels = [f"#{c['seq'] if god else n + 1} {c['seat']} {c['action']} d{c['day']}"
                  + (" [fallback]" if c["fallback"] else "") for n, c in enumerate(shown)]
        if labels == [label for label, _ in self.call_picker.options]:
            return
        self.shown_calls = shown
        self.call_picker.options = [(label, n) for n, label in enumerate(labels)]

    def _show_call(self) -> None:
        i = self.call_picker.value
        if i is None or i >= len(self.shown_calls):
            self.call_view.value = "" if self.god or self.shown_calls else (
                "<i>your seats' calls show here; god view shows every call</i>")
            return
        c = self.shown_calls[i]
        messages = "".join(f"<div><b>{m['role']}</b><pre style='{WRAP}'>{html.escape(m['content'])}</pre></div>"
                           for m in json.loads(c["messages"]))
        self.call_view.value = (f"<div style='font-size:12px'>spec <code>{html.escape(c['spec'])}</code>, model "
                                f"<code>{html.escape(str(c['model']))}</code>, tokens "
                                f"{c['prompt_tokens']}+{c['completion_tokens']}, latency {c['latency_ms']:.1f} ms, "
                                f"ok={c['ok']}, fallback={c['fallback']}, error={html.escape(str(c['error']))}"
                                f"<details><summary>messages</summary>{messages}</details>"
                                f"<b>raw answer</b><pre style='{WRAP}'>{html.escape(str(c['response_text']))}</pre>"
                                f"<b>parsed</b><pre style='{WRAP}'>{html.escape(str(c['parsed']))}</pre></div>")

    def transcript_lines(self) -> list[str]:
        """The transcript as HTML lines: the events the viewer sees (public ones, the human seats' own private
        ones; in god view every event), each actor's role where the viewer knows it; a death the dawn
        announcement named is not repeated."""
        viewer = self.viewer
        return [transcript.html(x) for x in transcript.lines(viewer.events(self.events), viewer.roles())]

    def _render(self) -> None:
        self._list_calls()
        self._show_call()
        body = "".join(self.transcript_lines()) or "<i>Press Start, then Step or Run to end.</i>"
        # column-reverse: the scroll box starts at its end and stays there as lines arrive (the newest in view)
        self.transcript.value = (f"<div class='toolkit-transcript' style='max-height:420px;overflow:auto;"
                                 f"display:flex;flex-direction:column-reverse;{WRAP}'><div>{body}</div></div>")
        r = self.runner
        if r is None:
            self.status.value = "<i>no game</i>"
            self.chart.value = ""
            return
        g = r.game
        if r.finished:
            state = f"<b>winner: {r.winner}</b> ({html.escape(str(r.win_reason))})"
        elif self.waiting_for_human:
            state = f"day {g.day}, phase {g.phase}; <b>your turn</b> (below)"
        elif self.running and r.stop_requested:
            state = f"day {g.day}, phase {g.phase}; <span class='toolkit-busy'>⏳ stopping after this group…</span>"
        elif self.running:
            state = f"day {g.day}, phase {g.phase}; <span class='toolkit-busy'>⏳ running…</span>"
        elif self.stopped:
            state = f"day {g.day}, phase {g.phase}; <b>stopped</b>"
        else:
            state = f"day {g.day}, phase {g.phase}"
        calls = self.shown_calls  # the viewer's: how many calls others made would tell who acts at night
        whose = "" if self.god else "your "
        game = "game" if self.hidden_seed else f"game <code>{r.game_id}</code>"  # g<seed>-...: the seed tells the deal
        self.status.value = (f"{game}: {state}; {whose}{len(calls)} calls, "
                             f"{sum(bool(c['fallback']) for c in calls)} fallbacks")
        self.chart.value = chart(self.viewer.alive())


def chart(n: dict[str, int | None]) -> str:
    """The alive chart: the living, and each side's living where the viewer can count them."""
    bar = lambda k, colour: f"<div style='background:{colour};height:14px;width:{18 * k}px'></div>"  # noqa: E731
    if n["werewolves"] is None:
        sides = (f"<span style='color:#666'>sides not known to you ({n['werewolves_at_start']} werewolves at the "
                 f"start)</span>")
    else:
        sides = (f"village {n['village']}{bar(n['village'], '#27ae60')}werewolves {n['werewolves']}"
                 f"{bar(n['werewolves'], '#c0392b')}")
    return (f"<div style='padding-left:12px;font-size:12px'><b>alive</b> {n['alive']}{bar(n['alive'], '#7f8c8d')}"
            f"{sides}</div>")
