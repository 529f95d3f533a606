"""Shards: a werewolf cell of many games split into runs of consecutive seeds that any worker may play.

A cell of ``n_games`` games seeded ``seed ..`` is cut every ``shard_games`` seeds. Each shard is one papermill
execution of the cell's own notebook with its slice of seeds (``n_games``, ``seed``) and its own folder
``<cell>/shards/<k>/`` (its executed notebook, its run with every prompt and response, its ``DONE.json``), so
shards of one cell run at once on different workers. The cell's folder holds them all: ``load(cell)`` reads the
shards' runs as one cell (their parameters differ only in ``seed``, ``n_games`` and ``results_dir``, which are
never conditions), and the cell is done (its own ``DONE.json``) when every shard is. A rerun runs only the shards
not done, and each of those plays only its missing games. The cut is written in ``<cell>/shards.json`` before
the first shard runs and kept by every rerun (a rerun with another ``shard_games`` still cuts where the first
did), and a cell that already holds games played whole (before shards existed) is played whole again: its
recorded games are never played twice.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from toolkit.record.load import run_folders

Cell = Any  # a sweep's cell (toolkit.study.sweep.Cell, which imports this module)

# A cell (or a shard) the study never started (a dead endpoint stopped it first): not done, not failed either.
NOT_STARTED = {"ok": False, "error": "not started", "not_started": True}
SHARD_GAMES = 1_000  # ~75 s of heuristic games a shard: a kernel's start (a few seconds) is a small part of it
SHARDED = {"preset", "n_games", "seed", "seats", "results_dir"}  # a notebook that takes these plays seeded games


def shardable(cell: Cell, known: set[str]) -> bool:
    """Whether the cell's games can be split: its notebook plays seeded games (``SHARDED``) and they do not learn
    from each other (``experience``: a pool each game adds to, in the order they are played)."""
    return SHARDED <= known and not cell.parameters.get("experience")


def cut(cell: Cell, shard_games: int) -> list[tuple[int, int]]:
    """The cell's shards as (first seed, games): the cut recorded in its folder, else every ``shard_games``
    seeds (recorded now). One shard, the cell whole, when the cell's folder holds games played before it was
    cut."""
    seed, n = int(cell.parameters.get("seed", 0)), int(cell.parameters["n_games"])
    folder = Path(cell.folder)
    record = folder / "shards.json"
    if record.exists():
        shard_games = int(json.loads(record.read_text())["shard_games"])
    elif folder.exists() and run_folders(folder):
        return [(seed, n)]  # played whole before: played whole again (its finished seeds are skipped)
    if n <= shard_games:
        return [(seed, n)]
    folder.mkdir(parents=True, exist_ok=True)
    if not record.exists():
        record.write_text(json.dumps({"shard_games": shard_games}))
    return [(s, min(shard_games, seed + n - s)) for s in range(seed, seed + n, shard_games)]


def shards(cell: Cell, shard_games: int) -> list[Cell]:
    """The cell's shards, each a cell of its own (``cell_id`` ``<cell>/shard<k>``) in ``<cell>/shards/<k>/``;
    ``[cell]`` when it is not cut."""
    pieces = cut(cell, shard_games)
    if len(pieces) == 1:
        return [cell]
    out = []
    for k, (seed, n) in enumerate(pieces):
        folder = str(Path(cell.folder) / "shards" / f"{k:05d}")
        out.append(replace(cell, cell_id=f"{cell.cell_id}/shard{k}", folder=folder,
                           parameters={**cell.parameters, "seed": seed, "n_games": n, "results_dir": folder}))
    return out


def cell_status(cell: Cell, parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The cell's status from its shards' (each ``execute_cell``'s): ok when every shard is, capped when one is,
    the first failed shard's error, the shards' wall time summed; written as the cell's ``DONE.json`` when ok.
    ``not_started`` when no shard of it failed but some were never started (``NOT_STARTED``): its error is
    ``not started`` when none was."""
    if len(parts) == 1 and parts[0]["cell_id"] == cell.cell_id:
        return parts[0]
    failed = [p for p in parts if not p.get("ok")]
    status = {**parts[0], "cell_id": cell.cell_id, "ok": not failed, "capped": any(p.get("capped") for p in parts),
              "error": None, "wall_s": round(sum(p.get("wall_s") or 0 for p in parts), 2), "shards": len(parts),
              "where": sorted({p["where"] for p in parts if p.get("where")}),
              "endpoint": next((p["endpoint"] for p in parts if p.get("endpoint")), None),  # a dead endpoint's line
              "not_started": bool(failed) and all(p.get("not_started") for p in failed)}
    if failed and len(failed) == len(parts) and status["not_started"]:
        status["error"] = NOT_STARTED["error"]
    elif failed:
        first = next((p for p in failed if not p.get("capped") and not p.get("not_started")), failed[0])
        status["error"] = f"{len(failed)} of {len(parts)} shards not done; {first['cell_id']}: {first.get('error')}"
    else:
        (Path(cell.folder) / "DONE.json").write_text(json.dumps(status))
    return status
