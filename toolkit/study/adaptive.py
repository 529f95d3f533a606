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
from toolkit.core.plugins import names as plugin_names
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
        if "designs" in changed:  # name the design's own fields too (shape, cc, looks, bounds ...)
            was, now = old.get("designs") or {}, wanted["designs"]
            fields = sorted({f for p in set(was) | set(now) for f in set((was.get(p) or {})) | set(now.get(p) or {})
                             if (was.get(p) or {}).get(f) != (now.get(p) or {}).get(f)})
            changed[changed.index("designs")] = f"designs: {', '.join(fields)}" if fields else "designs"
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


@dataclass
class Options:
    """How to run an adaptive tournament (``run_adaptive``'s keywords). ``max_games``/``max_usd`` override the
    file's caps (a cap only ends the run earlier, which leaves every guarantee intact). The spending caps
    (``max_usd``, ``max_tokens``, ``at_cap``) are the study-wide ledger of ``toolkit.llm.budget``, kept in the
    tournament's folder. ``on_round`` gets the ``Status`` after every round, ``on_game`` the number of games played
    each time a game ends (with workers: each time a batch ends). With ``workers`` above 1, ``executor="dask"`` or a
    Dask ``scheduler``'s address, a round's games are handed out as batches of at most ``batch_games``
    (``toolkit.study.batches``) and this process only decides: the same games, seeds and decisions as in one
    process."""

    max_games: int | None = None
    max_usd: float | None = None
    max_tokens: int | None = None
    at_cap: str | None = None
    progress: bool = True
    on_round: Callable[[Status], None] | None = None
    on_game: Callable[[int], None] | None = None
    workers: int = 1
    executor: str = "local"
    scheduler: str | None = None
    batch_games: int = BATCH_GAMES


def run_adaptive(path: str | Path | dict[str, Any], results_root: str | Path = "results", **options: Any) -> Status:
    """Play the adaptive tournament of the file at ``path`` (or of a spec from ``adaptive_spec``; resuming
    whatever is recorded under ``RESULTS/<name>/``) until it stops, as ``options`` say (``Options``: caps,
    callbacks, workers; an unknown one is a TypeError naming it); write ``comparisons.parquet`` and ``adaptive.md``
    there. A round the cap cut short is not counted until a rerun with a higher cap finishes it: which of its
    games were cut depends on how long they ran, which may depend on who was winning."""
    from toolkit.study.executors import work_pool

    o = Options(**options)
    with warnings.catch_warnings():  # a partial game a kill left is expected here: its seed is played again
        warnings.simplefilter("ignore", LoadWarning)
        if o.workers == 1 and o.executor == "local" and o.scheduler is None:
            return _Rounds(path, results_root, o).run()
        with work_pool(o.workers, o.executor, o.scheduler) as submit:
            return _Rounds(path, results_root, o, submit).run()


class _Rounds:
    """One run of an adaptive tournament: finish the recorded rounds, then plan, play and absorb new ones until a
    stop. It holds what the steps share: the spec and caps, the schedule, the coordinator, the status and the bar."""

    def __init__(self, path: str | Path | dict[str, Any], results_root: str | Path, o: Options,
                 submit: Callable | None = None) -> None:
        from tqdm.auto import tqdm

        spec = path if isinstance(path, dict) else adaptive_spec(path)
        self.o, self.submit, self.seed = o, submit, int(spec.get("seed", 0))
        designs, self.comps = design_of(spec)
        self.max_games = o.max_games if o.max_games is not None else spec.get("max_games")
        self.max_usd = o.max_usd if o.max_usd is not None else spec.get("max_usd")
        self.folder = folder = Path(results_root) / spec["name"]
        _check_design(folder, spec, designs, self.comps)
        self.schedule_path = folder / "schedule.parquet"
        self.coordinator = S.Coordinator(designs, self.comps)
        self.status = Status(spec["name"], folder, self.coordinator, 0, 0.0, "", S.fixed_games(designs, self.comps),
                             S.max_games(designs, self.comps))
        self.sched = pd.read_parquet(self.schedule_path) if self.schedule_path.exists() else pd.DataFrame()
        self.bar = tqdm(total=self.max_games or self.status.cap, desc=spec["name"], unit="game",
                        disable=not o.progress)
        self.done = 0  # games played so far (a bar not shown counts none)
        self.settings = dict(reflection=bool(spec.get("reflection", False)),  # every cell's (TournamentCell)
                             concurrency=int(spec.get("concurrency", 16)), max_usd=self.max_usd,
                             max_tokens=o.max_tokens if o.max_tokens is not None else spec.get("max_tokens"),
                             at_cap=o.at_cap or spec.get("at_cap", "stop"), spend_dir=str(folder),
                             on_endpoint_failure=spec.get("on_endpoint_failure") or "wait")

    def run(self) -> Status:
        status, sched = self.status, self.sched
        tables = load(self.folder, complete_games=True) if self.folder.exists() else None
        for rnd in sorted(set(sched["round"])) if len(sched) else []:  # the record, in its order
            scheduled = set(sched.loc[sched["round"] == rnd, "seed"])
            finished = set(tables.games.loc[tables.games["winner"] != "error", "seed"]) if tables else set()
            if not scheduled <= finished:  # a round a stop, a cap or a kill left unfinished: finish it first
                if not self.played(rnd):
                    break
                tables = load(self.folder, complete_games=True)
            self.absorb(rnd, tables)
        self.bar.update(status.games - self.done)
        self.done = status.games
        if tables is not None and status.games:  # a resumed run: its state before the next round
            self.show(tables)
        while not status.stopped:
            batches = self.coordinator.next_round()
            status.stopped = self.stop(batches)
            if status.stopped:
                break
            rnd = self.coordinator.rounds + 1
            first = int(self.sched["game"].max()) + 1 if len(self.sched) else 0
            self.sched = pd.concat([self.sched, _round_rows(batches, rnd, first, self.seed)], ignore_index=True)
            _write_schedule(self.schedule_path, self.sched)
            if not self.played(rnd):
                break
            tables = load(self.folder, complete_games=True)
            self.absorb(rnd, tables)
            self.show(tables)
        self.bar.close()
        if tables is not None:
            status.spend = spend(tables)
            write_outputs(status, tables)
        return status

    def stop(self, batches: list[tuple[str, str, str, int]]) -> str:
        """Why no next round is played ("" when it is): every comparison decided, or a cap it would pass."""
        status, n = self.status, 2 * sum(pairs for *_, pairs in batches)
        if not batches:
            return "every comparison decided"
        if self.max_games is not None and status.games + n > self.max_games:
            return f"game cap ({self.max_games}) reached"
        if self.max_usd is None:
            return ""
        if status.spend is None:
            return "spending cap set but some prices are unknown"
        per_game = status.spend / status.games if status.games else None
        over = status.spend >= self.max_usd or (per_game and status.spend + per_game * n > self.max_usd)
        return f"spending cap (${self.max_usd:g}) reached" if over else ""

    def played(self, rnd: int) -> bool:
        """Play round ``rnd``; False when a cap or a dead endpoint cut it (``status.stopped`` says which): the round
        stays unfinished, and a rerun with a higher cap, or once the endpoint answers again, finishes it."""
        rows = self.sched[self.sched["round"] == rnd]
        try:
            if self.submit is None:
                for cell in sorted(set(rows["cell"])):
                    run_cell(str(self.folder / cell), str(self.schedule_path), cell,
                             on_result=lambda _: self.some_games(1), **self.settings)
                return True
            capped = play_round(rows, self.folder, self.schedule_path, self.submit, self.o.batch_games,
                                on_batch=self.some_games, **self.settings,  # the round's batches on the workers
                                limits=study_limits(self.folder / ".limits", self.o.scheduler),  # one per endpoint
                                plugins=tuple(plugin_names()))  # the workers load this process's plug-ins
            if capped:
                raise BudgetReached(capped)
        except BudgetReached as exc:
            self.status.stopped = f"spending cap: {exc}"
        except EndpointDown as exc:
            self.status.stopped = f"endpoint down: {exc}"
        return not self.status.stopped

    def some_games(self, n: int) -> None:
        self.done += n
        self.bar.update(n)
        if self.o.on_game:
            self.o.on_game(self.done)

    def absorb(self, rnd: int, tables) -> None:
        rows = self.sched[self.sched["round"] == rnd]
        games = tables.games[tables.games["seed"].isin(set(rows["seed"]))]
        self.coordinator.add_round(round_scores(rows, games, self.comps), int(rows["game"].nunique()))
        self.status.games = self.coordinator.games
        (self.folder / "coordinator.json").write_text(json.dumps(self.coordinator.state()))

    def show(self, tables) -> None:
        status = self.status
        status.spend = spend(tables)
        nxt, most = status.left()
        self.bar.total = status.games + most
        unknown = "" if status.spend is not None else " (some prices unknown)"
        self.bar.set_postfix_str(f"decided {self.coordinator.decided}/{len(self.comps)}, spent ${status.spend or 0:.2f}"
                                 f"{unknown}, next round {nxt} games, at most {most} left", refresh=True)
        if self.o.on_round:
            self.o.on_round(status)


def write_outputs(status: Status, tables) -> None:
    from toolkit.analysis.adaptive_report import adaptive_report

    status.coordinator.table().to_parquet(status.folder / "comparisons.parquet", index=False)
    (status.folder / "adaptive.md").write_text(adaptive_report(status.coordinator, tables, status.stopped,
                                                               status.fixed, status.cap))
