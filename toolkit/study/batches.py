"""Batches: an adaptive tournament's round handed out to workers, the decision kept in the coordinator.

The coordinator (the process running ``toolkit.study.adaptive.run_adaptive``) writes a round's games in
``schedule.parquet`` before any of them plays, cuts the round into batches of at most ``batch_games`` games (a
side-swapped pair's two games, as the sequential test pairs them, never split), and gives each
batch to any worker (local processes, or a Dask cluster's workers). A worker plays its batch's missing games
into ``<round's cell>/batch<k>/`` and reports only how many it played and whether a spending cap stopped it; the
results are read back from the record. Only the coordinator reads the games, updates the sequential test and
decides, so adding workers changes nothing in the statistics: the games and their seeds are those of the
schedule, whoever plays them.

Killing a worker loses its games in flight (Dask gives the batch to another worker, which plays the batch's
missing games); killing the coordinator loses nothing recorded (a rerun finishes the round from the schedule). A
batch's lock keeps two workers (an orphan of a killed coordinator and a rerun's) from playing the same games.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pandas as pd

BATCH_GAMES = 8  # a few side-swapped pairs, as Fishtest hands out: a round of 60 games keeps 7 workers busy


def batches(rows: pd.DataFrame, batch_games: int = BATCH_GAMES) -> list[list[int]]:
    """A round's seeds (``rows``: its schedule rows, one per seat per game) in batches of at most ``batch_games``
    games, a side-swapped pair's two games in one batch (``pairs``), in the order of their first seeds."""
    out: list[list[int]] = []
    for unit in pairs(rows):
        if out and len(out[-1]) + len(unit) <= max(batch_games, len(unit)):
            out[-1] += unit
        else:
            out.append(list(unit))
    return out


def pairs(rows: pd.DataFrame) -> list[list[int]]:
    """A round's games as side-swapped pairs, as the sequential test pairs them: the schedule's ``pair`` column
    where it has one, else the k-th game (in seed order) of A's village against B's wolves with the k-th of B's
    village against A's wolves, per preset; a game with no partner (self-play, or one side's extra games)
    alone. Sorted by first seed."""
    games = rows.drop_duplicates("seed").sort_values("seed")
    if "pair" in games.columns:
        return sorted(([int(s) for s in g] for _, g in games.groupby("pair", sort=False)["seed"]), key=min)
    by: dict[tuple[str, str, str], list[int]] = {}
    for preset, matchup, seed in zip(games["preset"], games["matchup"], games["seed"]):
        village, wolves = str(matchup).split(" vs ")
        by.setdefault((str(preset), village, wolves), []).append(int(seed))
    units: list[list[int]] = []
    for (preset, v, w), seeds in by.items():
        if v < w and (preset, w, v) in by:  # each unordered pair once, from the side named first
            other = by[(preset, w, v)]
            units += [[a, b] for a, b in zip(seeds, other)] + [[s] for s in seeds[len(other):] + other[len(seeds):]]
        elif v == w or (preset, w, v) not in by:
            units += [[s] for s in seeds]
    return sorted(units, key=min)


def play_batch(results_dir: str, schedule: str, cell: str, seeds: list[int], limits: str | None = None,
               plugins: tuple[str, ...] = (), **options: Any) -> dict[str, Any]:
    """On a worker: play the batch's seeds not finished anywhere in the round's cell folder (``results_dir``)
    into its own folder ``results_dir/batch<first seed>``, sharing the endpoints' limits with the study's other
    workers through ``limits`` for the time of the batch (``toolkit.llm.shared_limits.adopt``), with the
    coordinator's plug-ins loaded first (``plugins``: a Dask worker has neither its environment nor its imports).
    Returns what the coordinator needs to know: the games played and, when a spending cap stopped the batch, its
    line (the games themselves are read from the record). Never raises for a cap."""
    from toolkit.core.plugins import load
    from toolkit.llm.budget import BudgetReached
    from toolkit.llm.shared_limits import adopt
    from toolkit.study.tournament import run_cell

    load(plugins)
    try:
        with adopt(limits):
            played = run_cell(str(Path(results_dir) / f"batch{min(seeds)}"), schedule, cell, seeds=seeds,
                              done_in=results_dir, tables=False, **options)
    except BudgetReached as exc:
        return {"games": None, "capped": str(exc)}
    return {"games": played, "capped": None}


def play_round(rows: pd.DataFrame, folder: Path, schedule: Path, submit: Callable[..., Any],
               batch_games: int = BATCH_GAMES, on_batch: Callable[[int], None] | None = None,
               **options: Any) -> str | None:
    """The coordinator's side of a round: every batch of every cell of the round submitted (``submit``: a
    ``concurrent.futures`` executor's or a Dask client's), then waited for. Returns a spending cap's line when one
    stopped some batch (the round is then unfinished: a rerun with a higher cap finishes it), else None.
    ``on_batch`` gets the games of each batch as it is waited for."""
    futures = [submit(play_batch, str(folder / cell), str(schedule), cell, seeds, **options)
               for cell, part in rows.groupby("cell", sort=True) for seeds in batches(part, batch_games)]
    capped = None
    for future in futures:  # all of them, also after a capped one: the round's record is whatever they played
        done = future.result()
        capped = capped or done["capped"]
        if on_batch and done["games"]:
            on_batch(done["games"])
    return capped
