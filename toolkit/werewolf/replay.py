"""Re-run a logged game from its recorded answers, exactly; or fork it at an event and let another
model continue from there (a counterfactual)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from toolkit.llm import Backend, Completion, Model, Request, get_model
from toolkit.llm.offline import ReplayBackend
from toolkit.record.run_log import Run
from toolkit.record.load import load, recorded_calls
from toolkit.werewolf.game import GameConfig, GameResult, GameRunner, SeatConfig
from toolkit.werewolf.engine.preset import Preset

EVENT_FIELDS = ("seq", "day", "phase", "kind", "actor", "target", "text", "visibility", "fallback")


class ForkBackend(Backend):
    """``before`` until ``switched()`` says so, then ``after``."""

    def __init__(self, before: Backend, after: Backend, switched: Callable[[], bool]):
        self.before, self.after, self.switched = before, after, switched

    @property
    def free(self) -> bool:
        return (self.after if self.switched() else self.before).free

    @property
    def model(self) -> str:
        return self.after.model if self.switched() else self.before.model

    async def complete(self, request: Request) -> Completion:
        return await (self.after if self.switched() else self.before).complete(request)


def recorded_game(results_dir: str | Path, game_id: str) -> tuple[dict[str, Any], list[tuple]]:
    results = load(results_dir)
    games = results.games[results.games["game_id"] == game_id]
    if games.empty:
        known = ", ".join(results.games["game_id"].astype(str).head(10))
        raise ValueError(f"no game {game_id!r} in {results_dir} (some games there: {known})")
    events = results.events[results.events["game_id"] == game_id].sort_values("seq")
    return json.loads(games.iloc[0]["config"]), [event_tuple(e) for e in events.to_dict("records")]


def event_tuple(e: Any) -> tuple:
    get = e.get if isinstance(e, dict) else lambda k: getattr(e, k)
    return tuple(None if (v := get(k)) is None or v != v else v for k in EVENT_FIELDS)  # NaN → None


async def replay_game(results_dir: str | Path, game_id: str, run: Run | None = None, fork_at: int | None = None,
                model: str | None = None, on_event=None) -> tuple[GameResult, list[tuple]]:
    """Returns the new game's result and the recorded events (to compare with)."""
    config, recorded = recorded_game(results_dir, game_id)
    seats = {s: SeatConfig(spec=c["spec"], reflection=c["reflection"], experience=c["experience"],
                           strategy=c.get("strategy"))
             for s, c in config["seats"].items()}
    game_config = GameConfig(preset=Preset.model_validate(config["preset"]), seed=config["seed"],
                             roles=config["roles"], draws=config.get("draws"), seats=seats, recent=config["recent"],
                             temperature=config.get("temperature"), reflect=config.get("reflect", "per_day"))
    replay = ReplayBackend(recorded_calls(results_dir, game_id), name=f"replay:{Path(results_dir).name}")
    spec = f"replay:{results_dir}"
    runner: GameRunner | None = None
    if fork_at is None:
        seat_model = Model(spec, replay)
    else:
        after = get_model(model or "heuristic")
        fork = ForkBackend(replay, after.backend, lambda: runner is not None and len(runner.game.events) >= fork_at)
        seat_model = Model(f"{spec}+{after.spec}", fork, after.config)
    runner = GameRunner(game_config, run, seat_models={s: seat_model for s in seats}, on_event=on_event,
                        game_id=f"{game_id}-{'replay' if fork_at is None else f'fork{fork_at}'}")
    return await runner.play(), recorded
