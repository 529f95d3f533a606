"""Werewolf as a PettingZoo AEC environment: one agent per door seat (``toolkit.doors.table``), the toolkit's own
game underneath.

    from toolkit.doors.pettingzoo_env import WerewolfAEC

    env = WerewolfAEC("classic7")                     # every seat an agent; GameConfig(...) for more
    env.reset(seed=7)
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        env.step(None if terminated else env.action_space(agent).sample(obs["action_mask"]))

- ``agent_selection`` is the seat whose decision the rules wait for. Decisions the rules take together (a night's
  independent actions, a secret vote) are asked one agent after another, each observing the state before any of
  them is applied, and applied together in the rules' order when the last is in: what PettingZoo's AEC form
  does with simultaneous moves.
- The observation is ``{"observation": vector, "action_mask": mask}`` (``toolkit.doors.features``,
  ``toolkit.doors.actions``); ``infos[agent]`` holds the seat's own view as the toolkit gives it to a model seat:
  ``view`` (the observation dict), ``prompt`` (the rendered prompt text), ``schema`` (the JSON schema of a legal
  answer) and ``request`` (the whole request, for an offline player: ``toolkit.doors.offline``).
- The action is a discrete index (masked); ``step`` also takes the toolkit's answer as a dict (``{"speech":
  "..."}``) or, for a speech, its text. An action the mask or the schema refuses raises ``IllegalAction`` and
  changes nothing (``invalid="raise"``); with ``invalid="rules"`` it goes to the game as an answer, and the
  toolkit's rule for a bad answer applies (one re-ask of the same agent with the error in its prompt, then the
  seeded legal fallback and the preset's error policy: fallback, forfeit, eliminate_after:N).
- Rewards come at the end, by side: +1 for a seat of the winning side, -1 for the losing side, 0 for a draw. A
  dead seat stays an agent (never selected) until the game ends: its side may still win.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from toolkit.doors import actions, features
from toolkit.doors.table import DOOR, DoorClosed, Table
from toolkit.record.run_log import Run
from toolkit.werewolf.game import GameConfig

INVALID = ("raise", "rules")


class WerewolfAEC(AECEnv):
    metadata = {"name": "werewolf_v0", "render_modes": ["ansi"], "is_parallelizable": False}

    def __init__(self, config: GameConfig | str = "classic7", run: Run | None = None,
                 actions_through: tuple[str, ...] | None = None, others: str = "heuristic",
                 invalid: str = "raise", render_mode: str | None = None):
        super().__init__()
        if invalid not in INVALID:
            raise ValueError(f"invalid must be one of {', '.join(INVALID)}, not {invalid!r}")
        config = GameConfig(preset=config, model=DOOR) if isinstance(config, str) else config
        self.table = Table(config, run, actions_through, others)
        self.table.release_with(self)
        self.invalid, self.render_mode = invalid, render_mode
        preset = config.resolved_preset()
        self.preset = preset
        self.seats = list(preset.seats)
        self.role_names = sorted(preset.roles)
        self.possible_agents = list(self.seats)
        n_features = features.size(self.seats, self.role_names)
        n = actions.n_actions(self.seats)
        self.observation_spaces = {a: spaces.Dict({
            "observation": spaces.Box(0.0, 1.0, (n_features,), np.float32),
            "action_mask": spaces.Box(0, 1, (n,), np.int8)}) for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(n) for a in self.possible_agents}
        self._seed = config.seed
        self._obs: dict[str, dict[str, np.ndarray]] = {}
        self._shown = 0
        self.agents: list[str] = []

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ episodes
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """A new game: ``seed`` is the game's seed (the same as ``play_games``'s); without one, the seed after the
        last game's."""
        if seed is not None:
            self._seed = seed
        self.table.reset(self._seed)
        self.game_seed, self._seed = self._seed, self._seed + 1
        self.agents = self.table.door_seats()
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self._obs = {a: self._blank() for a in self.agents}
        self._shown = 0
        self._take()

    def _blank(self) -> dict[str, np.ndarray]:
        space = self.observation_spaces[self.possible_agents[0]]
        return {"observation": np.zeros(space["observation"].shape, np.float32),
                "action_mask": np.zeros(space["action_mask"].shape, np.int8)}

    def _take(self) -> None:
        """Point at the decision the game waits for now, or end the episode."""
        request = self.table.current
        if request is None:
            for a in self.agents:
                self.rewards[a] = self.table.reward(a)
                self.terminations[a] = True
                self.infos[a] = {"winner": self.table.result.winner, "win_reason": self.table.result.win_reason,
                                 "role": self.table.result.roles[a], "game_id": self.table.result.game_id}
            self._accumulate_rewards()
            if self.agents:
                self.agent_selection = self.agents[0]
            return
        view = request.observation
        self.agent_selection = request.seat
        self._obs[request.seat] = {
            "observation": features.vector(view, self.seats, self.role_names, self.preset.max_days),
            "action_mask": actions.mask(view, self.seats)}
        self.infos[request.seat] = {"view": view, "prompt": "\n\n".join(m["content"] for m in request.messages),
                                    "schema": request.schema, "request": request}

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        return self._obs.get(agent) or self._blank()

    # ------------------------------------------------------------------ a decision
    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations.get(agent) or self.truncations.get(agent):
            self._was_dead_step(action)
            return
        if self.table.current is None:
            raise DoorClosed("no decision is waiting: the environment was closed or its game ended; call reset()")
        text = self._answer(action, self.table.current)
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        self.table.answer(text)
        self._take()

    def _answer(self, action: Any, request: Any) -> str:
        """The answer text an action stands for; under ``invalid="raise"`` an illegal one is refused here."""
        view = request.observation
        if isinstance(action, np.ndarray) and action.size == 1 and np.issubdtype(action.dtype, np.integer):
            action = action.item()  # a policy's predict() on one observation: a 0-d or one-element array
        if isinstance(action, (int, np.integer)):
            answer = actions.from_index(int(action), view, self.seats)
            if self.invalid == "raise" and not self._obs[request.seat]["action_mask"][int(action)]:
                legal = [int(i) for i in np.flatnonzero(self._obs[request.seat]["action_mask"])]
                raise actions.IllegalAction(f"{request.seat} cannot take action {int(action)} ({json.dumps(answer)}) "
                                            f"for {view['action']}: the mask allows {legal}")
        elif isinstance(action, str) and view["action"] == "speak":
            answer = {"speech": action}
        elif isinstance(action, dict):
            answer = action
        else:
            raise actions.IllegalAction(f"{request.seat}: an action is an index of the action space, a dict of the "
                                        f"answer's fields or a speech's text, not {type(action).__name__}")
        if self.invalid == "raise" and view["action"] != "reflect":
            actions.check(answer, view, tuple(self.role_names))
        return json.dumps(answer)

    # ------------------------------------------------------------------ looking at it
    def render(self) -> str | None:
        """The events since the last render, one line each (the moderator's view: every event)."""
        if self.render_mode is None or self.table.runner is None:
            return None
        events = self.table.runner.game.events[self._shown:]
        self._shown += len(events)
        return "".join(f"[day {e.day} {e.phase}] {e.text}\n" for e in events)

    def close(self) -> None:
        self.table.close()

    @property
    def game(self):
        """The toolkit's game (``rules.Game``) being played: its events, roles and winner, for analysis."""
        return self.table.runner.game if self.table.runner is not None else None


def env(**kwargs: Any) -> WerewolfAEC:
    """PettingZoo's conventional constructor."""
    return WerewolfAEC(**kwargs)
