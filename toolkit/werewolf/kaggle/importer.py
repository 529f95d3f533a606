"""Kaggle replays (``env.toJSON()`` files) as this toolkit's tables: each game's decisions are played through this
engine as a scripted game (its roles, the rules' draws, every decision in order) with the preset its configuration
means, so the games, players, events and calls tables are the toolkit's own and every analysis, rating, plot,
``replay`` and fork works on them. A seat's spec is ``kaggle:<agent_id>`` (the Kaggle agent in that seat).

Each replay is checked first (readable, rules this engine plays, the same eliminations, winner and final day
here as in Kaggle's game, model calls as Kaggle's harness writes them); a replay that fails is named with the
reason and nothing is written.

The calls table holds two kinds of rows for an imported game. The replay's own model calls (an LLM agent's
prompts and completions, ``toolkit.werewolf.kaggle.calls``), one row each, with the seat's spec
(``kaggle:<agent_id>``), the model its configuration names and Kaggle's token counts and price; a replay of
Kaggle's ``random`` agent has none. And one row per decision as this engine asked it, answered with the Kaggle
seat's decision (spec ``kaggle-decisions``, model ``scripted:<file>``, usage estimated): what ``toolkit replay``
and forks answer from. The games row counts the Kaggle calls only (``n_calls``, tokens, price): the model usage
of the Kaggle game."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from toolkit.core.files import FileError
from toolkit.core.secrets import redact_obj
from toolkit.record.rows import GameRow
from toolkit.werewolf.engine.preset import load_preset
from toolkit.werewolf.kaggle import calls as kaggle_calls
from toolkit.werewolf.kaggle import differential, replay


DECISIONS_SPEC = "kaggle-decisions"  # the calls rows of this engine's re-play, which replay and forks answer from


@dataclass
class Imported:
    path: Path
    game_id: str
    kg: replay.KaggleGame
    agents: dict[str, str]  # seat → Kaggle agent id
    calls: list[kaggle_calls.KaggleCall]  # the replay's model calls (none for Kaggle's random agent)


def _named(kg: replay.KaggleGame) -> replay.KaggleGame:
    """The shipped preset's name when the configuration is exactly kaggle7 or kaggle8."""
    for name in ("kaggle7", "kaggle8"):
        shipped = load_preset(name)
        if kg.preset.model_dump(exclude={"name"}) == shipped.model_dump(exclude={"name"}):
            kg.preset = shipped
    return kg


def check(folder: str | Path) -> list[Imported]:
    """Every replay of ``folder`` read and checked (``FileError`` names the first that fails)."""
    root = Path(folder)
    if not root.is_dir():
        raise FileError(f"{folder}: no such folder of Kaggle replays")
    files = sorted(root.glob("*.json"))
    if not files:
        raise FileError(f"{folder}: no Kaggle replay (*.json) in the folder")
    out = []
    for path in files:
        if not path.is_file():  # a FIFO or a device would block or never end the read
            raise FileError(f"{path}: not a regular file")
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict) or "info" not in data or "configuration" not in data:
                raise FileError(f"{path}: not a Kaggle replay (no info and configuration; env.toJSON() writes them)")
            kg = _named(replay.read(data))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise FileError(f"{path}: not JSON: {exc}") from None
        except replay.Unsupported as exc:
            raise FileError(f"{path}: a rule this engine does not play: {exc}") from None
        except (KeyError, StopIteration, TypeError) as exc:
            raise FileError(f"{path}: not a Kaggle werewolf replay ({type(exc).__name__}: {exc})") from None
        if kg.winner is None:
            raise FileError(f"{path}: the Kaggle game did not finish (no GAME_END)")
        try:
            differential.compare(kg)
        except differential.Divergence as exc:
            raise FileError(f"{path}: plays differently here: {exc}") from None
        try:
            calls = kaggle_calls.read(data, kg)
        except kaggle_calls.BadCall as exc:
            raise FileError(f"{path}: a model call Kaggle's harness does not write: {exc}") from None
        agents = {f"Player{i + 1}": a.get("agent_id") or "unknown"
                  for i, a in enumerate(kg.config.get("agents") or [])}
        out.append(Imported(path, f"kaggle-{data.get('id') or path.stem}", kg, agents, calls))
    return out


class _KaggleUsage:
    """The run as the engine's re-play writes to it: a games row gets the Kaggle game's model usage (its calls,
    tokens and price) instead of the re-play's, whose calls are this engine's prompts no model was sent."""

    def __init__(self, run: Any, usage: dict[str, dict[str, Any]]):
        self._run, self._usage = run, usage

    def write(self, row: Any) -> None:
        if isinstance(row, GameRow) and row.game_id in self._usage:
            row = replace(row, **self._usage[row.game_id])
        self._run.write(row)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._run, name)


def write(games: list[Imported], run: Any) -> list[Any]:
    """Plays each checked replay here into ``run`` (a ``toolkit.record.run_log.Run``) and writes its model calls;
    the results."""
    from toolkit.llm import Model, get_model
    from toolkit.werewolf.game import GameConfig, GameRunner, SeatConfig

    inputs = Path(run.folder) / "kaggle-inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    results = []
    usage = _KaggleUsage(run, {g.game_id: kaggle_calls.usage(g.calls) for g in games})
    for g in games:
        script = inputs / f"{g.path.stem}.yaml"
        # the seats' words and thoughts are a replay's text: masked with every key shape before they reach a file
        # or a table (the run log scans the calls and events for sk- keys only)
        scripted = redact_obj(replay.to_scripted(g.kg))
        script.write_text(yaml.safe_dump(scripted, sort_keys=False, allow_unicode=True))
        scripted_model = get_model(f"scripted:{script}")
        # one spec for every imported game's decision rows (the model column names the game's file): the
        # tables group calls by spec, and a spec per file made a row per game in each of them
        model = Model(DECISIONS_SPEC, scripted_model.backend, scripted_model.config)
        seats = {seat: SeatConfig(spec=f"kaggle:{g.agents.get(seat, 'unknown')}") for seat in g.kg.roles}
        config = GameConfig(preset=g.kg.preset, seed=int(g.kg.config.get("seed") or 0), seats=seats)
        runner = GameRunner(config, usage, game_id=g.game_id, seat_models={s: model for s in g.kg.roles})
        results.append(asyncio.run(runner.play()))
        for row in kaggle_calls.rows(g.calls, run_id=run.run_id, game_id=g.game_id, first_seq=runner.log.next_seq(),
                                     specs={s: c.spec for s, c in seats.items()}, config=g.kg.config):
            run.write(row)
    return results
