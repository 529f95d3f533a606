"""The game runner: asks the seats that act in a phase (concurrently where the rules allow), applies their
decisions to the rules, and hands what happened to its recorder (``toolkit.werewolf.recorder``: the events,
beliefs, players and games rows; each model call is written by its action). A seat's decision goes out as
one ``Request`` (ids, day, phase, observation, sampling) through its model. Nothing a player answers can crash a game.

Front ends drive a game through ``step``/``step_phase``/``play`` and stop it with ``stop``; the CLI and the
widgets use the same runner.
"""

from __future__ import annotations

import asyncio
import random
import time
import traceback
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from pydantic import BaseModel

from toolkit.core.files import one_line, without_paths
from toolkit.prompting.structured_call import ActionResult, macros, render
from toolkit.llm import Model, Request, Sampling, get_model
from toolkit.llm.budget import Budget, spending
from toolkit.llm.health import EndpointDown, revive
from toolkit.record.run_log import CallLog, Run
from toolkit.werewolf.recorder import GameRecorder
from toolkit.werewolf.seat.decisions import Bid, Reflection, Speech, decision, output_model
from toolkit.werewolf.experience import ExperiencePool, situation_query
from toolkit.werewolf.seat.observation import observe
from toolkit.werewolf.engine.preset import Preset, format_policy, load_preset, parse_error_policy
from toolkit.werewolf.engine.rules import Ask, Event, Game, IllegalMove, side_of
from toolkit.werewolf.engine.speech import clean_speech

# When a seat with reflection on reflects: before each of its decisions (the seed's cadence), at the start of
# each phase it acts in, once a day before the speeches, or never. The default is per_day: per_action roughly
# doubles the calls of a game (benchmarks/prompt_size.py prints calls per game for each cadence), and nothing
# offline can show what the extra calls buy; a study of reflection should set the cadence it means to test.
REFLECT_CADENCES = ("per_action", "per_phase", "per_day", "off")
ENDPOINT_MODES = ("wait", "fallback")  # GameConfig.on_endpoint_failure


@dataclass
class SeatConfig:
    spec: str = "heuristic"
    reflection: bool = False
    experience: bool = False
    strategy: str | None = None  # "honest" keeps a wolf from impersonating; prompts may read others


@dataclass
class Player:
    """A seat: its role, its model, and what it carries between decisions."""

    seat: str
    role: str
    config: SeatConfig
    model: Model
    notes: str = ""
    experiences: list[str] = field(default_factory=list)
    static: dict[str, str] | None = None  # the seat's strategy text, rendered once (``static_text``)


@dataclass
class GameConfig:
    preset: Preset | str = "classic7"
    seed: int = 0
    model: str = "heuristic"  # every seat's spec unless ``seats`` or ``side_models`` says otherwise
    seats: dict[str, SeatConfig | str] = field(default_factory=dict)
    # a side's spec ("village" or "werewolves" → spec) for its seats not in ``seats``: the runner puts it in the
    # seats its own deal gives that side (a study asks "wolves played by X", not which seats they hold)
    side_models: dict[str, str] = field(default_factory=dict)
    roles: dict[str, str] | None = None
    draws: dict[str, str] | None = None  # the rules' random draws to use ("wolf_tie:2" → seat; rules.Game)
    reflection: bool = False
    experience: bool = False  # village seats; wolves only with ``wolf_experience`` or their own SeatConfig
    wolf_experience: bool = False
    reflect: str = "per_day"  # one of REFLECT_CADENCES, for seats with reflection on
    recent: int = 12  # public messages kept verbatim in prompts
    temperature: float | None = None
    max_days: int | None = None
    # the day's talk (a protocol of toolkit.werewolf.engine.discussions); None: the preset's
    discussion: str | None = None
    experience_pool: ExperiencePool | None = None
    exclude_experience_versions: tuple[str, ...] = ()
    # What the endpoint's failures do (a call to an HTTP endpoint that got no answer after its retries; see
    # toolkit.llm.health): "wait" (the default): they are not the seat's, the decision waits for the endpoint
    # and asks again, and an endpoint dead past its deadline stops the game unfinished (``interrupted``, no games
    # row: a rerun plays it); "fallback" (Kaggle-style): the seat's decision falls back and the error policy
    # judges it as the model's failure (the games row's ``on_endpoint_failure`` says so). A dead endpoint stops
    # the game under both.
    on_endpoint_failure: str = "wait"
    # The error policy (``fallback``, ``forfeit``, ``eliminate_after:N``; None: the preset's): what a failed
    # decision of the model (no usable answer: invalid twice, or truncated past its re-asks) costs the seat.
    error_policy: str | None = None
    # An answer cut at the token limit is asked again this many times, with the growing "reason less" nudge
    # (Kaggle's Game Arena behaviour; toolkit.prompting.structured_call), before the error policy applies.
    truncation_reasks: int = 2
    truncation_nudge: bool = True

    def resolved_preset(self) -> Preset:
        preset = load_preset(self.preset) if isinstance(self.preset, str) else self.preset
        changes = {"max_days": self.max_days, "discussion": self.discussion}
        changes = {k: v for k, v in changes.items() if v}
        # validated as the preset's own keys are (an unknown discussion is one line naming the known ones)
        return Preset.model_validate({**preset.model_dump(), **changes}) if changes else preset

    def named(self, spec: str) -> str:
        """``spec`` itself, or the spec it names in the preset's ``models:`` block."""
        preset = load_preset(self.preset) if isinstance(self.preset, str) else self.preset
        return preset.models.get(spec, spec)

    def spec(self, seat: str, role: str | None = None) -> str:
        """The seat's spec: its own, else its side's (once the deal gave it ``role``), else ``model``; a name of
        the preset's ``models:`` stands for its spec."""
        value = self.seats.get(seat)
        if value:
            return self.named(value.spec if isinstance(value, SeatConfig) else value)
        return self.named((self.side_models.get(side_of(role)) if role is not None else None) or self.model)

    def seat_config(self, seat: str, role: str | None = None) -> SeatConfig:
        value = self.seats.get(seat)
        if isinstance(value, SeatConfig):
            return replace(value, spec=self.named(value.spec))
        experience = self.experience and (role != "Werewolf" or self.wolf_experience)
        return SeatConfig(spec=self.spec(seat, role), reflection=self.reflection, experience=experience)


class SeededConfigs(Sequence[GameConfig]):
    """``template`` once per seed, each made when it is asked for: a cell of 100,000 games holds its seeds, not
    100,000 configs (about 420 bytes each). Every config shares the template's values (its seats, its pool)."""

    def __init__(self, template: GameConfig, seeds: Sequence[int]):
        self.template, self.seeds = template, seeds

    def __len__(self) -> int:
        return len(self.seeds)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return SeededConfigs(self.template, self.seeds[i])
        return replace(self.template, seed=self.seeds[i])


@dataclass
class GameResult:
    game_id: str
    seed: int
    winner: str
    win_reason: str
    days: int
    events: list[Event]
    roles: dict[str, str]
    log: CallLog
    critical_path_calls: int = 0
    degraded: bool = False  # a seat's decisions were mostly not its model's (see GameRunner.degraded_seats)


def rules_text(preset: Preset) -> str:
    """The rules every seat is shown, from the preset's prompt files (each role's, the discussion's, the vote's
    and its tie rule's clause): ``PromptMissing`` names a file the prompts folder lacks. ``play`` renders them
    before it makes anything, so a missing file is refused before a run folder exists."""
    return render("werewolf/rules.j2", preset={**preset.model_dump(exclude={"models"}), "n_players": preset.n_players})


def static_text(values: dict[str, Any]) -> dict[str, str]:
    """What a seat's prompts say the same way all game (``werewolf/strategy.j2``: the common strategy and the
    seat's role strategy), rendered once per seat instead of imported by every prompt (a third of a prompt's
    rendering time)."""
    strategy = macros("werewolf/strategy.j2", **values)
    return {"common": str(strategy.common()), "for_role": str(strategy.for_role())}


class GameRunner:
    """Plays one game. ``models`` ({spec: Model}) may be shared between games so that endpoints share
    clients and concurrency caps; ``seat_models`` puts a given model in a seat (a human, a replay)."""

    def __init__(self, config: GameConfig, run: Run | None = None, models: dict[str, Model] | None = None,
                 game_id: str | None = None, on_event: Callable[[Event, Game], None] | None = None,
                 seat_models: dict[str, Model] | None = None, budget: Budget | None = None):
        if config.reflect not in REFLECT_CADENCES:
            raise ValueError(f"reflect must be one of {', '.join(REFLECT_CADENCES)}, not {config.reflect!r}")
        self.config = config
        self.preset = config.resolved_preset()
        self.run = run
        self.models = models if models is not None else {}
        self.game_id = game_id or f"g{config.seed}-{uuid.uuid4().hex[:8]}"
        self.on_event = on_event
        unknown = sorted(set(config.side_models) - {"village", "werewolves"})
        if unknown:
            raise ValueError(f"side_models: {', '.join(unknown)} is no side (village, werewolves)")
        given = seat_models or {}
        # a scripted file among the specs may fix the roles and draws: read before the deal
        before = [*given.values(), *map(self._model, {config.spec(s) for s in self.preset.seats if s not in given}),
                  *(self._model(config.named(spec)) for spec in config.side_models.values())]
        self.game = Game(self.preset, config.seed, config.roles or _scripted_roles(before),
                         config.draws or _scripted_draws(before))
        seat_models = {seat: given.get(seat) or self._model(config.spec(seat, self.game.roles[seat]))
                       for seat in self.preset.seats}
        self.players = {seat: Player(seat, self.game.roles[seat], config.seat_config(seat, self.game.roles[seat]),
                                     seat_models[seat]) for seat in self.preset.seats}
        self.budget = budget  # a study's spending cap: every call is charged to it (toolkit.llm.budget)
        self.log = CallLog(run, budget=budget)
        self.recorder = GameRecorder(run, self.game_id)
        self.roles = tuple(sorted(self.preset.roles))  # the preset's role names (reflections guess among them)
        self.sampling = Sampling(temperature=config.temperature, seed=config.seed)
        preset_values = {**self.preset.model_dump(exclude={"models"}), "n_players": self.preset.n_players}
        self.values = {"preset": preset_values, "rules": rules_text(self.preset)}
        self._written = 0
        self._reflected: set[tuple] = set()  # (seat, day, phase) or (seat, day) already reflected
        self._started: float | None = None
        if config.on_endpoint_failure not in ENDPOINT_MODES:
            raise ValueError(f"on_endpoint_failure must be one of {', '.join(ENDPOINT_MODES)}, "
                             f"not {config.on_endpoint_failure!r}")
        self.interrupted: str | None = None  # why the game stopped unfinished (a dead endpoint)
        self.stop_requested = False
        self.finished = False
        self.winner: str | None = None
        self.win_reason: str | None = None
        # The longest chain of model calls the game had to wait for, one after another: the game cannot
        # finish faster than this many call latencies, however much is asked concurrently.
        self.critical_path_calls = 0
        self.policy = parse_error_policy(config.error_policy or self.preset.error_policy)
        self.errors: dict[str, int] = {seat: 0 for seat in self.preset.seats}  # failed decisions per seat
        self.decisions: dict[str, int] = {seat: 0 for seat in self.preset.seats}  # decisions asked per seat
        self.unplayed: dict[str, int] = {seat: 0 for seat in self.preset.seats}  # failed ones a forfeit judged
        self.endpoint_fallbacks = 0  # decisions that fell back for the endpoint's failure (on_endpoint_failure)
        self._to_remove: dict[str, str] = {}  # eliminate_after: seats to disqualify at the next nightfall
        self._night_acted: int | None = None  # the last night whose decisions were applied

    def _model(self, spec: str) -> Model:
        if spec not in self.models:
            self.models[spec] = get_model(spec)
        return self.models[spec]

    def key(self, seat: str, action: str) -> str:
        g = self.game
        return f"{self.preset.name}/{g.seed}/{seat}/d{g.day}/{g.phase}/{action}"

    # ------------------------------------------------------------------ one decision
    async def decide(self, ask: Ask) -> ActionResult:
        """Ask one seat for one decision (does not apply it): one request, through the seat's model; first a
        reflection where the cadence says so, and the lessons that fit the moment where experience is on.
        ``calls`` counts the reflection's calls too."""
        player, g = self.players[ask.seat], self.game
        reflected = await self._reflect_before(ask) if player.config.reflection else 0
        obs = observe(g, ask.seat, ask, self.config.recent)
        pool = self.config.experience_pool
        if pool is not None and player.config.experience and ask.action != "reflect":
            player.experiences = pool.retrieve(player.role, situation_query(obs, player.notes), preset=self.preset.name,
                                               exclude_versions=self.config.exclude_experience_versions)
        key = self.key(ask.seat, ask.action)
        request = Request(observation=obs, sampling=self.sampling, game_id=self.game_id, seat=ask.seat,
                          role=player.role, day=g.day, phase=g.phase, replay_key=key)
        values = {**self.values, "obs": obs, "reflection": player.notes, "experiences": player.experiences,
                  "strategy": player.config.strategy or "default"}
        if player.static is None:
            player.static = static_text(values)
        values["static"] = player.static
        result = await decision(ask.action).run(player.model, request, values,
                                               fallback=lambda: _fallback(ask, key, g.seed),
                                               log=self.log,
                                               output=output_model(ask.action, ask.choices, ask.can_pass, self.roles),
                                               truncation_reasks=self.config.truncation_reasks,
                                               nudge=self.config.truncation_nudge,
                                               endpoint=self.config.on_endpoint_failure)
        self.endpoint_fallbacks += result.endpoint_failed
        if ask.action == "reflect":
            player.notes = clean_speech(result.value.summary, 800)
            if not result.fallback:
                self.recorder.beliefs(result.value, g, ask.seat, result.call_id)
        result.calls += reflected
        return result

    def _apply_error_policy(self, asks: list[Ask], decisions: list[ActionResult]) -> bool:
        """Count each seat's decisions and failed ones (no usable answer; reflections not counted) and apply the
        error policy to the seats that failed in this step, all alike (never by seat order): ``forfeit`` ends
        the game now (True): the failing seats' side loses, or nobody wins when both sides failed;
        ``eliminate_after:N`` marks every seat past N for the next nightfall, where they leave together."""
        kind, n = self.policy
        for a in asks:
            if a.action != "reflect":
                self.decisions[a.seat] += 1
        failed = [(a, d) for a, d in zip(asks, decisions) if d.fallback and a.action != "reflect"]
        for a, d in failed:
            self.errors[a.seat] += 1
        if not failed or kind == "fallback":
            return False
        if kind == "forfeit":  # the failing decisions end the game: judged by the policy, never played
            for a, d in failed:
                self.unplayed[a.seat] += 1
            self.game.forfeit({a.seat: _why(a, d) for a, d in failed})
            self.write_events()
            self.finish(self.game.winner, self.game.win_reason)
            return True
        for a, d in failed:
            if self.errors[a.seat] >= n and a.seat in self.game.alive:
                self._to_remove.setdefault(a.seat, f"{self.errors[a.seat]} failed decisions, the last: {_why(a, d)}")
        return False

    def degraded_seats(self) -> dict[str, str]:
        """Seats whose decisions were mostly (more than half) not their model's: fallbacks, for an invalid or
        truncated answer or (under ``on_endpoint_failure="fallback"``) for the endpoint. A game with one is
        ``degraded``: its result says little about the models, and ratings leave it out by default. A failed
        decision that ended the game by forfeit was not played by a fallback: the policy's verdict is the
        measurement (a model that fails its first decision loses, and is rated so), so it is not counted, unless no
        decision of the game got a usable answer (every seat asked failed every time, e.g. every answer truncated):
        a result no model made, degraded whatever the policy."""
        played = {s: (self.errors[s] - self.unplayed[s], self.decisions[s] - self.unplayed[s]) for s in self.errors}
        seats = {seat: f"{errors} of {asked} decisions fell back" for seat, (errors, asked) in played.items()
                 if asked and 2 * errors > asked}
        if not seats and (asked := sum(self.decisions.values())) and sum(self.errors.values()) == asked:
            seats = {s: f"{self.errors[s]} of {n} decisions without a usable answer (no decision of the game had one)"
                     for s, n in self.decisions.items() if n}
        return seats

    async def reflect(self, seat: str) -> int:
        """One reflection of ``seat`` (its notes and beliefs); returns the model calls it took."""
        others = tuple(s for s in self.game.alive if s != seat)
        return (await self.decide(Ask(seat, "reflect", others))).calls

    async def _reflect_before(self, ask: Ask) -> int:
        """The per_action and per_phase cadences: a reflection before this decision, where due."""
        player, g = self.players[ask.seat], self.game
        cadence = self.config.reflect
        if ask.action == "reflect" or not player.config.reflection or cadence not in ("per_action", "per_phase"):
            return 0
        mark = (ask.seat, g.day, g.phase, len(g.events)) if cadence == "per_action" else (ask.seat, g.day, g.phase)
        if mark in self._reflected:
            return 0
        self._reflected.add(mark)
        return await self.reflect(ask.seat)

    # ------------------------------------------------------------------ driving the game
    def start(self) -> None:
        """The opening events (done once; ``step`` calls it)."""
        if self._started is None:
            self._started = time.perf_counter()
            self.write_events()

    async def step(self) -> bool:
        """Advance by one group of decisions; the game is finished (recorded) when it ends. Returns False
        when the game is over."""
        self.start()
        g = self.game
        if g.over:
            return False
        if self._to_remove and g.phase == "night" and self._night_acted != g.day:  # nightfall: eliminate_after
            g.disqualify(dict(self._to_remove))  # every qualifying seat at once, then the win is checked
            self._to_remove.clear()
            self.write_events()
            if g.over:
                self.finish(g.winner, g.win_reason)
                return False
        if self.config.reflect == "per_day" and g.phase == "day_speech" and (None, g.day) not in self._reflected:
            self._reflected.add((None, g.day))
            await self._reflect_all()
        asks = g.pending()
        decisions = await self._decide_all(asks)
        down = next((d for d in decisions if isinstance(d, EndpointDown)), None)
        if down is not None:  # no decision of this step is applied: a rerun plays the game again
            self.interrupt(str(down))
            return False
        for d in decisions:
            if isinstance(d, BaseException):
                raise d
        self.critical_path_calls += max((d.calls for d in decisions), default=0)
        if g.phase == "night":
            self._night_acted = g.day
        if self._apply_error_policy(asks, decisions):
            return False
        for a, d in zip(asks, decisions):
            try:
                g.apply(a.seat, a.action, getattr(d.value, "target", None), getattr(d.value, "speech", ""),
                        d.fallback, bid=getattr(d.value, "bid", None))
            except IllegalMove:  # cannot happen through validated output models; kept as a guard
                g.apply(a.seat, a.action, None if a.can_pass or not a.choices else a.choices[0], "", True, bid=0)
        self.write_events()
        if g.over:
            self.finish(g.winner, g.win_reason)
        return not g.over

    async def _decide_all(self, asks: list[Ask]) -> list[Any]:
        """Every ask's decision, or the exception it raised: each runs to its end (and writes its calls rows)
        even when another one raises. A lone ask (a speech, a sequential vote: most steps) is awaited in this
        task, not in a task of its own (a task and a loop pass a call fewer)."""
        if len(asks) != 1:
            return await asyncio.gather(*(self.decide(a) for a in asks), return_exceptions=True)
        try:
            return [await self.decide(asks[0])]
        except Exception as exc:  # what gather(return_exceptions=True) hands back
            return [exc]

    async def step_phase(self) -> bool:
        """Advance by one phase (a night, a day's speeches, a vote: each may take several groups)."""
        g = self.game
        phase = (g.day, g.phase)
        going = not g.over
        while going and (g.day, g.phase) == phase and not self.stop_requested:
            going = await self.step()
        return going

    def stop(self) -> None:
        """Halt after the group of decisions in progress (every row written stays complete)."""
        self.stop_requested = True

    def interrupt(self, why: str) -> None:
        """Stop unfinished because an endpoint is down: ``interrupted (endpoint)``, neither a winner nor an
        ``error``; no games row is written, so a rerun of the study plays the game again."""
        self.interrupted = why
        self.stop_requested = True
        self.write_events()

    async def play(self) -> GameResult:
        """Play to the end (or until ``stop``). A bug inside the game is recorded as an ``error`` game, not
        raised, so a sweep goes on."""
        self.stop_requested = False
        try:
            while not self.stop_requested and await self.step():
                if self.budget is not None and self.budget.at_cap == "stop" and self.budget.exhausted():
                    self.stop()  # the cap is reached: this game stops unfinished (no games row), replayed later
        except EndpointDown as exc:  # a reflection's endpoint died (a decision's is caught in step)
            self.interrupt(str(exc))
        except Exception as exc:
            self.write_events()
            where = self.run.write_log("errors.log", f"game {self.game_id}:\n{traceback.format_exc()}") \
                if self.run is not None else None
            self.finish("error", one_line(without_paths(f"{type(exc).__name__}: {exc}"), 300)
                        + (f" (traceback in {where.name} of the run folder)" if where else ""))
        return self.result()

    def result(self) -> GameResult:
        g = self.game
        winner, reason = (self.winner, self.win_reason) if self.finished else (None, None)
        if self.interrupted is not None:
            winner, reason = "interrupted", f"interrupted (endpoint): {self.interrupted}"
        return GameResult(self.game_id, self.config.seed, winner or "unfinished", reason or "not finished", g.day,
                          list(g.events), dict(g.roles), self.log, self.critical_path_calls,
                          degraded=self.finished and bool(self.degraded_seats()))

    async def _reflect_all(self) -> None:
        seats = [s for s in self.game.alive if self.players[s].config.reflection]
        self.critical_path_calls += max(await asyncio.gather(*(self.reflect(s) for s in seats)), default=0)

    def write_events(self) -> None:
        """Write (and report) the events the rules emitted since the last call."""
        new = self.game.events[self._written:]
        self._written = len(self.game.events)
        self.recorder.events(new)
        for e in new:
            if self.on_event is not None:
                self.on_event(e, self.game)

    def finish(self, winner: str, reason: str) -> None:
        """Record the end (once): experience entries, then the players and games rows."""
        if self.finished:
            return
        self.finished, self.winner, self.win_reason = True, winner, reason
        wall_s = time.perf_counter() - (self._started or time.perf_counter())
        g, log = self.game, self.log
        pool = self.config.experience_pool
        for seat, p in self.players.items():
            if pool is not None and p.config.experience and p.notes:
                outcome = "won" if side_of(p.role) == winner else "lost"
                pool.add(p.role, p.notes, outcome, self.game_id, preset=self.preset.name)
        degraded = self.degraded_seats()
        self.recorder.finish(g, self.players, self.preset.name, winner, reason, log, wall_s, self.replay_config(),
                             errors=self.errors, error_policy=format_policy(*self.policy),
                             degraded="; ".join(f"{seat}: {why}" for seat, why in degraded.items()) or None,
                             on_endpoint_failure=self.config.on_endpoint_failure,
                             endpoint_fallbacks=self.endpoint_fallbacks)

    def replay_config(self) -> dict[str, Any]:
        """What ``toolkit replay`` needs to set the same game up again."""
        return {"preset": self.preset.model_dump(exclude={"models"}), "seed": self.config.seed,
                "roles": self.game.roles, "draws": dict(self.game.drawn),
                "recent": self.config.recent, "temperature": self.config.temperature, "reflect": self.config.reflect,
                "error_policy": format_policy(*self.policy), "on_endpoint_failure": self.config.on_endpoint_failure,
                "seats": {s: {"spec": p.config.spec, "reflection": p.config.reflection,
                              "experience": p.config.experience, "strategy": p.config.strategy}
                          for s, p in self.players.items()}}


def _scripted_roles(models: Any) -> dict[str, str] | None:
    """``roles:`` from the first scripted model that has them (it overrides the shuffle)."""
    for model in models:
        roles = model.backend.roles
        if roles:
            return {str(k): str(v) for k, v in roles.items()}
    return None


def _scripted_draws(models: Any) -> dict[str, str] | None:
    """``draws:`` from the first scripted model that has them (the rules' random draws of a replayed game)."""
    for model in models:
        draws = getattr(model.backend, "draws", None)
        if draws:
            return dict(draws)
    return None


def _why(ask: Ask, result: ActionResult) -> str:
    """A failed decision in a few words: its action and what went wrong."""
    return f"{ask.action}: {result.error_kind or 'invalid answers'}"


def _fallback(ask: Ask, key: str, seed: int) -> BaseModel:
    """A legal decision when the model gave none: seeded, so a replay falls back the same way."""
    if ask.action == "speak":
        return Speech(speech="I have nothing to add.")
    if ask.action == "bid":  # no answer bids 0, as Kaggle counts a missing bid
        return Bid(bid=0)
    if ask.action == "reflect":
        return Reflection(reflection="")
    rng = random.Random(f"{seed}:fallback:{key}")
    target = None if ask.can_pass else rng.choice(ask.choices)
    return output_model(ask.action, ask.choices, ask.can_pass)(target=target)


async def play_game(config: GameConfig, run: Run | None = None, **kwargs: Any) -> GameResult:
    return await GameRunner(config, run, **kwargs).play()


@dataclass
class CapReport:
    """What stopped games of one ``play_games`` unfinished (no games row: a rerun plays them again): the seeds
    of games a spending cap kept from starting and of games it stopped, and of games a dead endpoint
    interrupted (``endpoint``: the line saying which endpoint and why)."""

    skipped: list[int] = field(default_factory=list)
    stopped: list[int] = field(default_factory=list)
    interrupted: list[int] = field(default_factory=list)
    endpoint: str | None = None

    @property
    def reached(self) -> bool:
        return bool(self.skipped or self.stopped)


class EventsNotKept(Sequence):
    """A result's events that ``play_games`` did not keep: they are in the run's ``events`` table. Reading them
    raises a LookupError that says so (never an empty list that would pass for a game without events)."""

    def _refuse(self, *args: Any) -> Any:
        raise LookupError("this game's events were not kept in memory: they are in the run's events table "
                          "(toolkit.record.load(run.folder).events); play_games(..., keep_results=True) keeps them")

    __getitem__ = __len__ = __iter__ = __contains__ = _refuse

    def __repr__(self) -> str:
        return "EventsNotKept()"


EVENTS_NOT_KEPT = EventsNotKept()


# Over 60 lines for its docstring (14 lines): the code is 51.
async def play_games(configs: Sequence[GameConfig], run: Run | None = None, concurrency: int = 32,
                     models: dict[str, Model] | None = None,
                     on_result: Callable[[GameResult], None] | None = None,
                     budget: Budget | None = None, cap: CapReport | None = None,
                     keep_results: bool | None = None) -> list[GameResult]:
    """Many games in one process, at most ``concurrency`` at once; model calls are capped per endpoint.
    ``concurrency`` workers take the configs in order, so memory holds the games in flight, not one task per
    game. What is returned: recorded into a ``run`` (by default), each game's result without its events (winner,
    roles, days, call totals: what a caller reads; the events are in the run's tables, and ``on_result`` sees
    them whole), so a study of 100,000 games does not hold 100,000 event logs (about 17 KB a game); without a run,
    every result whole (nowhere else holds them); ``keep_results=True`` every result whole either way,
    ``False`` nothing.

    With a ``budget`` (a spending cap, ``toolkit.llm.budget``) no game starts once a cap is reached, and
    games in flight stop unfinished (``at_cap="stop"``) or play to their end (``"finish"``); the games that
    did not play are left out of the returned list and counted in ``cap``. Before the first game a dollar cap
    checks that every model has a price (``BudgetError`` otherwise). An endpoint that dies
    (``toolkit.llm.health``) stops every game on it unfinished, and no game starts after it (``cap.interrupted``,
    ``cap.endpoint``)."""
    models = models if models is not None else {}
    revive(models.values())  # a new study asks its endpoints afresh
    gate = asyncio.Semaphore(concurrency)
    cap = cap if cap is not None else CapReport()
    if budget is not None:
        # the specs the games play: a name of the preset's models: block stands for its spec
        specs = {c.named(spec) for c in configs for spec in (c.model, *c.side_models.values())}
        specs |= {c.spec(seat) for c in configs for seat in c.seats}
        budget.check_prices(models.get(s) or models.setdefault(s, get_model(s)) for s in sorted(specs))

    async def one(config: GameConfig) -> GameResult | None:
        async with gate:
            if cap.endpoint is not None:  # an endpoint is down: the study stops, no game starts (a rerun plays it)
                cap.interrupted.append(config.seed)
                return None
            if budget is not None and budget.exhausted():
                cap.skipped.append(config.seed)
                return None
            with spending(budget):  # every paid call in the ledger before it is sent (toolkit.llm.budget)
                result = await GameRunner(config, run, models, budget=budget).play()
        if result.winner == "unfinished":
            cap.stopped.append(config.seed)
            return None
        if result.winner == "interrupted":
            cap.interrupted.append(config.seed)
            cap.endpoint = cap.endpoint or result.win_reason
            return None
        if on_result:
            on_result(result)
        if not whole:
            result.events = EVENTS_NOT_KEPT
        return result

    whole = keep_results if keep_results is not None else run is None
    keep_results = keep_results is not False
    results: list[GameResult | None] = [None] * len(configs) if keep_results else []
    todo = iter(enumerate(configs))  # shared: each worker takes the next config

    async def worker() -> None:
        for i, config in todo:
            result = await one(config)
            if keep_results:
                results[i] = result

    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(configs)))))
    return [r for r in results if r is not None]
