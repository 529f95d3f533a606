"""Kaggle replays (``env.toJSON()`` files) as this toolkit's tables: each game's decisions are played through this
engine as a scripted game (its roles, the rules' draws, every decision in order) with the preset its configuration
means, so the games, players, events and calls tables are the toolkit's own and every analysis, rating, plot,
``replay`` and fork works on them. A seat's spec is ``kaggle:<agent_id>`` (the Kaggle agent in that seat).

Each replay is checked first (strict JSON, nested at most ``MAX_DEPTH`` deep, the shape ``ReplayShape`` says:
an integer seed, a mapping of info, a moderator log of entries; rules this engine plays; the same eliminations,
winner and final day here as in Kaggle's game; model calls as Kaggle's harness writes them); a replay that fails
is named with the reason in one line and nothing is written. A replay given twice (the same Kaggle game id and
content, in two files or already imported under the results folder) is imported once; two different replays
with one id in one folder are refused. Each import's run folder keeps every replay's content digest
(``kaggle-replays.json``): a replay whose game id is imported already with other content is left out with a
warning naming both.

The calls table holds two kinds of rows for an imported game. The replay's own model calls (an LLM agent's
prompts and completions, ``toolkit.werewolf.kaggle.calls``), one row each, with the seat's spec
(``kaggle:<agent_id>``), the model its configuration names and Kaggle's token counts and price; a replay of
Kaggle's ``random`` agent has none. And one row per decision as this engine asked it, answered with the Kaggle
seat's decision (spec ``kaggle-decisions``, model ``scripted:<file>``, usage estimated): what ``toolkit replay``
and forks answer from. The games row counts the Kaggle calls only (``n_calls``, tokens, price): the model usage
of the Kaggle game."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, field_validator

from toolkit.core.files import FileError, explain, one_line
from toolkit.core.secrets import redact_obj
from toolkit.record.rows import GameRow
from toolkit.werewolf.engine.preset import load_preset
from toolkit.werewolf.kaggle import calls as kaggle_calls
from toolkit.werewolf.kaggle import differential, replay


DECISIONS_SPEC = "kaggle-decisions"  # the calls rows of this engine's re-play, which replay and forks answer from


MAX_DEPTH = 64  # env.toJSON() nests 8 deep; a deeper file is not a replay (and would exhaust the parser's stack)


@dataclass
class Imported:
    path: Path
    game_id: str
    kg: replay.KaggleGame
    agents: dict[str, str]  # seat → Kaggle agent id
    calls: list[kaggle_calls.KaggleCall]  # the replay's model calls (none for Kaggle's random agent)
    digest: str = ""  # of the replay's content: the same game given twice is imported once


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Entry(_Open):
    data_type: StrictStr | None = None
    json_str: StrictStr | None = None

    @field_validator("json_str")
    @classmethod
    def _an_object(cls, text: str | None) -> str | None:
        if text is not None and not isinstance(strict_json(text), dict):
            raise ValueError("must hold a JSON object")
        return text


class _Agent(_Open):
    agent_id: StrictStr | None = None
    display_name: StrictStr | None = None


class _Configuration(_Open):
    seed: StrictInt | None = Field(None, ge=-(2**63), lt=2**63)
    agents: list[_Agent] = []


class _Info(_Open):
    MODERATOR_OBSERVATION: list[list[_Entry]]
    GAME_END: dict[str, Any] | None = None


class ReplayShape(_Open):
    """What the importer reads of ``env.toJSON()``, with its types (anything else may be there)."""

    id: StrictStr | None = None
    configuration: _Configuration
    info: _Info


STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
BRACKETS = re.compile(r"[\[\]{}]")


def _refuse(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def strict_json(text: str) -> Any:
    """JSON as the standard has it: ``NaN`` and ``Infinity`` refused (Python's reader takes them), and nothing
    nested deeper than ``MAX_DEPTH`` (a ValueError; Python's reader would exhaust its stack)."""
    depth = 0
    for bracket in BRACKETS.findall(STRINGS.sub("", text)):  # the brackets outside strings
        depth += 1 if bracket in "[{" else -1
        if depth > MAX_DEPTH:
            raise ValueError(f"nested more than {MAX_DEPTH} deep")
    return json.loads(text, parse_constant=_refuse)


def _read(path: Path) -> replay.KaggleGame:
    """One replay file read and shape-checked (``FileError`` naming it for anything wrong)."""
    try:
        data = strict_json(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise FileError(f"{path}: not JSON: {one_line(exc, 200)}") from None
    if not isinstance(data, dict) or "info" not in data or "configuration" not in data:
        raise FileError(f"{path}: not a Kaggle replay (no info and configuration; env.toJSON() writes them)")
    try:
        ReplayShape.model_validate(data)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        why = re.sub(r" or instance of \w+", "", explain(exc, ReplayShape))  # the class names are ours, not the file's
        raise FileError(f"{path}: not a Kaggle werewolf replay: {why}") from None
    return data


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
        data = _read(path)
        try:
            kg = _named(replay.read(data))
        except replay.Unsupported as exc:
            raise FileError(f"{path}: a rule this engine does not play: {exc}") from None
        except (FileError, MemoryError):
            raise
        except Exception as exc:  # whatever else its contents make the reader trip on: the file is the problem
            raise FileError(f"{path}: not a Kaggle werewolf replay ({type(exc).__name__}: "
                            f"{one_line(exc, 200)})") from None
        if kg.winner is None:
            raise FileError(f"{path}: the Kaggle game did not finish (no GAME_END)")
        try:
            differential.compare(kg)
            calls = kaggle_calls.read(data, kg)
        except differential.Divergence as exc:
            raise FileError(f"{path}: plays differently here: {exc}") from None
        except kaggle_calls.BadCall as exc:
            raise FileError(f"{path}: a model call Kaggle's harness does not write: {exc}") from None
        except (FileError, MemoryError):
            raise
        except Exception as exc:
            raise FileError(f"{path}: not a Kaggle werewolf replay ({type(exc).__name__}: "
                            f"{one_line(exc, 200)})") from None
        agents = {f"Player{i + 1}": a.get("agent_id") or "unknown"
                  for i, a in enumerate(kg.config.get("agents") or [])}
        digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
        out.append(Imported(path, f"kaggle-{data.get('id') or path.stem}", kg, agents, calls, digest))
    return out


DIGESTS = "kaggle-replays.json"  # in an import's run folder: game id → the replay's file name and content digest


def _digests(folder: str | Path) -> dict[str, Any]:
    """A run's ``DIGESTS``; {} for a run imported before digests were kept (no such file). Anything else there (a
    folder, a FIFO, whose read would never end, text that is not a JSON mapping) is a ``FileError``: that run's
    games could not be compared with the replays."""
    path = Path(folder) / DIGESTS
    if not path.exists() and not path.is_symlink():
        return {}
    if not path.is_file():
        raise FileError(f"{path}: not a regular file (an import keeps its replays' digests there); remove it")
    try:
        digests = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise FileError(f"{path}: not JSON: {one_line(exc, 200)}") from None
    if not isinstance(digests, dict):
        raise FileError(f"{path}: not a mapping of game ids to replays' digests")
    return digests


def imported_ids(out: str | Path) -> dict[str, tuple[str, str | None]]:
    """The Kaggle games already imported under a results folder: game id → (its run folder, the digest of the
    replay imported; None for a run written before digests were kept)."""
    from toolkit.record.load import read_table, run_folders

    found: dict[str, tuple[str, str | None]] = {}
    for folder in run_folders(out) if Path(out).is_dir() else []:
        games = read_table(folder, "games")
        if games is not None and "game_id" in games:
            digests = _digests(folder)
            for gid in games["game_id"]:
                if isinstance(gid, str) and gid.startswith("kaggle-"):
                    entry = digests.get(gid)
                    found.setdefault(gid, (str(folder), entry.get("sha256") if isinstance(entry, dict) else None))
    return found


def once(games: list[Imported], imported: dict[str, tuple[str, str | None]]
         ) -> tuple[list[Imported], list[str], list[str]]:
    """The games to import: a replay given twice (the same game id and content, in two files, or already in
    ``imported``, game id → (where, digest)) only once. Returns (games, one note per replay left out, one warning
    per replay left out whose id is imported already with other content: the imported game is kept); two
    different replays with one id in the folder are a ``FileError``."""
    first: dict[str, Imported] = {}
    kept, notes, warnings = [], [], []
    for g in games:
        if g.game_id in first:
            if first[g.game_id].digest != g.digest:
                raise FileError(f"{g.path} and {first[g.game_id].path}: two different replays with the game id "
                                f"{g.game_id}; import them from different folders or remove one")
            notes.append(f"{g.path.name} is the same game as {first[g.game_id].path.name} ({g.game_id}): "
                         "imported once")
            continue
        first[g.game_id] = g
        if g.game_id in imported:
            where, digest = imported[g.game_id]
            if digest is not None and digest != g.digest:
                warnings.append(f"{g.path.name} ({g.game_id}) DIFFERS from the replay of that game id imported in "
                                f"{where}: the imported game is kept and this replay is left out (remove that run, "
                                "or import into another --out, to import this one)")
            else:
                notes.append(f"{g.path.name} ({g.game_id}) is already imported in {where}: left out"
                             + (" (imported before replays' digests were kept: its content is not compared)"
                                if digest is None else ""))
            continue
        kept.append(g)
    return kept, notes, warnings


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
    # what a later import compares a replay of the same game id with (imported_ids)
    (Path(run.folder) / DIGESTS).write_text(json.dumps(
        {g.game_id: {"file": g.path.name, "sha256": g.digest} for g in games}, indent=1, sort_keys=True) + "\n",
        encoding="utf-8")
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
