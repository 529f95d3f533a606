"""Tournaments: a list of model specs playing each other in a balanced, seeded schedule.

The tournament file (its keys and defaults): docs/experiments.md, "Tournaments". Designs:

- ``rotation``: blocks of M games (M models). In a block, the preset's role slots are dealt to the models
  in rotation, so across the block every model holds every role slot once — every model plays every role
  equally often; the model order is shuffled per block.
- ``pairs`` (the default): for every ordered pair (A, B), A holds every village seat and B every wolf seat.
  This is the design that can rank models per side: in 200 simulated tournaments with known side-specific
  strengths the Bradley–Terry ratings recover the order and their intervals cover the truth 93–97% of the
  time (``benchmarks/rating_simulation.py``). In ``rotation`` every table mixes all models on both sides,
  so a game says little about any one of them (intervals about 5× wider for the same number of games);
  use it for questions about roles, not for ranking.

``expected_widths`` (``toolkit tournament FILE --plan``) prints, before anything runs, the 95% interval
half-width each model's rating per side will have, the smallest difference between two models the plan
detects with 80% power after Holm's correction, and the power at a given difference — at the village win rate
the preset gives (its measured rate, a pilot's with ``--pilot``, or ``--village-rate``; ``village_rate``),
not at an assumed 0.5: a preset the wolves win 80% of the time carries less information per game.

In both, the seat *names* are shuffled per game (seeded), so no model is tied to a seat name or a speaking
position. ``schedule`` returns the whole plan as a DataFrame (one row per seat per game) to inspect before
anything runs; its size for a requested precision comes from ``analysis.sample_size``. ``run_tournament``
writes the schedule, then runs it through the sweep machinery (``toolkit.study.sweep``: papermill cells, local
or Dask executors, finished cells and games skipped on a rerun).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from toolkit.analysis import sample_size
from toolkit.analysis.ratings import decided_games, fit_ratings
from toolkit.study.experiments import CellLimits, cell_lock, finished_seeds, play_capped, unfinished_record
from toolkit.record.run_log import Run
from toolkit.llm import get_model, parse_spec
from toolkit.core import data
from toolkit.core.files import FileError, TournamentFile, load_file, one_line
from toolkit.record.load import load
from toolkit.study.sweep import SweepOptions, run_sweep
from toolkit.werewolf.game import GameConfig, SeatConfig, play_games
from toolkit.werewolf.engine.preset import load_preset, parse_error_policy, preset_models

NOTEBOOK = "experiments/tournament.ipynb"
DESIGNS = ("pairs", "rotation")
DEFAULT_HALF_WIDTH = 0.1  # games per pairing when a file gives neither games nor half_width (97)


def games_needed(design: str, n_models: int, preset: str, half_width: float, self_play: bool = True) -> int:
    """Games per matchup (pairs) or blocks (rotation) for a 95% interval of ± ``half_width`` on each
    matchup's win rate (pairs) or on each model's win rate in its rarest role (rotation)."""
    need = sample_size(half_width)
    if design == "pairs":
        return need
    rarest = min(c for c in load_preset(preset).roles.values() if c > 0)
    return math.ceil(need / rarest)


# The plan holds one row per seat per game in memory: ~4 KB per 7-seat game and ~1 ms per game to build
# (measured: 10000 games, 39 MB peak by tracemalloc, 9.5 s on this project's machine). Past this many games a
# plan is refused before it is built, with what it would need.
MAX_GAMES = 100_000
PLAN_BYTES_PER_SEAT = 560
PLAN_S_PER_GAME = 0.001


def planned_games(models: list[str], presets: list[str], design: str = "pairs", games: int | None = None,
                  half_width: float | None = None, self_play: bool = True) -> int:
    """How many games ``schedule`` would plan, by arithmetic alone (nothing is built)."""
    if games is None and half_width is None:
        half_width = DEFAULT_HALF_WIDTH
    n_pairs = len(models) ** 2 - (0 if self_play else len(models))
    total = 0
    for preset in presets:
        n = games if games is not None else games_needed(design, len(models), preset, half_width, self_play)
        total += n * (len(models) if design == "rotation" else n_pairs)
    return total


def check_size(models: list[str], presets: list[str], design: str = "pairs", games: int | None = None,
               half_width: float | None = None, self_play: bool = True) -> int:
    """The planned number of games, or a ``ValueError`` with the estimate when it is past ``MAX_GAMES``."""
    total = planned_games(models, presets, design, games, half_width, self_play)
    if total > MAX_GAMES:
        seats = max(load_preset(p).n_players for p in presets)
        gb = total * seats * PLAN_BYTES_PER_SEAT / 1e9
        size = f"games {games} per matchup" if games is not None else f"half_width {half_width or DEFAULT_HALF_WIDTH}"
        raise ValueError(f"{size} plans {total:,} games: the plan alone would need ~{gb:,.1f} GB and "
                         f"~{total * PLAN_S_PER_GAME / 60:,.0f} min to build; at most {MAX_GAMES:,} games in one "
                         "tournament (fewer games per matchup, a wider half_width, or fewer models)")
    return total


def schedule(models: list[str], presets: list[str], design: str = "pairs", games: int | None = None,
             half_width: float | None = None, self_play: bool = True, seed: int = 0,
             games_per_cell: int = 100) -> pd.DataFrame:
    """The tournament plan: one row per seat per game (``game``, ``preset``, ``seed``, ``block``,
    ``matchup``, ``seat``, ``role``, ``side``, ``spec``, ``cell``). ``games`` is games per matchup
    (pairs) or number of blocks (rotation); without it, ``half_width`` sets it (``games_needed``)."""
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {DESIGNS}, got {design!r}")
    models = [str(m) for m in models]
    if len(models) < 1 or len(set(models)) != len(models):
        raise ValueError(f"models must be a list of distinct specs, got {models}")
    if design == "pairs" and len(models) < 2 and not self_play:
        raise ValueError("pairs without self_play needs at least two models")
    if games is None and half_width is None:
        half_width = DEFAULT_HALF_WIDTH
    check_size(models, presets, design, games, half_width, self_play)
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    game = 0
    for preset_name in presets:
        preset = load_preset(preset_name)
        slots = preset.role_list()
        n = games if games is not None else games_needed(design, len(models), preset_name, half_width, self_play)
        plans: list[tuple[int, str, list[str]]] = []  # (block, matchup, model per slot)
        if design == "rotation":
            for block in range(n):
                order = [models[i] for i in rng.permutation(len(models))]
                for j in range(len(models)):
                    plans.append((block, "mixed", [order[(i + j) % len(models)] for i in range(len(slots))]))
        else:
            pairs = [(a, b) for a, b in itertools.product(models, models) if self_play or a != b]
            for block in range(n):
                for a, b in pairs:
                    plans.append((block, f"{a} vs {b}", [b if r == "Werewolf" else a for r in slots]))
        for block, matchup, per_slot in plans:
            seats = [preset.seats[i] for i in rng.permutation(len(slots))]
            for seat, role, spec in zip(seats, slots, per_slot):
                rows.append({"game": game, "preset": preset_name, "seed": seed + game, "block": block,
                             "matchup": matchup, "seat": seat, "role": role,
                             "side": "werewolves" if role == "Werewolf" else "village", "spec": spec})
            game += 1
    plan = pd.DataFrame(rows)
    # Cells: consecutive games of one preset; a cell is one papermill run (one process).
    first = plan.groupby("game")["preset"].first()
    index_in_preset = first.groupby(first).cumcount()
    cell = first + "__part" + (index_in_preset // max(1, games_per_cell)).astype(str)
    plan["cell"] = plan["game"].map(cell)
    return plan.sort_values(["game", "seat"], key=lambda s: s.map(_seat_key) if s.name == "seat" else s
                            ).reset_index(drop=True)


def _seat_key(seat: str) -> int:
    digits = "".join(ch for ch in str(seat) if ch.isdigit())
    return int(digits) if digits else 0


def balance(plan: pd.DataFrame) -> pd.DataFrame:
    """Seat-games per model and role (and per model and seat name) — what the design promises to balance."""
    return plan.pivot_table(index=["preset", "spec"], columns="role", values="game", aggfunc="count", fill_value=0)


# P(village wins) per preset as measured (the heuristic in every seat, seeds 0-299 with play_games: village wins,
# games; docs/statistics.md, "What the planner assumes"). ``--plan`` sizes a study at these unless given a rate or
# a pilot.
KNOWN_VILLAGE_WINS = {"classic7": (86, 300), "standard9": (14, 300), "competitive12": (3, 300), "kaggle7": (66, 300),
                      "kaggle8": (77, 300)}
OFFLINE = ("heuristic", "random", "mixed")  # specs a pilot may play (no network, no cost)


def village_rate(preset: str, given: float | dict[str, float] | None = None) -> tuple[float, str]:
    """P(village wins) the plan assumes for ``preset`` and where it comes from: ``given`` (a rate, or a rate
    per preset, from a pilot or the user), else the preset's measured rate (``KNOWN_VILLAGE_WINS``), else 0.5
    (said so: no rate is known)."""
    if isinstance(given, dict) and preset in given:
        return float(given[preset]), "given"
    if isinstance(given, (int, float)):
        return float(given), "given"
    k, n = KNOWN_VILLAGE_WINS.get(preset, (0, 0))
    if n:
        return k / n, f"known rate: heuristic self-play, {k}/{n} games"
    return 0.5, "no known rate: 0.5 assumed"


def pilot_rates(plan: pd.DataFrame, games: int = 60, seed: int = 10_000
                ) -> dict[str, tuple[float, int, dict[tuple[str, str], float]]]:
    """A pilot: the first ``games`` planned games of each preset played now (seeds apart from the plan's),
    their village win rate per preset and the models' fitted strengths (rate, games decided, and
    (spec, side) → Bradley–Terry strength in logits, each side centred; empty when nothing was decided).
    Only offline models (``OFFLINE``) are played: a pilot of paid models is a study of its own, refused here."""
    import asyncio
    import tempfile

    paid = sorted({str(s) for s in plan["spec"]} - set(OFFLINE))
    if paid:
        raise ValueError(f"--pilot plays offline models only ({', '.join(OFFLINE)}); {', '.join(paid)} would be "
                         "called: run a small tournament of your own and pass its rate with --village-rate")
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for preset, part in plan.groupby("preset", sort=False):
            first = sorted(set(part["game"]))[:games]
            configs = [GameConfig(preset=preset, seed=seed + int(g), seats={s: SeatConfig(spec=m) for s, m in
                                                                            zip(rows["seat"], rows["spec"])},
                                  roles=dict(zip(rows["seat"], rows["role"])))
                       for g, rows in part[part["game"].isin(first)].groupby("game")]
            folder = Path(tmp) / preset
            with Run(folder, "pilot") as run:
                asyncio.run(play_games(configs, run))
            t = load(folder, complete_games=True)
            out[preset] = pilot_fit(t.games, t.players)
    return out


def pilot_fit(games: pd.DataFrame, players: pd.DataFrame) -> tuple[float, int, dict[tuple[str, str], float]]:
    """A pilot's games read: (village win rate among the decided games, games decided, (spec, side) →
    Bradley–Terry strength in logits). The rate and the strengths read the same games, the ones a rating
    counts (``decided_games``: not drawn, not failed, not degraded). None of those: rate 0.5 and no strengths
    (a plan at an even game)."""
    decided = decided_games(games)
    fit = fit_ratings(games, players) if len(decided) else None
    if fit is None:
        return 0.5, 0, {}
    return float((decided["winner"] == "village").mean()), len(decided), {
        n: float(b) for n, b in zip(fit.design.names, fit.beta[1:])}


def spread(models: list[str], gap: float) -> dict[tuple[str, str], float]:
    """Strengths ``gap`` logits apart from the strongest to the weakest model, evenly spaced and centred, on
    both sides: a plan at a range of gaps, for when the models' gaps are not known."""
    m = len(models)
    return {(s, side): (i / (m - 1) - 0.5) * gap if m > 1 else 0.0
            for i, s in enumerate(models) for side in ("village", "werewolves")}


def expected_widths(plan: pd.DataFrame, p_village: float | dict[str, float] | None = None, alpha: float = 0.05,
                    power: float = 0.8, difference: float = 0.6, strengths: dict | None = None
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What the plan can measure, per preset (the report rates each preset on its own), at the village win rate
    each preset gives (``village_rate``: ``p_village``, else the preset's known rate): for each model and side,
    the decided games that inform its rating and the expected 95% half-width of the rating (logits); for each
    pair of models on a side, the expected half-width of their difference, the smallest true difference
    detected with ``power`` at family-wise ``alpha`` after Holm's correction over every pair of the preset's
    table (the report's ``separation``; its first step, α / pairs, the bound when one pair differs), and the
    power to detect a true ``difference``. ``strengths`` ((spec, side) → logits, per preset or for all):
    the models' gaps (a pilot's fit, or ``spread``); without them the models are taken as equal, which
    promises intervals too narrow when they differ. Binomial information only: the simulation of
    ``benchmarks/plan_power.py`` checks it."""
    from scipy.stats import norm

    from toolkit.analysis.ratings import expected_se

    rows, pairs = [], []
    for preset, part in plan.groupby("preset", sort=False):
        p, source = village_rate(preset, p_village)
        games = part.groupby("game").size().rename("seats").reset_index().rename(columns={"game": "game_id"})
        players = part.rename(columns={"game": "game_id"})
        given = strengths.get(preset, strengths) if isinstance(strengths, dict) else None
        d, cov = expected_se(games, players, p, strengths=given)
        se = np.sqrt(np.diag(cov))
        for i, (spec, side) in enumerate(d.names, start=1):
            if d.n_games[(spec, side)]:
                rows.append({"preset": preset, "p_village": p, "source": source, "spec": spec, "side": side,
                             "games": d.n_games[(spec, side)], "half_width": 1.959964 * se[i]})
        index = {n: i for i, n in enumerate(d.names, start=1)}
        found = []
        for side in ("village", "werewolves"):
            specs = [m for m, s in d.names if s == side and d.n_games[(m, s)]]
            for a, b in itertools.combinations(specs, 2):
                c = np.zeros(len(se))
                c[index[(a, side)]], c[index[(b, side)]] = 1.0, -1.0
                found.append((side, a, b, float(np.sqrt(c @ cov @ c))))
        z = norm.ppf(1 - alpha / (2 * max(len(found), 1)))  # Holm's first step over the table's pairs
        for side, a, b, sd in found:
            pairs.append({"preset": preset, "p_village": p, "side": side, "a": a, "b": b,
                          "diff_half_width": 1.959964 * sd, "holm_pairs": len(found),
                          f"detectable_{round(power * 100)}": (z + norm.ppf(power)) * sd,
                          f"power_at_{difference:g}": float(norm.cdf(difference / sd - z)
                                                              + norm.cdf(-difference / sd - z))})
    return pd.DataFrame(rows), pd.DataFrame(pairs)


# ------------------------------------------------------------------ files and running
def load_tournament(path: str | Path) -> dict[str, Any]:
    """The tournament file, checked (``toolkit.core.files.TournamentFile``: unknown keys refused with a hint,
    types and ranges checked, a name that could leave the results folder refused)."""
    tournament = load_file(path, TournamentFile, "tournament")
    try:  # a name of the presets' models: blocks stands for its spec, the same in every preset
        named = preset_models(tournament.presets)
    except ValueError as exc:
        raise FileError(f"{path}: {one_line(exc)}") from None
    tournament.models = [named.get(m, m) for m in tournament.models]
    twice = sorted({m for m in tournament.models if tournament.models.count(m) > 1})
    if twice:
        raise FileError(f"{path}: models: {', '.join(twice)} is given twice (once by a preset's name); list it once")
    for spec in tournament.models:  # a spec that cannot work is refused before any folder or kernel exists
        if parse_spec(spec)[0] == "local":
            continue  # building it would start the server; the study starts it (and says so if it cannot)
        try:
            get_model(spec)
        except (ValueError, OSError) as exc:
            raise FileError(f"{path}: models: {one_line(exc)}") from None
    if tournament.error_policy is not None:
        try:
            parse_error_policy(tournament.error_policy)
        except ValueError as exc:
            raise FileError(f"{path}: {exc}") from None
    return tournament.model_dump(exclude_unset=True)


def plan_from_file(path: str | Path) -> tuple[dict[str, Any], pd.DataFrame]:
    spec = load_tournament(path)
    try:
        check_size(spec["models"], spec["presets"], spec.get("design", "pairs"), spec.get("games"),
                   spec.get("half_width"), bool(spec.get("self_play", True)))
    except ValueError as exc:
        raise FileError(f"{path}: {exc}") from None
    plan = schedule(spec["models"], spec["presets"], spec.get("design", "pairs"), spec.get("games"),
                    spec.get("half_width"), bool(spec.get("self_play", True)), int(spec.get("seed", 0)),
                    int(spec.get("games_per_cell", 100)))
    return spec, plan


def write_plan(path: str | Path, results_root: str | Path = "results") -> tuple[Path, pd.DataFrame]:
    """Write ``schedule.parquet`` and the sweep file that runs it under ``RESULTS/<name>/``. A rerun with a
    different plan under the same name is refused (it would mix two tournaments' games)."""
    spec, plan = plan_from_file(path)
    folder = Path(results_root) / spec["name"]
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "schedule.parquet"
    if target.exists():
        old = pd.read_parquet(target)
        if not old.reset_index(drop=True).equals(plan.reset_index(drop=True)):
            raise ValueError(f"{target} holds a different schedule: use a new name or remove {folder}")
    else:
        plan.to_parquet(target, index=False)
    sweep = {"name": spec["name"], "notebook": spec.get("notebook", NOTEBOOK),
             "parameters": {"schedule": str(target.resolve()), "reflection": bool(spec.get("reflection", False)),
                            "concurrency": int(spec.get("concurrency", 16)),
                            **({"error_policy": spec["error_policy"]} if spec.get("error_policy") else {}),
                            **({"on_endpoint_failure": spec["on_endpoint_failure"]}
                               if spec.get("on_endpoint_failure") else {})},
             "grid": {"cell": sorted(set(plan["cell"]), key=lambda c: (c.split("__part")[0],
                                                                         int(c.split("__part")[1])))}}
    sweep.update({k: spec[k] for k in ("max_usd", "max_tokens", "at_cap") if spec.get(k) is not None})
    sweep_file = folder / "sweep.yaml"
    sweep_file.write_text("# Written by toolkit.study.tournament from the tournament file; do not edit.\n"
                          + yaml.safe_dump(sweep, sort_keys=False))
    return sweep_file, plan


def run_tournament(path: str | Path, *, results_root: str | Path = "results", **options: Any) -> pd.DataFrame:
    """Plan, then run every cell through ``toolkit.study.sweep.run_sweep`` as ``options`` say (by keyword: its
    ``SweepOptions``: workers, executor, a spending cap shared by every cell; resume: finished cells and games are
    skipped). Returns the sweep summary (one row per cell)."""
    SweepOptions(**options)  # an unknown option is refused before the plan is written
    sweep_file, _ = write_plan(path, results_root)
    return run_sweep(sweep_file, results_root=results_root, **options)


@dataclass(frozen=True)
class TournamentCell(CellLimits):
    """One tournament cell's settings (``experiments/tournament.ipynb``'s parameters): its games are those of
    ``cell`` in ``schedule`` (the ``schedule.parquet`` a tournament run wrote, or a tournament file, planned here,
    the same plan; a relative path not found from the current folder is read from the repository, as a notebook's
    kernel runs in its own folder), played into ``results_dir``; the spending cap (kept in ``spend_dir``: the
    tournament's folder, shared by every cell) and failure policies: ``CellLimits``.
    ``seeds``: only these of the cell's games (a batch, ``toolkit.study.batches``); ``done_in``: the folder whose
    finished seeds are skipped (default ``results_dir``)."""

    schedule: str
    cell: str
    reflection: bool = False
    concurrency: int = 16
    _: KW_ONLY
    seeds: list[int] | None = None
    done_in: str | None = None

    def games(self) -> tuple[pd.DataFrame, str]:
        """The cell's rows of the plan (its seeds only, where given) and the tournament's name."""
        path = Path(self.schedule)
        if not path.is_absolute() and not path.exists() and (data.root() / path).exists():
            path = data.root() / path
        if path.suffix in (".yaml", ".yml"):
            spec, plan = plan_from_file(path)
            name = spec["name"]
        elif path.exists():
            plan, name = pd.read_parquet(path), path.parent.name
        else:
            raise FileNotFoundError(f"no schedule {self.schedule}: give a tournament's schedule.parquet (written by "
                                    "`toolkit tournament FILE`) or a tournament file such as "
                                    "experiments/tournaments/smoke.yaml")
        mine = plan[plan["cell"] == self.cell]
        if self.seeds is not None:
            mine = mine[mine["seed"].isin(set(self.seeds))]
        if mine.empty:
            raise ValueError(f"cell {self.cell!r} is not in {self.schedule}; its cells are "
                             f"{', '.join(sorted(set(plan['cell'])))}")
        return mine, name


def run_cell(cell: TournamentCell | str, /, *where: str, on_result=None, tables: bool = True, **settings: Any):
    """Play one cell's games (called from ``experiments/tournament.ipynb``): a ``TournamentCell``, or its results
    folder, schedule and cell name and its settings as keywords (``run_cell("results/x", "schedule.parquet",
    "classic7__part0", concurrency=2)``; with a ``TournamentCell``, keywords change its settings; an unknown one is
    a TypeError naming it). Games whose seed already finished are skipped. ``on_result`` is called with each game's
    result as it ends. ``tables=False``: return the number of games played, not the tables."""
    c = TournamentCell.of(cell, *where, **settings)
    mine, name = c.games()
    budget = c.budget()
    with cell_lock(c.results_dir):
        done = finished_seeds(c.done_in or c.results_dir)
        configs = []
        for (seed, preset), g in mine.groupby(["seed", "preset"], sort=True):
            if int(seed) in done:
                continue
            seats = {s: SeatConfig(spec=m, reflection=c.reflection) for s, m in zip(g["seat"], g["spec"])}
            configs.append(GameConfig(preset=preset, seed=int(seed), seats=seats,
                                      roles=dict(zip(g["seat"], g["role"])), reflection=c.reflection,
                                      error_policy=c.error_policy, on_endpoint_failure=c.on_endpoint_failure))
        if configs:
            params = {"tournament": name, "cell": c.cell, "preset": str(mine["preset"].iloc[0]),
                      "reflection": c.reflection, "error_policy": c.error_policy,
                      "on_endpoint_failure": c.on_endpoint_failure}
            record = unfinished_record(c.done_in or c.results_dir)  # games a stop or a kill left unfinished: replayed
            with Run(c.results_dir, name, config=params, seed=int(mine["seed"].min()),
                     specs=sorted(set(mine["spec"]))) as run:
                play_capped(configs, run, budget, record=record, concurrency=c.concurrency, on_result=on_result)
    return load(c.results_dir, complete_games=True) if tables else len(configs)


KEPT_TABLES = ("runs", "games", "players", "events", "beliefs")


def export_tables(source: str | Path, dest: str | Path, tables: tuple[str, ...] = KEPT_TABLES) -> list[Path]:
    """Every complete game under ``source`` as one Parquet file per table in ``dest`` (a folder
    ``toolkit.record.load.load`` reads as one run folder). The default leaves out ``calls`` (every prompt and
    answer: large) so that an example study's tables stay small enough to commit."""

    t = load(source, complete_games=True)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for name in tables:
        frame = getattr(t, name)
        frame.to_parquet(dest / f"{name}.parquet", index=False)
        written.append(dest / f"{name}.parquet")
    return written
