"""Adaptive tournaments (``design: adaptive`` in a tournament file, or ``toolkit tournament FILE --adaptive``):
games are played in rounds; after each round the next one goes to the comparisons still undecided
(``toolkit.analysis.sequential.allocate``), and the run stops when every comparison asked is decided at the
family-wise error rate, at its horizon, at the game cap (``max_games``) or at the spending cap (``max_usd``).
The statistics and their guarantee: ``toolkit.analysis.sequential`` and docs/statistics.md, "Adaptive
tournaments".

Everything the inference needs is on disk: ``adaptive.json`` (the design, fixed before the first game; a rerun
with other design constants under the same name is refused), ``schedule.parquet`` (every round's games, written
before any of them plays, with its ``round``) and the games themselves under ``<preset>__round<r>/``. A rerun,
after a stop or a kill -9, rebuilds the sequential state from the recorded games in their recorded order
(round, then seed), finishes a round left incomplete (games already finished are not played again) and goes on:
the state is a function of the record, so stopping and resuming changes nothing in it.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from toolkit.analysis import sequential as S
from toolkit.llm.budget import BudgetReached
from toolkit.record.load import LoadWarning, load
from toolkit.study.batches import BATCH_GAMES, play_round
from toolkit.study.tournament import load_tournament, run_cell
from toolkit.werewolf.engine.preset import load_preset


@dataclass
class Status:
    """What the loop knows after a round (given to ``on_round`` and returned at the end)."""

    name: str
    folder: Path
    monitor: S.Monitor
    games: int  # games played (decided or not)
    spend: float | None  # US dollars so far; None when some price is unknown
    stopped: str  # why the run ended ("" while it runs)
    round_games: int
    fixed: int  # games of the fixed design of the same error and power (planned at equal models)

    def left(self) -> tuple[int, int]:
        """(expected, at most) games still to play: per undecided comparison, the pairs its walk still needs
        at the current estimate (at most the horizon), as games at its current rate of pairs per game."""
        plan, mon = self.monitor.plan, self.monitor
        pairs = sum(c.n for c in mon.comps)
        if not pairs:
            return 0, 0  # nothing to extrapolate from yet
        rate = pairs / max(self.games, 1)
        expect = most = 0.0
        for c in mon.comps:
            if not c.open:
                continue
            room = plan.horizon - c.n
            drift = abs(2 * ((c.n + c.d) / 2 + 0.5) / (c.n + 1) - 1)
            need = min(room, max(plan.bound - abs(c.d), 0) / drift) if drift > 1e-9 else room
            expect, most = expect + need, most + room
        return math.ceil(expect / rate), math.ceil(most / rate)


def design_of(spec: dict[str, Any]) -> tuple[S.Plan, list[S.Comparison], int]:
    """The plan, the comparisons asked and the round size, from a tournament file's settings."""
    models, presets = list(spec["models"]), list(spec["presets"])
    if len(models) < 2:
        raise ValueError("an adaptive tournament compares models: give at least two")
    asked = None
    if spec.get("compare"):
        asked = [parse_comparison(c, models) for c in spec["compare"]]
    comps = S.comparisons(models, presets, asked)
    plan = S.Plan.make(spec.get("alpha", 0.05), spec.get("power", 0.8), spec.get("min_difference", 0.5), len(comps))
    rounds = spec.get("round_games") or S.default_round(models, plan, len(presets), bool(spec.get("self_play", True)))
    return plan, comps, int(rounds)


def parse_comparison(text: str, models: list[str]) -> tuple[str, str, str]:
    """``"village: heuristic vs random"`` → ("village", "heuristic", "random")."""
    side, _, pair = str(text).partition(":")
    a, _, b = pair.partition(" vs ")
    side, a, b = side.strip(), a.strip(), b.strip()
    if side not in S.SIDES or a not in models or b not in models or a == b:
        raise ValueError(f"compare: {text!r} is not 'SIDE: A vs B' with SIDE village or werewolves and A, B two "
                         f"of the models {models}")
    return side, a, b


def _check_design(folder: Path, spec: dict[str, Any], plan: S.Plan, comps: list[S.Comparison]) -> None:
    """Write the design before the first game, or refuse a rerun whose design differs from the recorded one
    (its error guarantee was fixed with the first game). Caps and the round size may change: they only say
    when to stop and how often to look."""
    wanted = {"models": list(spec["models"]), "presets": list(spec["presets"]),
              "self_play": bool(spec.get("self_play", True)), "seed": int(spec.get("seed", 0)),
              "alpha": plan.alpha, "power": plan.power, "min_difference": plan.delta, "k": plan.k,
              "horizon": plan.horizon, "bound": plan.bound,
              "comparisons": [f"{c.preset} {c.side}: {c.a} vs {c.b}" for c in comps]}
    path = folder / "adaptive.json"
    if path.exists():
        old = json.loads(path.read_text())
        changed = sorted(k for k in wanted if old.get(k) != wanted[k])
        if changed:
            raise ValueError(f"{folder} holds an adaptive tournament with another design ({', '.join(changed)} "
                             "changed): its error guarantee was fixed before its first game; use a new name or "
                             f"remove {folder}")
    else:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(wanted, indent=1))


def _round_rows(counts: dict[str, np.ndarray], models: list[str], rnd: int, first_game: int, seed: int
                ) -> pd.DataFrame:
    """One row per seat per game of a round (the columns of ``tournament.schedule``, plus ``round``): each
    matchup's village model in every village seat, its wolf model in every wolf seat, seat names shuffled."""
    rng = np.random.default_rng([seed, rnd])
    rows, game = [], first_game
    for preset_name, R in counts.items():
        preset = load_preset(preset_name)
        slots = preset.role_list()
        for i, v in enumerate(models):
            for j, w in enumerate(models):
                for _ in range(int(R[i, j])):
                    seats = [preset.seats[k] for k in rng.permutation(len(slots))]
                    for seat, role in zip(seats, slots):
                        wolf = role == "Werewolf"
                        rows.append({"game": game, "preset": preset_name, "seed": seed + game, "block": rnd,
                                     "matchup": f"{v} vs {w}", "seat": seat, "role": role,
                                     "side": "werewolves" if wolf else "village", "spec": w if wolf else v,
                                     "cell": f"{preset_name}__round{rnd}", "round": rnd})
                    game += 1
    return pd.DataFrame(rows)


def _write_schedule(path: Path, frame: pd.DataFrame) -> None:
    tmp = path.with_suffix(".parquet.tmp")
    frame.to_parquet(tmp, index=False)
    os.replace(tmp, path)  # a kill leaves the old schedule or the new one, never half of one


def _round_wins(plan_rows: pd.DataFrame, games: pd.DataFrame) -> dict[str, dict[tuple[str, str], list[int]]]:
    """A round's decided games per preset and matchup, in seed order: 1 where the village won."""
    per_game = plan_rows.drop_duplicates("game").sort_values("seed")
    winner = games.drop_duplicates("seed").set_index("seed")["winner"]
    out: dict[str, dict[tuple[str, str], list[int]]] = {}
    for g in per_game.itertuples():
        w = winner.get(g.seed)
        if w in S.SIDES:
            v, wolf = g.matchup.split(" vs ")
            out.setdefault(g.preset, {}).setdefault((v, wolf), []).append(int(w == "village"))
    return out


def spend(tables) -> float | None:
    """US dollars the complete games cost; None when some call's price is unknown."""
    cost = pd.to_numeric(tables.games.get("cost_usd", pd.Series(dtype=float)), errors="coerce")
    return None if cost.isna().any() else float(cost.sum())


def adaptive_spec(path: str | Path) -> dict[str, Any]:
    """The tournament file as an adaptive tournament: as written when it says ``design: adaptive``; otherwise
    (``--adaptive`` on a fixed file) the same models, presets, seed and settings, its size left out and its
    name suffixed ``-adaptive`` (so its games never mix with the fixed run's)."""
    spec = load_tournament(path)
    if spec.get("design") == "adaptive":
        return spec
    spec = {k: v for k, v in spec.items() if k not in ("games", "half_width", "design")}
    return spec | {"design": "adaptive", "name": f"{spec['name']}-adaptive"}


def run_adaptive(path: str | Path | dict[str, Any], results_root: str | Path = "results",
                 max_games: int | None = None, max_usd: float | None = None, progress: bool = True,
                 on_round: Callable[[Status], None] | None = None, max_tokens: int | None = None,
                 at_cap: str | None = None, on_game: Callable[[int], None] | None = None, workers: int = 1,
                 executor: str = "local", scheduler: str | None = None, batch_games: int = BATCH_GAMES) -> Status:
    """Play the adaptive tournament of the file at ``path`` (or of a spec from ``adaptive_spec``; resuming
    whatever is recorded under ``RESULTS/<name>/``) until it stops; write ``comparisons.parquet``,
    ``ratings.parquet`` and ``adaptive.md`` there. ``max_games``/``max_usd`` override the file's caps (a cap
    only ends the run earlier, which leaves every guarantee intact). The spending caps (``max_usd``,
    ``max_tokens``, ``at_cap``) are the study-wide ledger of ``toolkit.llm.budget``, kept in the tournament's
    folder. A round the cap cut short is not counted until a rerun with a higher cap finishes it: which of its
    games were cut depends on how long they ran, which may depend on who was winning. ``on_round`` gets the
    ``Status`` after every round, ``on_game`` the number of games played each time a game ends (with workers:
    each time a batch ends). With ``workers`` above 1, ``executor="dask"`` or a Dask ``scheduler``'s address, a
    round's games are handed out as batches of at most ``batch_games`` (``toolkit.study.batches``) and this process
    only decides: the same games, seeds and decisions as in one process."""
    from tqdm.auto import tqdm

    from toolkit.study.sweep import work_pool

    with warnings.catch_warnings():  # a partial game a kill left is expected here: its seed is played again
        warnings.simplefilter("ignore", LoadWarning)
        if workers == 1 and executor == "local" and scheduler is None:
            return _run(path, results_root, max_games, max_usd, progress, on_round, tqdm, max_tokens, at_cap, on_game)
        with work_pool(workers, executor, scheduler) as submit:
            return _run(path, results_root, max_games, max_usd, progress, on_round, tqdm, max_tokens, at_cap, on_game,
                        (submit, batch_games))


def _run(path, results_root, max_games, max_usd, progress, on_round, tqdm, max_tokens, at_cap, on_game,
         pool=None) -> Status:
    spec = path if isinstance(path, dict) else adaptive_spec(path)
    models, presets = list(spec["models"]), list(spec["presets"])
    self_play, seed = bool(spec.get("self_play", True)), int(spec.get("seed", 0))
    plan, comps, round_games = design_of(spec)
    max_games = max_games if max_games is not None else spec.get("max_games")
    max_usd = max_usd if max_usd is not None else spec.get("max_usd")
    max_tokens = max_tokens if max_tokens is not None else spec.get("max_tokens")
    at_cap = at_cap or spec.get("at_cap", "stop")
    folder = Path(results_root) / spec["name"]
    _check_design(folder, spec, plan, comps)
    schedule_path = folder / "schedule.parquet"
    zero = {m: 0.0 for m in models}
    status = Status(spec["name"], folder, S.Monitor(plan, models, comps), 0, 0.0, "", round_games,
                    S.fixed_games(zero, zero, 0.0, plan, self_play) * len(presets))
    record = S.Record(models, presets)
    sched = pd.read_parquet(schedule_path) if schedule_path.exists() else pd.DataFrame()
    bar = tqdm(total=max_games or None, desc=spec["name"], unit="game", disable=not progress)  # total: see show

    def play(rnd: int) -> None:
        rows = sched[sched["round"] == rnd]
        if pool is not None:  # the round's batches on the workers; this process decides
            capped = play_round(rows, folder, schedule_path, pool[0], pool[1], on_batch=some_games,
                                reflection=bool(spec.get("reflection", False)),
                                concurrency=int(spec.get("concurrency", 16)), max_usd=max_usd, max_tokens=max_tokens,
                                at_cap=at_cap, spend_dir=str(folder))
            if capped:
                raise BudgetReached(capped)
            return
        for cell in sorted(set(rows["cell"])):
            run_cell(str(folder / cell), str(schedule_path), cell, bool(spec.get("reflection", False)),
                     int(spec.get("concurrency", 16)), max_usd, max_tokens, at_cap, str(folder),
                     on_result=one_game)

    def one_game(_) -> None:
        some_games(1)

    def some_games(n: int) -> None:
        bar.update(n)
        if on_game:
            on_game(bar.n)

    def absorb(rnd: int, tables) -> None:
        rows = sched[sched["round"] == rnd]
        wins = _round_wins(rows, tables.games[tables.games["seed"].isin(set(rows["seed"]))])
        record.add(wins)
        status.monitor.add_round(wins, int(rows["game"].nunique()))
        status.games = status.monitor.games

    def show(tables) -> None:
        status.spend = spend(tables)
        done = sum(not c.open for c in status.monitor.comps)
        expect, most = status.left()
        if status.games:
            bar.total = status.games + most
        per_game = status.spend / status.games if status.spend is not None and status.games else None
        cost_left = f" ~${per_game * expect:.2f}" if per_game else ""
        bar.set_postfix_str(f"decided {done}/{len(comps)}, spent ${status.spend or 0:.2f}"
                            f"{'' if status.spend is not None else ' (some prices unknown)'}, "
                            f"left ~{expect} games{cost_left} (at most {most})", refresh=True)
        if on_round:
            on_round(status)

    tables = load(folder, complete_games=True) if folder.exists() else None
    for rnd in sorted(set(sched["round"])) if len(sched) else []:  # the record, in its order
        scheduled = set(sched.loc[sched["round"] == rnd, "seed"])
        finished = set(tables.games.loc[tables.games["winner"] != "error", "seed"]) if tables else set()
        if not scheduled <= finished:  # a round a stop, a cap or a kill left unfinished: finish it first
            try:
                play(rnd)
            except BudgetReached as exc:
                status.stopped = f"spending cap: {exc}"
                break
            tables = load(folder, complete_games=True)
        absorb(rnd, tables)
    bar.update(status.games - bar.n)
    if tables is not None and status.games:  # a resumed run: its state before the next round
        show(tables)
    while not status.stopped:
        per_game = (status.spend / status.games) if status.spend is not None and status.games else None
        budget = round_games
        if max_usd is not None:
            if status.spend is None:
                status.stopped = "spending cap set but some prices are unknown"
                break
            if per_game and per_game > 0:
                budget = min(budget, int((max_usd - status.spend) / per_game))
            if status.spend >= max_usd or budget <= 0:
                status.stopped = f"spending cap (${max_usd:g}) reached"
                break
        counts = S.next_round(status.monitor, record, budget, status.games, max_games, self_play)
        if counts is None:
            status.stopped = ("every comparison decided or at its horizon" if not any(
                c.open and c.n < plan.horizon for c in status.monitor.comps) else f"game cap ({max_games}) reached")
            break
        rnd = status.monitor.rounds + 1
        first = int(sched["game"].max()) + 1 if len(sched) else 0
        sched = pd.concat([sched, _round_rows(counts, models, rnd, first, seed)], ignore_index=True)
        _write_schedule(schedule_path, sched)
        try:
            play(rnd)
        except BudgetReached as exc:  # the round stays unfinished: a rerun with a higher cap finishes it
            status.stopped = f"spending cap: {exc}"
            break
        tables = load(folder, complete_games=True)
        absorb(rnd, tables)
        show(tables)
    bar.close()
    if tables is not None:
        status.spend = spend(tables)
        write_outputs(status, tables)
    return status


def write_outputs(status: Status, tables) -> None:
    from toolkit.analysis.adaptive_report import adaptive_report

    status.monitor.table().to_parquet(status.folder / "comparisons.parquet", index=False)
    status.monitor.ratings().to_parquet(status.folder / "ratings.parquet", index=False)
    (status.folder / "adaptive.md").write_text(adaptive_report(status.monitor, tables, status.stopped,
                                                               status.fixed, status.round_games))
