"""Games played with every prompt checked by the independent reader of ``tests.werewolf.completeness``: each seat's
backend is wrapped so that, before it answers, the prompt is read back against the game so far. Used by
tests/werewolf/test_game_record.py and benchmarks/ledger_completeness.py."""

from __future__ import annotations

from typing import Any

from toolkit.llm import Backend, Model
from toolkit.werewolf.engine.rules import PUBLIC
from toolkit.werewolf.game import GameRunner
from tests.werewolf.completeness import missing


class _Checking(Backend):
    """Wraps a seat's real backend: before answering, checks the request's prompt against the game so far
    (the rules apply a phase's decisions only after every answer is in, so the events are those the
    prompt was built from)."""

    def __init__(self, inner: Any, runner: Any, stats: dict[str, Any]):
        self.inner, self.runner, self.stats = inner, runner, stats
        self.model = inner.model
        self.free, self.roles = inner.free, inner.roles

    async def complete(self, request: Any) -> Any:
        game = self.runner.game
        prompt = request.messages[0]["content"]  # the prompt itself (later messages are re-asks)
        gaps = missing(prompt, game.events, roles=game.roles, phase=game.phase, shown_name=game.shown_name)
        public = sum(e.visibility == PUBLIC for e in game.events)
        self.stats["calls"] += 1
        self.stats["facts"] += public
        self.stats["missing"] += len(gaps)
        self.stats["complete_calls"] += not gaps
        self.stats["condensed_calls"] += "(condensed;" in prompt  # older votes there are kept without their day
        if gaps and len(self.stats["examples"]) < 5:
            self.stats["examples"].append((self.runner.game_id, request.replay_key, gaps[:3]))
        self.stats["chars"].append(sum(len(m["content"]) for m in request.messages))
        return await self.inner.complete(request)


def new_stats() -> dict[str, Any]:
    return {"calls": 0, "facts": 0, "missing": 0, "complete_calls": 0, "examples": [], "chars": [], "games": 0,
            "condensed_calls": 0}


async def check_games(configs: list[Any], stats: dict[str, Any] | None = None) -> dict[str, Any]:
    """Plays the games one after another, checking every call's prompt; returns the counts."""
    stats = stats if stats is not None else new_stats()
    models: dict[str, Any] = {}
    for config in configs:
        runner = GameRunner(config, models=models)
        for player in runner.players.values():
            player.model = Model(player.model.spec, _Checking(player.model.backend, runner, stats), player.model.config)
        await runner.play()
        stats["games"] += 1
    return stats
