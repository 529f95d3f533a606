"""A game played from outside, one decision at a time: the toolkit's own runner (``GameRunner``) plays it in a
thread of its own, and every decision of a *door seat* waits until the caller answers it. The doors
(PettingZoo, TextArena) are thin faces over this: they turn its requests into their observations and their
actions into its answers.

A door seat is a seat whose spec is ``door`` (``GameConfig(model="door")``: every seat;
``side_models={"werewolves": "door"}``: the wolves of each deal; ``seats={"Player3": "door"}``: one seat). Any
other seat is played by its own spec inside the game (``heuristic``, ``random``, a model), as ``play_games``
plays it. Since the runner plays the game, a door's game is the toolkit's game: the same observation (``observe``),
the same prompt, the same parsing of an answer (one re-ask with the error, then the seeded legal fallback and the
error policy), the same events, calls, players and games rows in the ``Run`` it is given.

The runner asks every decision of a group at once (decisions the rules allow to be taken together: a night's
independent actions, secret votes) and applies them in the rules' order once all are in; the requests of a
group reach the caller in that order, each made from the state before any of the group was applied.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import weakref
from collections import Counter
from dataclasses import replace
from typing import Any

from toolkit.prompting.structured_call import parse
from toolkit.llm import Backend, Completion, Model, Request, get_model
from toolkit.record.run_log import Run
from toolkit.werewolf.game import GameConfig, GameResult, GameRunner
from toolkit.werewolf.seat.decisions import output_model

DOOR = "door"  # the spec of a seat played through a door
_END = object()
_IDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Run → Counter of the door games' seeds in it


class DoorClosed(RuntimeError):
    """The game was stopped (a reset or close) while a decision waited."""


class DoorBackend(Backend):
    """The backend of a door seat: a request waits for the caller's answer. Decisions not in ``actions`` (None:
    every decision but ``reflect``) are answered by ``inner`` (the seat's offline player) without waiting."""

    model = DOOR
    free = True

    def __init__(self, table: Table, actions: tuple[str, ...] | None, inner: Backend):
        self.table, self.actions, self.inner = table, actions, inner

    async def complete(self, request: Request) -> Completion:
        through = request.action != "reflect" if self.actions is None else request.action in self.actions
        if not through:
            return await self.inner.complete(request)
        future = asyncio.get_running_loop().create_future()
        self.table._requests.put((request, future))
        return Completion(await future, self.model)


class Table:
    """One game at a time, driven by ``answer``. ``config``'s seats with the spec ``door`` wait for answers;
    ``actions`` narrows which of their decisions do (the others go to ``others``, an offline spec)."""

    def __init__(self, config: GameConfig | None = None, run: Run | None = None,
                 actions: tuple[str, ...] | None = None, others: str = "heuristic"):
        self.config = config if config is not None else GameConfig(model=DOOR)
        self.run = run
        self.actions = tuple(actions) if actions is not None else None
        self.door = Model(DOOR, DoorBackend(self, self.actions, get_model(others).backend))
        self.models: dict[str, Model] = {DOOR: self.door}  # shared by the games of this table
        self.runner: GameRunner | None = None
        self.waiting: list[tuple[Request, asyncio.Future]] = []  # asked, not yet answered (the first is current)
        self.result: GameResult | None = None
        self.roles: tuple[str, ...] = ()
        self._requests: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self._failure: BaseException | None = None

    # ------------------------------------------------------------------ the game's life
    def reset(self, seed: int) -> None:
        """Stop the game in play (it stays unfinished: no games row) and start a new one with ``seed``."""
        self.stop()
        self.runner = GameRunner(replace(self.config, seed=seed), self.run, self.models, game_id=self._game_id(seed))
        self.roles = self.runner.roles
        self.result, self.waiting, self._failure = None, [], None
        self._requests = queue.Queue()
        self._thread = threading.Thread(target=self._play, args=(self.runner,), daemon=True,
                                        name=f"werewolf-door-{self.runner.game_id}")
        self._thread.start()
        self._wait()

    def _game_id(self, seed: int) -> str:
        """``g<seed>-door``: the same for the same seed (PettingZoo's seed test compares infos), never one of
        ``play_games``' ``g<seed>-<hex>``; the seed's k-th door game in the same ``Run`` object is ``g<seed>-doork``
        (k ≥ 2), so the rows of two games never share a key there. (Another ``Run`` object opened on the same
        folder does not know this one's games.)"""
        if self.run is None:
            return f"g{seed}-door"
        counts = _IDS.setdefault(self.run, Counter())
        counts[seed] += 1
        return f"g{seed}-door" + (str(counts[seed]) if counts[seed] > 1 else "")

    def _play(self, runner: GameRunner) -> None:
        async def play() -> GameResult:
            self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
            return await runner.play()

        try:
            self._requests.put((_END, asyncio.run(play())))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread (a cancel is a stop)
            self._requests.put((_END, exc))

    def stop(self) -> None:
        """Stop the game in play, if any, and wait for its thread."""
        if self._thread is None:
            return
        if self._thread.is_alive() and self._loop is not None and self._task is not None:
            self._loop.call_soon_threadsafe(self._task.cancel)
        if self._thread is threading.current_thread():  # a finalizer run by a collection inside the game's thread
            return
        self._thread.join()
        self._thread, self._loop, self._task, self.waiting = None, None, None, []

    close = stop

    def release_with(self, owner: Any) -> None:
        """Stop this table's game when ``owner`` (the door's environment) is collected without ``close()``: the
        game's thread holds the table, not the environment, so a dropped environment would leave it waiting."""
        weakref.finalize(owner, self.stop)

    # ------------------------------------------------------------------ the decisions
    @property
    def over(self) -> bool:
        return self.result is not None

    @property
    def current(self) -> Request | None:
        """The decision waiting for an answer now (None once the game is over)."""
        return self.waiting[0][0] if self.waiting else None

    def answer(self, text: str) -> None:
        """Answer the current decision with ``text`` (what a model would write: JSON of the decision's schema),
        then wait for the next decision or the end."""
        if not self.waiting:
            raise DoorClosed("no decision is waiting: the game is over (reset to play another)")
        request, future = self.waiting.pop(0)
        self._loop.call_soon_threadsafe(_resolve, future, text)
        if _reasked(request, text, self.roles):  # the same seat is asked again, before the group's others
            self._wait_for(request.seat)
        self._wait()

    def _wait_for(self, seat: str) -> None:
        """Block until ``seat``'s re-ask arrives (or the game ends), and put it first."""
        while True:
            item = self._requests.get()
            if item[0] is _END:
                self._end(item[1])
                return
            if item[0].seat == seat:
                self.waiting.insert(0, item)
                return
            self.waiting.append(item)

    def _wait(self) -> None:
        """Take what the game asked; when nothing is waiting, block until it asks again or ends."""
        while True:
            try:
                item = self._requests.get(block=not self.waiting)
            except queue.Empty:
                return
            if item[0] is _END:
                self._end(item[1])
                return
            self.waiting.append(item)

    def _end(self, outcome: Any) -> None:
        self._thread.join()
        self._thread, self._loop, self._task, self.waiting = None, None, None, []
        if isinstance(outcome, BaseException):
            self._failure = outcome
            raise outcome
        self.result = outcome

    # ------------------------------------------------------------------ who plays
    def door_seats(self) -> list[str]:
        """The seats of this game played through the door, in seat order."""
        return [s for s, p in self.runner.players.items() if p.model is self.door]

    def reward(self, seat: str) -> float:
        """+1 if the seat's side won, -1 if it lost, 0 for a draw or a game that ended in error."""
        winner = self.result.winner if self.result is not None else None
        if winner not in ("village", "werewolves"):
            return 0.0
        return 1.0 if self.runner.game.side_of(self.result.roles[seat]) == winner else -1.0


def _reasked(request: Request, text: str, roles: tuple[str, ...]) -> bool:
    """Whether the runner asks this decision again after ``text``: the answer does not parse, and it was the first
    ask (a re-ask carries the earlier answer; after it comes the fallback). The runner's own parse decides."""
    view = request.observation
    if any(m["role"] == "assistant" for m in request.messages):
        return False
    model = output_model(view["action"], tuple(view["choices"]), view["can_pass"], roles)
    return parse(text, model)[0] is None


def _resolve(future: asyncio.Future, text: str) -> None:
    if not future.done():
        future.set_result(text)
