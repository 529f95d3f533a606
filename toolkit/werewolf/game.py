"""The game runner: asks the seats that act in a phase (concurrently where the rules allow), applies
their decisions to the rules, and writes events, players and games rows (calls are written by the
actions). Nothing a player answers can crash a game.
"""

from __future__ import annotations

import asyncio
import json
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from toolkit.actions import CallContext
from toolkit.llm import Backend, get_backend, parse_spec
from toolkit.prompts import render
from toolkit.record import Run
from toolkit.werewolf.experience import ExperiencePool
from toolkit.werewolf.observation import observe
from toolkit.werewolf.players import Decision, Player, SeatConfig
from toolkit.werewolf.preset import Preset, load_preset
from toolkit.werewolf.rules import Ask, Event, Game, IllegalMove, side_of


@dataclass
class GameConfig:
    preset: Preset | str = "classic7"
    seed: int = 0
    model: str = "heuristic"  # every seat's spec unless ``seats`` says otherwise
    seats: dict[str, SeatConfig | str] = field(default_factory=dict)
    roles: dict[str, str] | None = None
    reflection: bool = False
    experience: bool = False
    recent: int = 12  # public messages kept verbatim in prompts
    temperature: float | None = None
    max_days: int | None = None
    experience_pool: ExperiencePool | None = None
    exclude_experience_versions: tuple[str, ...] = ()
    # A seat whose every call failed (at least two, none answered) ends the game as an ``error`` naming it.
    fail_on_failed_seat: bool = True

    def resolved_preset(self) -> Preset:
        preset = load_preset(self.preset) if isinstance(self.preset, str) else self.preset
        return preset.model_copy(update={"max_days": self.max_days}) if self.max_days else preset

    def seat_config(self, seat: str) -> SeatConfig:
        value = self.seats.get(seat)
        if isinstance(value, SeatConfig):
            return value
        return SeatConfig(spec=value or self.model, reflection=self.reflection, experience=self.experience)


@dataclass
class GameResult:
    game_id: str
    seed: int
    winner: str
    win_reason: str
    days: int
    events: list[Event]
    roles: dict[str, str]
    ctx: CallContext
    critical_path_calls: int = 0


def scripted_roles(specs: list[str]) -> dict[str, str] | None:
    """``roles:`` from the first ``scripted:`` file that has them (it overrides the shuffle)."""
    for spec in specs:
        kind, arg = parse_spec(spec)
        if kind == "scripted":
            try:
                data = yaml.safe_load(Path(arg).read_text()) or {}
            except (OSError, yaml.YAMLError) as exc:
                raise ValueError(f"scripted:{arg}: cannot read the script: {exc}") from exc
            if isinstance(data, dict) and isinstance(data.get("roles"), dict) and data["roles"]:
                return {str(k): str(v) for k, v in data["roles"].items()}
    return None


class GameRunner:
    """Plays one game. ``backends`` may be shared between games so endpoints share clients and caps."""

    def __init__(self, config: GameConfig, run: Run | None = None, backends: dict[str, Backend] | None = None,
                 game_id: str | None = None, on_event: Callable[[Event, Game], None] | None = None,
                 seat_backends: dict[str, Backend] | None = None):
        self.config = config
        self.preset = config.resolved_preset()
        self.run = run
        self.backends = backends if backends is not None else {}
        self.game_id = game_id or f"g{config.seed}-{uuid.uuid4().hex[:8]}"
        self.on_event = on_event
        specs = [config.seat_config(s).spec for s in self.preset.seats]
        self.game = Game(self.preset, config.seed, config.roles or scripted_roles(specs))
        seat_backends = seat_backends or {}
        self.players = {seat: Player(seat, self.game.roles[seat], config.seat_config(seat),
                                     seat_backends.get(seat) or self._backend(config.seat_config(seat).spec))
                        for seat in self.preset.seats}
        self.ctx = CallContext(run=run, game_id=self.game_id)
        preset_values = {**self.preset.model_dump(), "n_players": self.preset.n_players}
        self.values = {"preset": preset_values, "rules": render("werewolf/rules.j2", preset=preset_values)}
        self._written = 0
        self._reflected_day = 0
        self._asked: dict[str, int] = {}
        self._failed: dict[str, tuple[int, str]] = {}  # seat → (calls that failed outright, last error)
        self.stop_requested = False
        # The longest chain of model calls the game had to wait for, one after another: the game cannot
        # finish faster than this many call latencies, however much is asked concurrently.
        self.critical_path_calls = 0

    def _backend(self, spec: str) -> Backend:
        if spec not in self.backends:
            self.backends[spec] = get_backend(spec)
        return self.backends[spec]

    def key(self, seat: str, action: str) -> str:
        g = self.game
        return f"{self.preset.name}/{g.seed}/{seat}/d{g.day}/{g.phase}/{action}"

    async def ask(self, ask: Ask) -> Decision:
        """Ask one seat for one decision (does not apply it)."""
        player = self.players[ask.seat]
        obs = observe(self.game, ask.seat, ask, self.config.recent)
        decision = await player.decide(ask, obs, {**self.values, "obs": obs}, self.ctx,
                                       self.config.seed, self.key(ask.seat, ask.action), self.config.temperature)
        self._asked[ask.seat] = self._asked.get(ask.seat, 0) + 1
        if decision.fallback and decision.calls == 1 and decision.error:  # the call itself failed
            self._failed[ask.seat] = (self._failed.get(ask.seat, (0, ""))[0] + 1, decision.error)
        return decision

    def failed_seats(self) -> dict[str, str]:
        """Seats asked at least twice whose every call failed (no answer at all), with the last error."""
        return {s: err for s, (n, err) in self._failed.items() if n >= 2 and n == self._asked.get(s)}

    async def step(self) -> bool:
        """Advance by one group of decisions. Returns False when the game is over."""
        g = self.game
        if g.over:
            return False
        if g.phase == "day_speech" and self._reflected_day < g.day:
            self._reflected_day = g.day
            await self._reflect()
        asks = g.pending()
        decisions = await asyncio.gather(*(self.ask(a) for a in asks))
        self.critical_path_calls += max((d.calls for d in decisions), default=0)
        for a, d in zip(asks, decisions):
            try:
                g.apply(a.seat, a.action, d.target, d.text, d.fallback)
            except IllegalMove:  # cannot happen through validated output models; kept as a guard
                g.apply(a.seat, a.action, None if a.can_pass else a.choices[0], "", True)
        self.write_events()
        return not g.over

    async def _reflect(self) -> None:
        seats = [s for s in self.game.alive if self.players[s].config.reflection]

        async def one(seat: str) -> int:
            ask = Ask(seat, "reflect")
            obs = observe(self.game, seat, ask, self.config.recent)
            value, _, _, calls = await self.players[seat].act(
                "reflect", obs, {**self.values, "obs": obs}, self.ctx, self.config.seed,
                self.key(seat, "reflect"), temperature=self.config.temperature)
            self.players[seat].notes = value.reflection
            return calls

        self.critical_path_calls += max(await asyncio.gather(*(one(s) for s in seats)), default=0)

    def write_events(self) -> None:
        """Write (and report) the events the rules emitted since the last call."""
        new = self.game.events[self._written:]
        self._written = len(self.game.events)
        for e in new:
            if self.run is not None:
                self.run.write("events", {"game_id": self.game_id, "seq": e.seq, "day": e.day, "phase": e.phase,
                                          "kind": e.kind, "actor": e.actor, "target": e.target, "text": e.text,
                                          "visibility": e.visibility, "fallback": e.fallback})
            if self.on_event is not None:
                self.on_event(e, self.game)

    def _load_experience(self) -> None:
        pool = self.config.experience_pool
        for p in self.players.values():
            if p.config.experience and pool is not None:
                p.experiences = pool.retrieve(p.role, f"{p.role} {self.preset.name}",
                                              exclude_versions=self.config.exclude_experience_versions)

    async def play(self) -> GameResult:
        started = time.perf_counter()
        self._load_experience()
        self.write_events()
        winner = reason = None
        try:
            while not self.stop_requested and await self.step():
                pass
            winner, reason = self.game.winner, self.game.win_reason
            if winner is None:
                winner, reason = "error", "stopped before the end"
            failed = self.failed_seats() if self.config.fail_on_failed_seat else {}
            if failed:
                seat, error = next(iter(failed.items()))
                winner, reason = "error", (f"every call of {', '.join(failed)} failed; the game ran on fallbacks "
                                           f"({seat}: {error.splitlines()[0][:300]})")
        except Exception as exc:  # a bug must not take a sweep down: record it and go on
            winner, reason = "error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}"
        self.write_events()
        self.finish(winner, reason, time.perf_counter() - started)
        return GameResult(self.game_id, self.config.seed, winner, reason, self.game.day, list(self.game.events),
                          dict(self.game.roles), self.ctx, self.critical_path_calls)

    def finish(self, winner: str, reason: str, wall_s: float) -> None:
        """Record the end: experience entries, then the players and games rows."""
        g, c = self.game, self.ctx
        pool = self.config.experience_pool
        for seat, p in self.players.items():
            if pool is not None and p.config.experience and p.notes:
                outcome = "won" if side_of(p.role) == winner else "lost"
                pool.add(p.role, p.notes, outcome, self.game_id)
        if self.run is None:
            return
        for seat, p in self.players.items():
            day, cause = g.deaths.get(seat, (None, None))
            self.run.write("players", {
                "game_id": self.game_id, "seat": seat, "role": p.role, "side": side_of(p.role),
                "model": p.config.spec, "reflection": p.config.reflection, "experience": p.config.experience,
                "strategy": p.config.strategy, "survived": seat in g.alive, "death_day": day, "death_cause": cause})
        self.run.write("games", {
            "game_id": self.game_id, "run_id": self.run.run_id, "seed": g.seed, "preset": self.preset.name,
            "winner": winner, "win_reason": reason, "days": g.day, "n_calls": c.calls,
            "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens, "cost_usd": c.cost_usd,
            "n_fallbacks": c.fallbacks, "wall_s": round(wall_s, 4), "config": json.dumps(self.replay_config())})

    def replay_config(self) -> dict[str, Any]:
        """What ``toolkit replay`` needs to set the same game up again."""
        return {"preset": self.preset.model_dump(), "seed": self.config.seed, "roles": self.game.roles,
                "recent": self.config.recent, "temperature": self.config.temperature,
                "seats": {s: {"spec": p.config.spec, "reflection": p.config.reflection,
                              "experience": p.config.experience} for s, p in self.players.items()}}


async def play_game(config: GameConfig, run: Run | None = None, **kwargs: Any) -> GameResult:
    return await GameRunner(config, run, **kwargs).play()


async def play_games(configs: list[GameConfig], run: Run | None = None, concurrency: int = 32,
                     backends: dict[str, Backend] | None = None,
                     on_result: Callable[[GameResult], None] | None = None) -> list[GameResult]:
    """Many games in one process, at most ``concurrency`` at once; LLM calls are capped per endpoint."""
    backends = backends if backends is not None else {}
    gate = asyncio.Semaphore(concurrency)

    async def one(config: GameConfig) -> GameResult:
        async with gate:
            result = await GameRunner(config, run, backends).play()
        if on_result:
            on_result(result)
        return result

    return list(await asyncio.gather(*(one(c) for c in configs)))
