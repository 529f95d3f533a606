"""Exported tables that a rerun of the same study writes byte for byte the same (the committed example study,
``make example``): ids named after what they are, not drawn at random (a game ``g<seed>``, unique in a
tournament whose seeds are; a run ``<experiment>-<cell>``; a call ``<game>-<n>`` as before), rows in the order
of the study (runs by cell, games by seed, a game's rows in their own order), and the columns that tell the
machine rather than the study emptied (a game's wall time, a run's start time and git commit).

``python -m toolkit.study.stable_tables DIR`` rewrites the Parquet files of DIR (written by ``export_tables``)
in place."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

MACHINE_COLUMNS = {"games": ("wall_s",), "runs": ("started_at", "git_sha")}


def stabilise(folder: str | Path) -> None:
    folder = Path(folder)
    t = {p.stem: pd.read_parquet(p) for p in sorted(folder.glob("*.parquet"))}
    games = t["games"]
    if games["seed"].duplicated().any():
        raise ValueError(f"{folder}: two games share a seed: a game cannot be named by its seed")
    runs = t["runs"]
    run_ids = {r.run_id: f"{r.experiment}-{json.loads(r.config).get('cell', r.run_id)}" for r in runs.itertuples()}
    game_ids = {g: f"g{s}" for g, s in zip(games["game_id"], games["seed"])}
    order = {g: s for g, s in zip(games["game_id"], games["seed"])}
    out = {}
    for name, frame in t.items():
        frame = frame.copy()
        if "game_id" in frame:
            frame["_order"] = frame["game_id"].map(order)
            frame = frame.sort_values("_order", kind="stable").drop(columns="_order")
            frame["game_id"] = frame["game_id"].map(game_ids)
        if "call_id" in frame:
            frame["call_id"] = [None if c is None else game_ids.get(c.rsplit("-", 1)[0], c.rsplit("-", 1)[0])
                                + "-" + c.rsplit("-", 1)[1] for c in _calls(frame["call_id"])]
        if "run_id" in frame:
            frame["run_id"] = frame["run_id"].map(run_ids)
            if name == "runs":
                frame = frame.sort_values("run_id", kind="stable")
        for column in MACHINE_COLUMNS.get(name, ()):
            if column in frame:
                frame[column] = None
        out[name] = frame.reset_index(drop=True)
    for name, frame in out.items():
        frame.to_parquet(folder / f"{name}.parquet", index=False)


def _calls(ids: pd.Series) -> list:
    return [None if pd.isna(c) else str(c) for c in ids]


if __name__ == "__main__":
    stabilise(sys.argv[1])
