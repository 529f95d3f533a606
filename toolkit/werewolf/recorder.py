"""The werewolf recorder: one game's rows in the run log (the events as the rules emit them, the beliefs of each
reflection, the players and games rows once the game ends). ``GameRunner`` drives the game and hands what
happened to its recorder; each model call is written by its action (``toolkit.record.run_log.CallLog``).
The tables and their columns: docs/tables.md.
"""

from __future__ import annotations

import json
from typing import Any

from toolkit.record.rows import BeliefRow, EventRow, GameRow, PlayerRow
from toolkit.record.run_log import CallLog, Run
from toolkit.werewolf.engine.rules import Event, Game, side_of
from toolkit.werewolf.seat.decisions import Reflection


def belief_rows(value: Reflection, **context: Any) -> list[BeliefRow]:
    """Rows for the ``beliefs`` table: one per belief, with the caller's context (game_id, seq, day, phase,
    seat, call_id)."""
    return [BeliefRow(**context, about=b.about, guessed_role=b.role, confidence=float(b.confidence))
            for b in value.beliefs]


class GameRecorder:
    """Writes one game's rows to ``run`` (nothing without a run)."""

    def __init__(self, run: Run | None, game_id: str):
        self.run = run
        self.game_id = game_id
        self.n_events = 0  # events rows written: the games row says how many, so a truncated log shows

    def events(self, events: list[Event]) -> None:
        if self.run is None:
            return
        self.n_events += len(events)
        self.run.write_all([EventRow(game_id=self.game_id, seq=e.seq, day=e.day, phase=e.phase, kind=e.kind,
                                     actor=e.actor, target=e.target, text=e.text, visibility=e.visibility,
                                     fallback=e.fallback) for e in events])

    def beliefs(self, value: Reflection, game: Game, seat: str, call_id: str | None) -> None:
        """The beliefs of one reflection, placed at the moment it was made (the next event's seq)."""
        if self.run is None:
            return
        for row in belief_rows(value, game_id=self.game_id, seq=len(game.events), day=game.day, phase=game.phase,
                               seat=seat, call_id=call_id):
            self.run.write(row)

    def finish(self, game: Game, players: dict[str, Any], preset: str, winner: str, reason: str, log: CallLog,
               wall_s: float, config: dict[str, Any], errors: dict[str, int] | None = None,
               error_policy: str | None = None, degraded: str | None = None, on_endpoint_failure: str | None = None,
               endpoint_fallbacks: int | None = None) -> None:
        """The players rows (one per seat) and the games row. ``players``: {seat: Player}; ``config``: what a
        replay needs to set the game up again; ``errors``: failed decisions per seat; ``error_policy``: the
        policy the game was played under; ``degraded``: the seats whose decisions were mostly not their model's,
        and why (None: none); ``on_endpoint_failure`` and ``endpoint_fallbacks``: what the endpoint's failures
        did, and how many decisions fell back for them."""
        if self.run is None:
            return
        for seat, p in players.items():
            day, cause = game.deaths.get(seat, (None, None))
            self.run.write(PlayerRow(
                game_id=self.game_id, seat=seat, role=p.role, side=side_of(p.role), spec=p.config.spec,
                reflection=p.config.reflection, experience=p.config.experience, strategy=p.config.strategy,
                survived=seat in game.alive, death_day=day, death_cause=cause,
                errors=(errors or {}).get(seat)))
        self.run.write(GameRow(
            game_id=self.game_id, run_id=self.run.run_id, seed=game.seed, preset=preset, winner=winner,
            win_reason=reason, days=game.day, n_calls=log.calls, prompt_tokens=log.prompt_tokens,
            completion_tokens=log.completion_tokens, cost_usd=log.cost_usd, n_fallbacks=log.fallbacks,
            wall_s=round(wall_s, 4), config=json.dumps(config), n_events=self.n_events, error_policy=error_policy,
            degraded=degraded is not None, degraded_why=degraded, on_endpoint_failure=on_endpoint_failure,
            endpoint_fallbacks=endpoint_fallbacks))
