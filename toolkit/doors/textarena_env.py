"""Werewolf as a TextArena environment, registered in TextArena's registry when this module is imported:
``Werewolf-v0`` (the ``classic7`` preset) and ``Werewolf-v0-<preset>`` for every shipped preset (the Game Arena
ones: ``kaggle7``, ``kaggle8``), each also as ``-train`` and ``-raw`` (TextArena's versions).

    import textarena as ta
    import toolkit.doors.textarena_env  # noqa: F401 (registers the environments)

    env = ta.make("Werewolf-v0")
    env.reset(num_players=7, seed=3)
    done = False
    while not done:
        player_id, observation = env.get_observation()
        done, info = env.step(my_agent(observation))
    rewards, game_info = env.close()

Player ids are 0-based seat indices (``Player1`` is 0). The observation of a turn is the seat's whole prompt, as
the toolkit gives it to a model seat (its ledger of the game so far, its private knowledge, the decision and the
JSON schema of an answer), so the default wrapper keeps only the current turn's (``SingleTurnObservationWrapper``).
An action is the answer a model writes: JSON of the schema, or TextArena's forms (``[Player3]`` or ``[2]`` for a
target, the text itself for a speech; ``toolkit.doors.actions.from_text``).

A bad action follows the field's rule: the player is told what was wrong and asked again (TextArena's error
allowance of one), then the toolkit's error policy applies (``error_policy``: ``fallback``, a seeded legal answer;
``forfeit``, Kaggle's; ``eliminate_after:N``, TextArena's elimination of a seat after N failed decisions). The
game never breaks. Rewards by side at the end: +1 for the winning side's seats, -1 for the others, 0 for a draw.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import textarena as ta
from textarena.envs.registration import ENV_REGISTRY, register_with_versions
from textarena.wrappers import ClipCharactersActionWrapper
from textarena.wrappers.ObservationWrappers.llm_observation_wrapper import SingleTurnObservationWrapper

from toolkit.doors import actions
from toolkit.doors.table import DOOR, Table
from toolkit.record.run_log import Run
from toolkit.werewolf.engine.preset import available_presets
from toolkit.werewolf.game import GameConfig


class _State:
    """What TextArena's wrappers read of an environment's state (its ``role_mapping``) and what its agents read
    (``current_player_id``, ``game_info``, ``rewards``, ``done``)."""

    def __init__(self, seats: list[str]):
        self.role_mapping = {**dict(enumerate(seats)), ta.GAME_ID: "GAME"}
        self.num_players = len(seats)
        self.current_player_id = 0
        self.game_info: dict[int, dict[str, Any]] = {pid: {"role": "hidden", "invalid_move": False, "turn_count": 0}
                                                     for pid in range(len(seats))}
        self.rewards: dict[int, float] | None = None
        self.done = False
        self.turn = 0


class WerewolfEnv(ta.Env):
    def __init__(self, preset: str = "classic7", config: GameConfig | None = None, run: Run | None = None,
                 error_policy: str | None = None):
        config = config if config is not None else GameConfig(preset=preset, model=DOOR)
        self.config = replace(config, error_policy=error_policy) if error_policy else config
        self.table = Table(self.config, run)
        self.table.release_with(self)
        self.preset = self.config.resolved_preset()
        self.seats = list(self.preset.seats)
        self.roles = tuple(sorted(self.preset.roles))
        self._seed = self.config.seed
        self.state = _State(self.seats)

    def reset(self, num_players: int, seed: int | None = None) -> None:
        if num_players != self.preset.n_players:
            raise ValueError(f"Werewolf ({self.preset.name}) seats {self.preset.n_players} players, not {num_players}:"
                             f" make another preset's variant (Werewolf-v0-<preset>: "
                             f"{', '.join(available_presets())})")
        if seed is not None:
            self._seed = seed
        self.table.reset(self._seed)
        self.game_seed, self._seed = self._seed, self._seed + 1
        self.state = _State(self.seats)
        self._take()

    def _take(self) -> None:
        request = self.table.current
        if request is None:
            self._finish()
            return
        self.state.current_player_id = self.seats.index(request.seat)

    def _finish(self) -> None:
        result, runner = self.table.result, self.table.runner
        self.state.done = True
        self.state.rewards = {pid: self.table.reward(seat) for pid, seat in enumerate(self.seats)}
        for pid, seat in enumerate(self.seats):
            self.state.game_info[pid].update(role=result.roles[seat], reason=result.win_reason,
                                             invalid_move=runner.errors.get(seat, 0) > 0)

    def get_observation(self) -> tuple[int, list[tuple[int, str, ta.ObservationType]]]:
        request = self.table.current
        if request is None:  # over (or closed): one message saying so, for the wrappers that read the first
            reason = self.table.result.win_reason if self.table.result else "the game is not being played"
            return self.state.current_player_id, [(ta.GAME_ID, f"The game is over ({reason}).",
                                                   ta.ObservationType.GAME_MESSAGE)]
        prompt = "\n\n".join(m["content"] if m["role"] != "assistant" else actions.clipped(m["content"])
                               for m in request.messages)  # a re-ask's echo of the bad answer, clipped
        return self.state.current_player_id, [(ta.GAME_ID, prompt, ta.ObservationType.PROMPT)]

    def step(self, action: str) -> tuple[bool, dict[str, Any]]:
        request = self.table.current
        if request is None:
            return True, {"reason": self.table.result.win_reason if self.table.result else "not started"}
        answer = actions.from_text(str(action), request.observation, self.seats)
        self.state.game_info[self.state.current_player_id]["turn_count"] += 1
        self.state.turn += 1
        self.table.answer(answer if isinstance(answer, str) else json.dumps(answer))
        self._take()
        return self.state.done, ({"reason": self.table.result.win_reason} if self.state.done else {})

    def close(self) -> tuple[dict[int, float] | None, dict[int, dict[str, Any]]]:
        self.table.close()
        return self.state.rewards, self.state.game_info

    @property
    def game(self):
        """The toolkit's game (``rules.Game``) being played."""
        return self.table.runner.game if self.table.runner is not None else None


def register() -> None:
    """Register ``Werewolf-v0`` and one variant per shipped preset (once per process)."""
    wrappers = {"default": [SingleTurnObservationWrapper],
                "-train": [SingleTurnObservationWrapper, ClipCharactersActionWrapper]}
    for env_id, preset in [("Werewolf-v0", "classic7"), *((f"Werewolf-v0-{p}", p) for p in available_presets())]:
        if env_id not in ENV_REGISTRY:
            register_with_versions(id=env_id, entry_point=WerewolfEnv, wrappers=wrappers, preset=preset)


register()
