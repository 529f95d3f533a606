"""Werewolf as a verifiers (v1) environment: one episode is one game, played by one verifiers agent per seat.

    import verifiers.v1 as vf
    from toolkit.doors.verifiers_env import WerewolfEnv, WerewolfEnvConfig

    config = WerewolfEnvConfig(taskset={"id": TASKSET_ID, "preset": "classic7"}, players={"Player1": "heuristic"},
                               frozen=["Player2"])
    env = WerewolfEnv(config)
    async with env.serving():
        task = next(iter(env.taskset))               # seed 0; the n-th task is the game of seed ``seed + n``
        episode = await env.run_episode(task, vf.ModelContext(model="my-model", client=vf.EvalClientConfig(
            base_url="http://localhost:8000/v1", api_key_var="MY_KEY")))

- The taskset (``WerewolfTaskset``, id ``TASKSET_ID``) yields one task per seed: ``seed``, ``seed + 1``, ... of a
  preset (``classic7`` by default; every shipped preset). The game of a seed is the toolkit's own game of that
  seed: the same deal, the same offline players, the same events as ``play_games`` given the same answers.
- The environment declares one agent per seat, ``player1`` to ``player12`` (``--env.player3.model ...``); a game of
  a preset with n seats runs the first n. A seat named in ``players`` is played inside the game by the
  toolkit's player of that spec (``heuristic``, ``random``, ``mixed``, a model spec) and its agent never runs; every
  other seat is its agent: each of its decisions is one turn of the agent's interaction, whose user message is
  the seat's prompt as the toolkit gives it to a model seat (its view of the game, the decision, the JSON schema
  of an answer), and whose reply is parsed as the toolkit parses a model's (one re-ask with the error, as the
  next turn, then the seeded legal fallback and the preset's error policy). The game never breaks.
- ``setup`` marks untrainable the agents of the seats in ``frozen`` (a frozen model: it plays, its tokens are not
  training data) and of the offline seats.
- Rewards per seat, on each agent's trace: ``win``, +1 if the seat's side won, -1 if it lost, 0 for a draw.
  ``trace.info`` holds the seat, its role, the winner, the game's seed and id.

Every agent rides the in-process ``WerewolfHarness`` by default (a chat completion per turn through verifiers'
interception endpoint, the whole conversation of the seat so far; no program, no container, no download), on the
host (``runtime`` ``subprocess``), through one interception server on loopback (``interception`` ``server``):
verifiers' defaults, a Prime sandbox per agent and a Prime tunnel to an elastic pool of servers, need a Prime
account. The game runs in ``toolkit.doors.table.Table`` (the other doors' driver) in a thread of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import sys
import weakref
from typing import Any

import aiohttp
import verifiers.v1 as vf
from pydantic import Field, field_validator
from verifiers.v1.dialects.chat import message_to_wire
from verifiers.v1.interception import InterceptionConfig, InterceptionServerConfig

from toolkit.doors.table import DOOR, Table
from toolkit.llm import registry
from toolkit.llm.spec import parse_spec
from toolkit.record.run_log import Run
from toolkit.werewolf.engine.preset import available_presets
from toolkit.werewolf.game import GameConfig

__all__ = ["WerewolfTaskset", "WerewolfEnv", "WerewolfHarness"]

# verifiers finds the taskset, the environment and the harness by importing the taskset id as a module name, and
# cannot import a dotted one (it looks for ``verifiers.v1.tasksets.<id>`` first, whose parent fails): the id is an
# alias of this module, known once it is imported (``from toolkit.doors import verifiers_env``).
TASKSET_ID = "toolkit_werewolf"
sys.modules.setdefault(TASKSET_ID, sys.modules[__name__])
MAX_SEATS = 12  # the largest shipped preset (competitive12)
_ENDED: weakref.WeakSet = weakref.WeakSet()  # the interactions whose exchange is over (verifiers refuses a turn)
LOCAL = vf.AgentConfig(runtime=vf.SubprocessConfig())  # an agent on this host: no sandbox, no tunnel, no key


class WerewolfTasksetConfig(vf.TasksetConfig):
    preset: str = "classic7"
    """The shipped preset every game is played under (``toolkit.werewolf.available_presets()``)."""
    seed: int = 0
    """The first game's seed; the n-th task is the game of ``seed + n``."""


class WerewolfData(vf.TaskData):
    info: dict
    """The preset and the game's seed."""


class WerewolfTask(vf.Task[WerewolfData, vf.State, vf.TaskConfig]):
    pass


class WerewolfTaskset(vf.Taskset[WerewolfTask, WerewolfTasksetConfig]):
    INFINITE = True

    def load(self):
        preset = self.config.preset
        if preset not in available_presets():
            raise ValueError(f"no preset {preset!r}: the shipped ones are {', '.join(available_presets())}")
        for seed in itertools.count(self.config.seed):
            # No prompt: the game opens each seat's exchange with the seat's first decision.
            yield WerewolfTask(WerewolfData(name=f"werewolf-{preset}#{seed}", info={"preset": preset, "seed": seed}),
                               self.config.task)


class WerewolfHarnessConfig(vf.HarnessConfig):
    pass


class WerewolfHarness(vf.Harness[WerewolfHarnessConfig]):
    """One chat completion per turn, in process: the seat's conversation so far (``data.prompt`` on each resumed
    turn) goes to the interception endpoint, which records it on the trace and asks the agent's model."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, **_: Any) -> vf.ProgramResult:
        system, prompt = self.resolve_prompt(data)
        messages = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            messages.extend(message_to_wire(m) for m in prompt or [])
        body = {"model": ctx.model, "messages": messages}
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{endpoint.rstrip('/')}/chat/completions", json=body,
                                    headers={"Authorization": f"Bearer {secret}"}) as response:
                text = await response.text()
        if response.status != 200:
            return vf.ProgramResult(exit_code=1, stdout="", stderr=f"HTTP {response.status}: {text[:2000]}")
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")


class WerewolfEnvConfig(vf.EnvConfig):
    # Each seat's agent runs on the host (verifiers' default runtime is a Prime sandbox, which needs a Prime
    # account and a tunnel back to the interception server), and the interception is one local server on loopback.
    player1: vf.AgentConfig = LOCAL
    player2: vf.AgentConfig = LOCAL
    player3: vf.AgentConfig = LOCAL
    player4: vf.AgentConfig = LOCAL
    player5: vf.AgentConfig = LOCAL
    player6: vf.AgentConfig = LOCAL
    player7: vf.AgentConfig = LOCAL
    player8: vf.AgentConfig = LOCAL
    player9: vf.AgentConfig = LOCAL
    player10: vf.AgentConfig = LOCAL
    player11: vf.AgentConfig = LOCAL
    player12: vf.AgentConfig = LOCAL
    interception: InterceptionConfig = InterceptionServerConfig()
    players: dict[str, str] = Field(default_factory=dict)
    """Seats played inside the game by a toolkit player (``{"Player1": "heuristic"}``); their agents never run."""
    frozen: list[str] = Field(default_factory=list)
    """Seats whose agent plays but is not trained (``trainable = False``): a frozen model."""
    record: str | None = None
    """A results folder: the games are recorded there into one toolkit ``Run`` (``toolkit.record.load`` reads it)."""

    @field_validator("players", "frozen")
    @classmethod
    def _seats(cls, seats):
        """A seat is ``Player1`` .. ``Player12``; anything else would name no agent."""
        bad = [s for s in seats if not re.fullmatch(r"Player([1-9]|1[0-2])", s)]
        if bad:
            raise ValueError(f"not a seat: {', '.join(map(repr, bad))} (seats are Player1 to Player{MAX_SEATS})")
        return seats

    @field_validator("players")
    @classmethod
    def _specs(cls, players):
        """A seat's player is a spec the toolkit knows: a typo is said here, not in every episode's error."""
        for seat, spec in players.items():
            if registry.find(parse_spec(spec)[0]) is None:
                raise ValueError(f"{seat}: unknown model spec {spec!r}{registry.did_you_mean_spec(spec)}; use one "
                                 f"of: {registry.known_specs()}")
        return players


def agent_name(seat: str) -> str:
    """The agent of a seat: ``Player3`` → ``player3``."""
    return seat.lower()


class WerewolfEnv(vf.Env[WerewolfEnvConfig]):
    record: Run | None = None  # open while serving, when ``config.record`` names a folder

    async def start(self) -> None:
        if self.config.record is not None:
            self.record = Run(self.config.record, "verifiers-werewolf")

    async def stop(self) -> None:
        if self.record is not None:
            self.record.close()
            self.record = None

    async def setup(self, agents) -> None:
        for seat in [*self.config.frozen, *self.config.players]:
            getattr(agents, agent_name(seat)).trainable = False

    def game_config(self, task: WerewolfTask) -> GameConfig:
        return GameConfig(preset=task.data.info["preset"], model=DOOR, seats=dict(self.config.players))

    async def run(self, task: WerewolfTask, agents) -> None:
        table = Table(self.game_config(task), self.record)
        try:
            await asyncio.to_thread(table.reset, task.data.info["seed"])
            absent = [s for s in [*self.config.players, *self.config.frozen] if s not in table.runner.players]
            if absent:  # a seat the preset does not have would be ignored: a careless config is said, not dropped
                raise ValueError(f"{', '.join(absent)}: not a seat of {task.data.info['preset']} "
                                 f"({len(table.runner.players)} seats)")
            seats = table.door_seats()
            async with contextlib.AsyncExitStack() as stack:
                interactions = {seat: await stack.enter_async_context(
                    getattr(agents, agent_name(seat)).interaction(_seat_task(task, seat))) for seat in seats}
                while table.current is not None:
                    request = table.current
                    reply = await self.ask(interactions[request.seat], request)
                    await asyncio.to_thread(table.answer, reply)
            for seat, interaction in interactions.items():
                _score(interaction.trace, table, seat, task)
        finally:
            await asyncio.to_thread(table.close)

    async def ask(self, interaction, request) -> str:
        """One decision as one turn of the seat's interaction: the seat's prompt (a re-ask's error and the bad
        answer are its last user message) in, the reply's text out. Once the exchange has ended (a turn or token
        limit, the agent's endpoint failing), the seat's decisions get an empty answer without a turn: the game's
        rule for an answer it cannot read applies (the seeded legal fallback, the preset's error policy)."""
        if interaction in _ENDED:
            return ""
        segment = await interaction.turn(request.messages[-1]["content"] if _reask(request) else _prompt(request))
        if segment.terminated:
            _ENDED.add(interaction)
            return ""
        return segment.last_reply


def _seat_task(task: WerewolfTask, seat: str) -> WerewolfTask:
    return type(task)(task.data.model_copy(update={"prompt": None, "name": f"{task.data.name}/{seat}"}), task.config)


def _reask(request) -> bool:
    return any(m["role"] == "assistant" for m in request.messages)


def _prompt(request) -> str:
    """The seat's prompt as one user message (the toolkit's system and user messages, in order)."""
    return "\n\n".join(m["content"] for m in request.messages if m["role"] != "assistant")


def _score(trace, table: Table, seat: str, task: WerewolfTask) -> None:
    result = table.result
    trace.record_reward("win", table.reward(seat))
    trace.info.update(seat=seat, role=result.roles[seat] if result else None, winner=result.winner if result else None,
                      seed=task.data.info["seed"], game_id=result.game_id if result else None)
