"""Adaptive tournaments (``design: adaptive`` in a tournament file, or ``toolkit tournament FILE --adaptive``):
games are played in rounds; a round gives every comparison still open one look's batch of side-swapped game
pairs (``toolkit.analysis.sequential.Coordinator.next_round``), and the run stops when every comparison asked
is decided (each is, by its last look: at most the design's cap, within 1.1 × the fixed design), at the game
cap (``max_games``) or at the spending cap (``max_usd``). A decided comparison gets no more games and its
verdict and interval do not change. The statistics and their guarantee: ``toolkit.analysis.sequential`` and
docs/statistics.md, "Adaptive tournaments".

Everything the inference needs is on disk: ``adaptive.json`` (the design, fixed before the first game; a rerun
with other design constants under the same name is refused), ``schedule.parquet`` (every round's games, written
before any of them plays, with its ``round``), the games themselves under ``<preset>__round<r>/`` and
``coordinator.json`` (the coordinator's state after the last round, for a reader; never read back). A rerun,
after a stop or a kill -9, rebuilds the sequential state from the recorded games in their recorded order
(round, then seed), finishes a round left incomplete (games already finished are not played again) and goes on:
the state is a function of the record, so stopping and resuming changes nothing in it. The batches of a round
are independent of each other (another process may play them); the coordinator takes the round's scores in
one place (``add_round``).
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from toolkit.analysis import sequential as S
from toolkit.llm.budget import BudgetReached
from toolkit.llm.health import EndpointDown
from toolkit.llm.shared_limits import study_limits
from toolkit.record.load import LoadWarning, load
from toolkit.study.batches import BATCH_GAMES, play_round
from toolkit.study.tournament import load_tournament, run_cell, village_rate
from toolkit.werewolf.engine.preset import load_preset


@dataclass
class Status:
    """What the loop knows after a round (given to ``on_round`` and returned at the end)."""

    name: str
    folder: Path
    coordinator: S.Coordinator
    games: int  # games played (decided or not)
    spend: float | None  # US dollars so far; None when some price is unknown
    stopped: str  # why the run ended ("" while it runs)
    fixed: int  # games of the fixed design of the same error and power
    cap: int  # the most games the design can take (every comparison to its last look)

    @property
    def monitor(self) -> S.Coordinator:  # the name callers used before issue 45
        return self.coordinator

    def left(self) -> tuple[int, int]:
        """(next round, at most) games still to play: the next round's batch of side-swapped pairs, and every
        open comparison run to its last look."""
        co = self.coordinator
        nxt = sum(2 * n for *_, n in co.next_round())
        most = sum(2 * (co.designs[c.preset].n_max - len(c.scores)) for c in co.comps if c.open)
        return nxt, most


def design_of(spec: dict[str, Any]) -> tuple[dict[str, S.Design], list[S.Comparison]]:
    """The design of every preset and the comparisons asked, from a tournament file's settings: sized at each
    preset's village rate (``village_rate`` in the file, a number or one per preset; else the preset's known
    rate, ``tournament.village_rate``)."""
    models, presets = list(spec["models"]), list(spec["presets"])
    if len(models) < 2:
        raise ValueError("an adaptive tournament compares models: give at least two")
    asked = None
    if spec.get("compare"):
        asked = [parse_comparison(c, models) for c in spec["compare"]]
    comps = S.comparisons(models, presets, asked)
    designs = {p: S.Design.make(spec.get("alpha", 0.05), spec.get("power", 0.8), spec.get("min_difference", 0.5),
                                len(comps), village_rate(p, spec.get("village_rate"))[0]) for p in presets}
    return designs, comps


def parse_comparison(text: str, models: list[str]) -> tuple[str, str]:
    """``"heuristic vs random"`` → ("heuristic", "random"): a head-to-head in side-swapped pairs."""
    a, _, b = str(text).partition(" vs ")
    a, b = a.strip(), b.strip()
    if ":" in a or a not in models or b not in models or a == b:
        raise ValueError(f"compare: {text!r} is not 'A vs B' with A, B two of the models {models} (comparisons are "
                         "head-to-head over both sides, in side-swapped pairs: no side is named)")
    return a, b


def _check_design(folder: Path, spec: dict[str, Any], designs: dict[str, S.Design], comps: list[S.Comparison]
                  ) -> None:
    """Write the design before the first game, or refuse a rerun whose design differs from the recorded one
    (its error guarantee was fixed with the first game). Caps may change: they only say when to stop."""
    d0 = next(iter(designs.values()))
    wanted = {"models": list(spec["models"]), "presets": list(spec["presets"]), "seed": int(spec.get("seed", 0)),
              "alpha": d0.alpha, "power": d0.power, "min_difference": d0.delta,
              "village_rate": {p: d.p_village for p, d in designs.items()},
              "designs": {p: {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(d).items()}
                          for p, d in designs.items()},
              "comparisons": [f"{c.preset}: {c.a} vs {c.b}" for c in comps]}
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


def _round_rows(batches: list[tuple[str, str, str, int]], rnd: int, first_game: int, seed: int) -> pd.DataFrame:
    """One row per seat per game of a round (the columns of ``tournament.schedule``, plus ``round`` and
    ``pair``): per comparison's batch, each side-swapped pair's two games in a row — A in every village seat
    against B's wolves, then B's village against A's wolves — each with its own seed and seat names shuffled.
    ``pair`` (the pair's first game) keeps a pair together in a worker's batch (``toolkit.study.batches``)."""
    rng = np.random.default_rng([seed, rnd])
    rows, game = [], first_game
    for preset_name, a, b, pairs in batches:
        preset = load_preset(preset_name)
        slots = preset.role_list()
        for _ in range(int(pairs)):
            pair = game
            for v, w in ((a, b), (b, a)):
                seats = [preset.seats[k] for k in rng.permutation(len(slots))]
                for seat, role in zip(seats, slots):
                    wolf = role == "Werewolf"
                    rows.append({"game": game, "preset": preset_name, "seed": seed + game, "block": rnd,
                                 "matchup": f"{v} vs {w}", "seat": seat, "role": role,
                                 "side": "werewolves" if wolf else "village", "spec": w if wolf else v,
                                 "cell": f"{preset_name}__round{rnd}", "round": rnd, "pair": pair})
                game += 1
    return pd.DataFrame(rows)


def _write_schedule(path: Path, frame: pd.DataFrame) -> None:
    tmp = path.with_suffix(".parquet.tmp")
    frame.to_parquet(tmp, index=False)
    os.replace(tmp, path)  # a kill leaves the old schedule or the new one, never half of one


def round_scores(plan_rows: pd.DataFrame, games: pd.DataFrame, comps: list[S.Comparison]
                 ) -> dict[tuple[str, str, str], list[float]]:
    """A round's pair scores per comparison, in schedule order: each side-swapped pair's two games (its
    ``pair``), A's village game first. A pair with a game that has no result (an error) is left out; the
    report's count of pairs shows it."""
    per_game = plan_rows.drop_duplicates("game").sort_values("game")
    winner = games.drop_duplicates("seed").set_index("seed")["winner"]
    asked = {(c.preset, c.a, c.b) for c in comps}
    out: dict[tuple[str, str, str], list[float]] = {}
    for _, pair in per_game.groupby("pair", sort=True):
        first, second = pair.iloc[0], pair.iloc[1]
        a, b = first["matchup"].split(" vs ")
        key = (first["preset"], a, b) if (first["preset"], a, b) in asked else (first["preset"], b, a)
        d = S.pair_score(winner.get(first["seed"]), winner.get(second["seed"]))
        scores = out.setdefault(key, [])
        if d is not None:
            scores.append(d if key[1] == a else -d)
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
    whatever is recorded under ``RESULTS/<name>/``) until it stops; write ``comparisons.parquet`` and
    ``adaptive.md`` there. ``max_games``/``max_usd`` override the file's caps (a cap
    only ends the run earlier, which leaves every guarantee intact). The spending caps (``max_usd``,
    ``max_tokens``, ``at_cap``) are the study-wide ledger of ``toolkit.llm.budget``, kept in the tournament's
    folder. A round the cap cut short is not counted until a rerun with a higher cap finishes it: which of its
    games were cut depends on how long they ran, which may depend on who was winning. ``on_round`` gets the
    ``Status`` after every round, ``on_game`` the number of games played each time a game ends (with workers:
    each time a batch ends). With ``workers`` above 1, ``executor="dask"`` or a Dask ``scheduler``'s address, a
    round's games are handed out as batches of at most ``batch_games`` (``toolkit.study.batches``) and this process
    only decides: the same games, seeds and decisions as in one process."""
    from tqdm.auto import tqdm

    from toolkit.study.executors import work_pool

    with warnings.catch_warnings():  # a partial game a kill left is expected here: its seed is played again
        warnings.simplefilter("ignore", LoadWarning)
        if workers == 1 and executor == "local" and scheduler is None:
            return _run(path, results_root, max_games, max_usd, progress, on_round, tqdm, max_tokens, at_cap, on_game)
        with work_pool(workers, executor, scheduler) as submit:
            return _run(path, results_root, max_games, max_usd, progress, on_round, tqdm, max_tokens, at_cap, on_game,
                        (submit, batch_games, scheduler))


# Over 60 lines on purpose: one loop (finish the recorded rounds, then plan, play and absorb new ones until a
# stop) whose small closures share its bar, schedule and coordinator; split, each piece would take most of them.
def _run(path, results_root, max_games, max_usd, progress, on_round, tqdm, max_tokens, at_cap, on_game,
         pool=None) -> Status:
    spec = path if isinstance(path, dict) else adaptive_spec(path)
    seed = int(spec.get("seed", 0))
    designs, comps = design_of(spec)
    max_games = max_games if max_games is not None else spec.get("max_games")
    max_usd = max_usd if max_usd is not None else spec.get("max_usd")
    max_tokens = max_tokens if max_tokens is not None else spec.get("max_tokens")
    at_cap = at_cap or spec.get("at_cap", "stop")
    folder = Path(results_root) / spec["name"]
    _check_design(folder, spec, designs, comps)
    schedule_path = folder / "schedule.parquet"
    coordinator = S.Coordinator(designs, comps)
    status = Status(spec["name"], folder, coordinator, 0, 0.0, "", S.fixed_games(designs, comps),
                    S.max_games(designs, comps))
    sched = pd.read_parquet(schedule_path) if schedule_path.exists() else pd.DataFrame()
    bar = tqdm(total=max_games or status.cap, desc=spec["name"], unit="game", disable=not progress)
    settings = dict(reflection=bool(spec.get("reflection", False)), concurrency=int(spec.get("concurrency", 16)),
                    max_usd=max_usd, max_tokens=max_tokens, at_cap=at_cap, spend_dir=str(folder),
                    on_endpoint_failure=spec.get("on_endpoint_failure") or "wait")  # every cell's (TournamentCell)

    def play(rnd: int) -> None:
        rows = sched[sched["round"] == rnd]
        if pool is not None:  # the round's batches on the workers; this process decides
            capped = play_round(rows, folder, schedule_path, pool[0], pool[1], on_batch=some_games,
                                limits=study_limits(folder / ".limits", pool[2]), **settings)  # one limit per endpoint
            if capped:
                raise BudgetReached(capped)
            return
        for cell in sorted(set(rows["cell"])):
            run_cell(str(folder / cell), str(schedule_path), cell, on_result=one_game, **settings)

    def one_game(_) -> None:
        some_games(1)

    def some_games(n: int) -> None:
        bar.update(n)
        if on_game:
            on_game(bar.n)

    def absorb(rnd: int, tables) -> None:
        rows = sched[sched["round"] == rnd]
        games = tables.games[tables.games["seed"].isin(set(rows["seed"]))]
        coordinator.add_round(round_scores(rows, games, comps), int(rows["game"].nunique()))
        status.games = coordinator.games
        (folder / "coordinator.json").write_text(json.dumps(coordinator.state()))

    def show(tables) -> None:
        status.spend = spend(tables)
        nxt, most = status.left()
        bar.total = status.games + most
        bar.set_postfix_str(f"decided {coordinator.decided}/{len(comps)}, spent ${status.spend or 0:.2f}"
                            f"{'' if status.spend is not None else ' (some prices unknown)'}, "
                            f"next round {nxt} games, at most {most} left", refresh=True)
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
            except EndpointDown as exc:  # the round stays unfinished: a rerun finishes it
                status.stopped = f"endpoint down: {exc}"
                break
            tables = load(folder, complete_games=True)
        absorb(rnd, tables)
    bar.update(status.games - bar.n)
    if tables is not None and status.games:  # a resumed run: its state before the next round
        show(tables)
    while not status.stopped:
        batches = coordinator.next_round()
        if not batches:
            status.stopped = "every comparison decided"
            break
        n = 2 * sum(pairs for *_, pairs in batches)
        if max_games is not None and status.games + n > max_games:
            status.stopped = f"game cap ({max_games}) reached"
            break
        if max_usd is not None:
            per_game = (status.spend / status.games) if status.spend is not None and status.games else None
            if status.spend is None:
                status.stopped = "spending cap set but some prices are unknown"
                break
            if status.spend >= max_usd or (per_game and status.spend + per_game * n > max_usd):
                status.stopped = f"spending cap (${max_usd:g}) reached"
                break
        rnd = coordinator.rounds + 1
        first = int(sched["game"].max()) + 1 if len(sched) else 0
        sched = pd.concat([sched, _round_rows(batches, rnd, first, seed)], ignore_index=True)
        _write_schedule(schedule_path, sched)
        try:
            play(rnd)
        except BudgetReached as exc:  # the round stays unfinished: a rerun with a higher cap finishes it
            status.stopped = f"spending cap: {exc}"
            break
        except EndpointDown as exc:  # the same: a rerun once the endpoint answers again finishes it
            status.stopped = f"endpoint down: {exc}"
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

    status.coordinator.table().to_parquet(status.folder / "comparisons.parquet", index=False)
    (status.folder / "adaptive.md").write_text(adaptive_report(status.coordinator, tables, status.stopped,
                                                               status.fixed, status.cap))
