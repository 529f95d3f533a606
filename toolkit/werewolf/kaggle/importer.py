"""Kaggle replays (``env.toJSON()`` files) as this toolkit's tables: each game's decisions are played through this
engine as a scripted game (its roles, the rules' draws, every decision in order) with the preset its configuration
means, so the games, players, events and calls tables are the toolkit's own and every analysis, rating, plot,
``replay`` and fork works on them. A seat's spec is ``kaggle:<agent_id>`` (the Kaggle agent in that seat).

Each replay is checked first (readable, rules this engine plays, the same eliminations, winner and final day
here as in Kaggle's game); a replay that fails is named with the reason and nothing is written. The calls hold
this engine's prompts with the Kaggle seat's answers (the replay's own prompts and completions are not read)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from toolkit.core.files import FileError
from toolkit.werewolf.engine.preset import load_preset
from toolkit.werewolf.kaggle import differential, replay


@dataclass
class Imported:
    path: Path
    game_id: str
    kg: replay.KaggleGame
    agents: dict[str, str]  # seat → Kaggle agent id


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
        agents = {f"Player{i + 1}": a.get("agent_id") or "unknown"
                  for i, a in enumerate(kg.config.get("agents") or [])}
        out.append(Imported(path, f"kaggle-{data.get('id') or path.stem}", kg, agents))
    return out


def write(games: list[Imported], run: Any) -> list[Any]:
    """Plays each checked replay here into ``run`` (a ``toolkit.record.run_log.Run``); the results."""
    from toolkit.llm import get_model
    from toolkit.werewolf.game import GameConfig, GameRunner, SeatConfig

    inputs = Path(run.folder) / "kaggle-inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    results = []
    for g in games:
        script = inputs / f"{g.path.stem}.yaml"
        script.write_text(yaml.safe_dump(replay.to_scripted(g.kg), sort_keys=False, allow_unicode=True))
        model = get_model(f"scripted:{script}")
        seats = {seat: SeatConfig(spec=f"kaggle:{g.agents.get(seat, 'unknown')}") for seat in g.kg.roles}
        config = GameConfig(preset=g.kg.preset, seed=int(g.kg.config.get("seed") or 0), seats=seats)
        runner = GameRunner(config, run, game_id=g.game_id, seat_models={s: model for s in g.kg.roles})
        results.append(asyncio.run(runner.play()))
    return results
