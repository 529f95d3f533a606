"""What one experiment cell runs (called from the parameterised notebooks in ``experiments/``).

A cell's games are seeded ``seed .. seed + n_games - 1``; seeds whose game already finished in the cell's
folder are skipped, so a cell that was killed resumes where it stopped, and a game that did not finish (stopped at
a spending cap, killed, interrupted) is played again from its start with the calls it recorded replayed from its
record (``toolkit.llm.cache.Record``): only its new calls are paid. A cell keeps a ledger of what it paid
(``spend.jsonl``, with or without a cap: ``toolkit.llm.budget``). A lock on the folder keeps two processes from
ever playing the same cell at once.
"""

from __future__ import annotations

import fcntl
from contextlib import contextmanager
from dataclasses import KW_ONLY, dataclass, fields, replace
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pandas.api.types import union_categoricals
from tqdm.auto import tqdm

from toolkit.agent.environments import kinds
from toolkit.agent.environments.environment import EnvironmentUnavailable
from toolkit.agent.suite import load_tasks, run_task
from toolkit.record.run_log import Run
from toolkit.record.load import KEYS, Results, Tables, distinct_runs, load, run_folders, scan
from toolkit.record.tables import TABLES
from toolkit.core.printable import plural
from toolkit.core.sync import run_sync
from toolkit.werewolf.experience import ExperiencePool
from toolkit.llm import get_model
from toolkit.llm.budget import LEDGER, Budget, BudgetReached
from toolkit.llm.cache import RECORD_COLUMNS, Record, legacy_key, replaying
from toolkit.llm.health import EndpointDown
from toolkit.werewolf.game import ENDPOINT_MODES, CapReport, GameConfig, SeededConfigs, play_games
from toolkit.werewolf.engine.preset import load_preset, parse_error_policy
from toolkit.werewolf.engine.roles import removing_kinds


@contextmanager
def cell_lock(folder: str | Path) -> Iterator[None]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # waits while another process (an orphan of a killed sweep) runs it
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def finished_games(results_dir: str | Path) -> pd.DataFrame:
    """The games of a cell's folder that count as played (``game_id``, ``seed``): an ``error`` game is played
    again."""
    if not Path(results_dir).exists():
        return pd.DataFrame({"game_id": pd.Series(dtype=object), "seed": pd.Series(dtype="int64")})
    games = load(results_dir, complete_games=False, columns={"games": ["game_id", "seed", "winner"]}).games
    return games.loc[(games["winner"] != "error") & games["seed"].notna(), ["game_id", "seed"]]


def finished_seeds(results_dir: str | Path) -> set[int]:
    return set(int(s) for s in finished_games(results_dir)["seed"])


def unfinished_record(results_dir: str | Path) -> Record | None:
    """The record of the games a cell's folder holds calls of but that did not finish (no games row, or an
    ``error`` one): their answers, replayed when those games are played again (None when there are none). Read a
    batch at a time: only the unfinished games' rows are kept, without their prompts."""
    if not Path(results_dir).exists():
        return None
    finished = set(finished_games(results_dir)["game_id"])
    ids: set[str] = set()
    for part in scan(results_dir, "calls", ["game_id"], rows=200_000):
        ids.update(g for g in part["game_id"].dropna().unique() if g not in finished)
    if not ids:
        return None
    rows = [row for part in scan(results_dir, "calls", RECORD_COLUMNS, games=ids) for row in part.to_dict("records")]
    old = {r["game_id"] for r in rows if not isinstance(r.get("request_key"), str)}
    if old:  # rows written before request_key: matched by what they hold (cache.legacy_key), prompts read for them
        keys = {r["call_id"]: legacy_key(r["spec"], r["replay_key"], r["temperature"], r["action"], r["messages"])
                for part in scan(results_dir, "calls", ["call_id", "spec", "replay_key", "temperature", "action",
                                                        "messages"], games=old) for r in part.to_dict("records")}
        for row in rows:
            row["legacy_key"] = keys.get(row["call_id"])
    record = Record(rows)
    return record if len(record) else None


# A cell holds its seeds to play (a list; each game's config is made when a worker takes it) and the seeds it
# finished: past this many games the cell is refused up front (split it with repeats or seeds). The estimate's
# figures were measured on this project's machine: ~36 bytes a seed (a list of ints) and ~0.075 s per heuristic
# game (seed 0-9, no tables).
MAX_GAMES_PER_CELL = 100_000
SEED_BYTES = 36
HEURISTIC_GAME_S = 0.075


def _size(n: float, unit: str, steps: list[tuple[float, str]]) -> str:
    for factor, name in steps:
        if n >= factor:
            return f"{n / factor:,.0f} {name}"
    return f"{n:,.0f} {unit}"


def check_games(n_games: object, what: str = "n_games") -> int:
    """A number of games a cell can play: a whole number from 1 to MAX_GAMES_PER_CELL; a huge one is refused
    with what it would need (memory for its configs alone, time at heuristic speed)."""
    if isinstance(n_games, bool) or not isinstance(n_games, int):
        raise ValueError(f"{what} must be a whole number of games, got {n_games!r}")
    if n_games < 1:
        raise ValueError(f"{what} must be at least 1, got {n_games} (a cell without games measures nothing)")
    if n_games > MAX_GAMES_PER_CELL:
        memory = _size(n_games * SEED_BYTES, "bytes", [(1e12, "TB"), (1e9, "GB"), (1e6, "MB")])
        hours = n_games * HEURISTIC_GAME_S / 3600
        time = _size(hours, "hours", [(24 * 365, "years"), (24, "days")])
        raise ValueError(f"{what} {n_games} would need ~{memory} for its list of seeds alone and ~{time} even "
                         f"at heuristic speed; at most {MAX_GAMES_PER_CELL} games per cell (split it with repeats)")
    return n_games


def check_endpoint_mode(mode: object) -> None:
    """``on_endpoint_failure`` is ``wait`` or ``fallback`` (``toolkit.werewolf.game.GameConfig``)."""
    if mode not in ENDPOINT_MODES:
        raise ValueError(f"on_endpoint_failure must be one of {', '.join(ENDPOINT_MODES)}, not {mode!r}")


def check_werewolf_parameters(params: dict[str, object]) -> None:
    """What ``run_werewolf_cell`` would take, checked before any game: the preset exists, ``n_games`` and
    ``seed`` are whole numbers (``check_games``), ``seats`` names seats of the preset with spec strings, the
    models are strings. Raises ``ValueError`` (one line naming the parameter)."""
    preset = load_preset(str(params.get("preset", "classic7")))
    check_games(params.get("n_games", 20))
    if params.get("error_policy") is not None:
        parse_error_policy(params["error_policy"])
    check_endpoint_mode(params.get("on_endpoint_failure", "wait"))
    seed = params.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be a whole number, got {seed!r}")
    for key in ("model", "wolf_model", "village_model"):
        value = params.get(key)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{key} must be a model spec (a string), got {value!r}")
    seats = params.get("seats")
    if seats is None:
        return
    if not isinstance(seats, dict):
        raise ValueError(f"seats must map seat names to specs, e.g. {{Player3: random}}, got {seats!r}")
    for seat, spec in seats.items():
        if seat not in preset.seats:
            raise ValueError(f"seats: {seat!r} is not a seat of {preset.name} (seats are "
                             f"{preset.seats[0]}..{preset.seats[-1]})")
        if not isinstance(spec, str):
            raise ValueError(f"seats.{seat} must be a model spec (a string), got {spec!r}")


def play_capped(configs: Sequence[GameConfig], run: Run, budget: Budget | None, record: Record | None = None,
                **kwargs) -> None:
    """Play the games under the cap, the calls ``record`` holds answered from it (``unfinished_record``); raise
    ``BudgetReached`` (its line: spent and left) when the cap kept some from being played, and ``EndpointDown``
    (which endpoint and why) when a dead endpoint stopped them, so the cell is not taken for finished (a rerun
    plays what is missing, its recorded calls replayed)."""
    cap = CapReport()

    async def play() -> None:
        with replaying(record):
            await play_games(configs, run, budget=budget, cap=cap, keep_results=False, **kwargs)

    run_sync(play())
    if cap.endpoint is not None:
        raise EndpointDown(f"{cap.endpoint.removeprefix('interrupted (endpoint): ')} "
                           f"({plural(len(cap.interrupted), 'game')} unfinished)")
    if budget is not None and cap.reached:
        raise BudgetReached(budget.line(stopped=len(cap.stopped), skipped=len(cap.skipped)))


# Every table and column but the prompts: what run_werewolf_cell gives back (for a notebook's own analysis).
WITHOUT_PROMPTS = {t: None for t in TABLES} | {"calls": [c for c in TABLES["calls"] if c != "messages"]}
# The games columns a cell's summary reads (win rates, calls, tokens, cost and fallbacks per game).
SUMMARY_GAMES = ["game_id", "run_id", "seed", "preset", "winner", "win_reason", "days", "n_calls", "prompt_tokens",
                 "completion_tokens", "cost_usd", "n_fallbacks"]
# What the ballots are computed from: who voted for whom, and who was removed when (the living count the bar uses).
BALLOT_EVENTS = ["game_id", "seq", "day", "phase", "kind", "actor", "target"]


@dataclass
class CellSummary:
    """What a cell's notebook summarises: the games (``SUMMARY_GAMES``) and the village's decided day ballots
    counted per game, round and day (``votes``: ``toolkit.analysis.day_vote_counts``, a few numbers a game),
    from which ``vote_accuracy`` (``A.day_vote_accuracy``: the rates by round and day with their intervals,
    what ``plots.plot_vote_accuracy_by_day(counts=)`` draws) is the one ``A.vote_accuracy`` gives from the
    whole tables."""
    games: pd.DataFrame
    votes: pd.DataFrame

    @property
    def vote_accuracy(self) -> pd.DataFrame:
        from toolkit.analysis.metrics import day_vote_accuracy

        return day_vote_accuracy(self.votes)

    def __repr__(self) -> str:
        return f"CellSummary(games={len(self.games)}, votes={int(self.votes['ballots'].sum())} ballots)"


def cell_summary(results_dir: str | Path, batch_rows: int = 200_000, batch_games: int = 2_000) -> CellSummary:
    """The summary of a cell's complete games (as ``load`` keeps them) in memory flat in their number but for
    a few numbers a game: the games' ``SUMMARY_GAMES`` and their ballots counted per game, round and day.
    The events are read ``batch_rows`` rows at a time, twice: first only which row is each game's last, then
    the votes and removals, whose ballots are counted as soon as their games' rows are all read (a game's
    events are written while it plays: the rows of the games in flight wait, not the study's). A ballot
    depends on its own game only: the counts are those of the ballots ``A.votes`` makes from the whole
    tables. Each game's rules come from its config (a few KB), read ``batch_games`` games at a time."""
    with system_pool():
        return _cell_summary(results_dir, batch_rows, batch_games)


@contextmanager
def system_pool() -> Iterator[None]:
    """Arrow's buffers from the C library's allocator while inside: a buffer freed goes back where the next
    batch or frame can use it (Arrow's default pool, mimalloc, kept about 60 MB more of a cell's summary at
    5,000 games; the report's parts peaked lower with mimalloc, so this is the summary's alone)."""
    before = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(before)


def _cell_summary(results_dir: str | Path, batch_rows: int, batch_games: int) -> CellSummary:
    from toolkit.analysis.bars import game_rules  # (the analysis package: only when summarising)
    from toolkit.analysis.metrics import DAY_VOTES, day_vote_counts, ruled_votes

    games = load(results_dir, complete_games=True, columns={"games": SUMMARY_GAMES}).games
    ids = pd.CategoricalDtype(sorted(set(games["game_id"].dropna())))  # one dtype: every batch shares it
    names = pa.array(ids.categories, pa.string())
    rules = pd.concat([game_rules(part, part["game_id"])[["self_vote", "vote_abstain"]] for part in
                       scan(results_dir, "games", ["game_id", "preset", "config"], games=set(ids.categories),
                            rows=batch_games)] or [pd.DataFrame(columns=["self_vote", "vote_abstain"], dtype=bool)])
    rules = rules[~rules.index.duplicated()].reindex(ids.categories, fill_value=False)
    rules.index.name = "game_id"
    players = _rows(results_dir, "players", ["game_id", "seat", "role", "spec"], ids)
    seated = players["game_id"].cat.codes.to_numpy() if len(players) else np.zeros(0, int)
    files = Tables(distinct_runs(run_folders(results_dir)))
    last, start = np.full(len(ids.categories), -1, np.int64), 0  # each game's last events row
    for batch in files.batches("events", ["game_id"], batch_rows):
        code = pc.index_in(batch["game_id"].cast(pa.string()), value_set=names)
        where = np.flatnonzero(pc.is_valid(code).to_numpy(zero_copy_only=False))
        np.maximum.at(last, code.to_numpy(zero_copy_only=False)[where].astype(np.int64), start + where)
        start += batch.num_rows
    counts, pending, start = [], [], 0
    kinds = {"kind": ["vote", *removing_kinds()]}
    for batch in files.batches("events", BALLOT_EVENTS, batch_rows):
        pending.append(_categories(batch, BALLOT_EVENTS, ids, names, kinds))
        start += batch.num_rows
        done = (last >= 0) & (last < start)
        last[done] = -1  # counted once
        if done.any():
            counted = _counted(pending, done, ids, players, seated, rules, ruled_votes, day_vote_counts)
            counts += [counted] if counted is not None else []
            if len(counts) >= 4:  # a frame's own objects are kilobytes: a frame a batch would grow with the batches
                counts = [_concat(counts)]
    if not counts:
        counts = [pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(DAY_VOTES, [ids, "category", "int64", "int32",
                                                                                  "int32", float, float, "int32"])})]
    return CellSummary(games=games, votes=_concat(counts))


def _categories(batch: pa.Table, columns: list[str], ids: pd.CategoricalDtype, names: pa.Array,
                where: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """The batch's rows of the games of ``ids`` (``names``: their ids) whose columns hold one of ``where``'s
    values, their text as categories (``game_id``: codes of ``ids``; a few bytes a row)."""
    code = pc.index_in(batch["game_id"].cast(pa.string()), value_set=names)
    keep = pc.is_valid(code)
    for name, values in (where or {}).items():
        keep = pc.and_(keep, pc.is_in(batch[name].cast(pa.string()), value_set=pa.array(values, pa.string())))
    part = batch.filter(keep)
    frame = part.drop_columns(["game_id"]).to_pandas()
    frame["game_id"] = pd.Categorical.from_codes(code.filter(keep).to_numpy(zero_copy_only=False).astype(np.int32),
                                                 dtype=ids)
    return frame[columns].astype({c: "category" for c in columns if c not in ("game_id", "seq", "day")
                                  and part[c].type in (pa.string(), pa.null())})


def _counted(pending: list[pd.DataFrame], done: np.ndarray, ids: pd.CategoricalDtype, players: pd.DataFrame,
             seated: np.ndarray, rules: pd.DataFrame, ruled_votes, day_vote_counts) -> pd.DataFrame | None:
    """The ballot counts of the ``done`` games (a mask over ``ids``' codes), their rows taken out of
    ``pending`` (the read events of games not all read yet stay)."""
    events = _concat(pending)
    mine = done[events["game_id"].cat.codes.to_numpy()]
    ev = events[mine].drop_duplicates(list(KEYS["events"]))  # a row read twice (same key, as load says) once
    pending[:] = [events[~mine].reset_index(drop=True)]
    pl = players[done[seated]] if len(seated) else players
    if not len(ev) or not len(pl):
        return None
    ballots = ruled_votes(ev.astype(object).reset_index(drop=True), pl.astype(object).reset_index(drop=True),
                          lambda games: rules.loc[sorted(set(games))])
    counts = day_vote_counts(ballots.astype({"game_id": ids}))
    return counts.astype({"round": pd.CategoricalDtype(["first", "revote"]), "day": ev["day"].dtype})


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The frames one after the other, a column of categories kept one (its categories the union of the frames',
    sorted): ``pd.concat`` makes a column whose frames have different categories text, a Python string a row."""
    columns = {}
    for name in frames[0].columns:
        parts = [f[name] for f in frames]
        if all(isinstance(p.dtype, pd.CategoricalDtype) for p in parts) and len(parts) > 1:
            same = all(p.dtype == parts[0].dtype for p in parts)
            columns[name] = pd.Series(pd.concat(parts, ignore_index=True) if same else
                                      union_categoricals(parts, sort_categories=True), name=name)
        else:
            columns[name] = pd.concat(parts, ignore_index=True)
    return pd.DataFrame(columns)


def _rows(results_dir: str | Path, table: str, columns: list[str], games: pd.CategoricalDtype,
          where: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """``table``'s ``columns``, the rows of ``games`` (their ids, the categories of ``game_id``) whose columns
    hold one of ``where``'s values, read a batch at a time and kept with their text as categories (a few bytes a
    row); a row read twice (same key, as ``load`` says) kept once."""
    names = pa.array(games.categories, pa.string())
    parts = [_categories(batch, columns, games, names, where)
             for batch in Tables(distinct_runs(run_folders(results_dir))).batches(table, columns, 200_000)]
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    frame = _concat(parts).astype({c: "category" for c in columns if c not in ("seq", "day")})
    return frame.drop_duplicates(list(KEYS[table]), ignore_index=True)


@dataclass(frozen=True)
class CellCap:
    """What every cell shares, as keywords: ``max_usd``/``max_tokens``: a spending cap (``toolkit.llm.budget``)
    over ``spend_dir``'s ledger (a sweep's or tournament's folder, shared by its cells; default: the cell's own);
    at the cap nothing new starts, and what is in flight stops or finishes as ``at_cap`` says."""

    results_dir: str
    _: KW_ONLY
    max_usd: float | None = None
    max_tokens: int | None = None
    at_cap: str = "stop"
    spend_dir: str | None = None

    @classmethod
    def of(cls, cell: object, /, *where: object, **settings: object):
        """``cell`` with ``settings`` applied, or a new cell of its results folder, ``where`` and ``settings``
        (an unknown setting is a TypeError naming it)."""
        if not isinstance(cell, cls):
            return cls(cell, *where, **settings)  # type: ignore[arg-type]
        if where:
            raise TypeError(f"{cls.__name__} given with more positional settings ({', '.join(map(repr, where))}): "
                            "change its settings with keywords")
        return replace(cell, **settings)

    def settings(self) -> dict[str, object]:
        """What the run records as its config: every setting, the cell's own before the cap's."""
        return {f.name: getattr(self, f.name) for f in sorted(fields(self), key=lambda f: f.kw_only)}

    def cap(self) -> Budget | None:
        """The cell's spending cap, None without one (a dollar cap is refused for a model without a price)."""
        return Budget.at(self.spend_dir or self.results_dir, self.max_usd, self.max_tokens, self.at_cap)


@dataclass(frozen=True)
class CellLimits(CellCap):
    """What a werewolf cell and a tournament cell share: the spending cap (``CellCap``), and as keywords
    ``error_policy``: ``fallback``, ``forfeit`` or ``eliminate_after:N`` (None: the preset's);
    ``on_endpoint_failure``: ``wait`` (the endpoint's failures are not the seats'; a dead endpoint stops the cell
    with ``EndpointDown``) or ``fallback`` (Kaggle-style: they are the seats' failed decisions, judged by the error
    policy; a dead endpoint still stops the cell)."""

    _: KW_ONLY
    error_policy: str | None = None
    on_endpoint_failure: str = "wait"

    def budget(self) -> Budget:
        """The cell's spending cap and ledger. Without a cap the ledger is kept all the same: what the study
        paid, calls in flight at a kill included."""
        return self.cap() or Budget(Path(self.spend_dir or self.results_dir) / LEDGER, at_cap=self.at_cap)


@dataclass(frozen=True)
class WerewolfCell(CellLimits):
    """One werewolf cell's settings (a sweep cell's parameters, the werewolf notebook's), recorded as its run's
    config. ``n_games`` seeded games from ``seed``; ``model`` plays every seat unless ``wolf_model`` or
    ``village_model`` (a side's seats) or ``seats`` (a seat: ``{"Player3": "random"}``) says otherwise; the
    spending cap and failure policies: ``CellLimits``."""

    preset: str = "classic7"
    n_games: int = 20
    seed: int = 0
    model: str = "heuristic"
    wolf_model: str | None = None
    village_model: str | None = None
    seats: dict[str, str] | None = None
    reflection: bool = False
    experience: bool = False
    temperature: float | None = None
    concurrency: int = 16  # games played at once (model calls are capped per endpoint too)
    experiment: str = "werewolf"
    progress: bool = False  # a progress bar of the games

    def settings(self) -> dict[str, object]:
        """What the run records as its config (and ``check_werewolf_parameters`` checks): every setting but the
        progress bar."""
        return {k: v for k, v in super().settings().items() if k != "progress"}

    def game_config(self) -> GameConfig:
        """Every game's configuration but its seed."""
        pool = ExperiencePool(Path(self.results_dir) / "experience" / "pool.jsonl", version=self.experiment) \
            if self.experience else None
        side_models = {side: m for side, m in (("werewolves", self.wolf_model), ("village", self.village_model))
                       if m}
        return GameConfig(preset=self.preset, model=self.model, seats=dict(self.seats or {}), side_models=side_models,
                          reflection=self.reflection, experience=self.experience, temperature=self.temperature,
                          experience_pool=pool, error_policy=self.error_policy,
                          on_endpoint_failure=self.on_endpoint_failure)

    def specs(self) -> list[str]:
        return [m for m in (self.model, self.wolf_model, self.village_model, *(self.seats or {}).values()) if m]


def run_werewolf_cell(cell: WerewolfCell | str, **settings: object) -> Results:
    """``play_werewolf_cell``, then the cell's tables without the prompts (``calls.messages``, most of a study's
    bytes: ``load(results_dir)`` reads them). A large cell's summary reads far less: ``cell_summary``."""
    cell = WerewolfCell.of(cell, **settings)
    play_werewolf_cell(cell)
    return load(cell.results_dir, complete_games=True, columns=WITHOUT_PROMPTS)


def play_werewolf_cell(cell: WerewolfCell | str, **settings: object) -> None:
    """Play a cell's seeded games into its ``results_dir`` (finished seeds skipped): a ``WerewolfCell``, or its
    results folder and settings as keywords (``play_werewolf_cell("results/x", n_games=20, model="random")``; with
    a ``WerewolfCell``, keywords change its settings; an unknown one is a TypeError naming it)."""
    cell = WerewolfCell.of(cell, **settings)
    check_werewolf_parameters(cell.settings())  # a seat the preset lacks would be ignored: every game all-default
    budget = cell.budget()
    with cell_lock(cell.results_dir):
        done = finished_seeds(cell.results_dir)
        todo = [s for s in range(cell.seed, cell.seed + cell.n_games) if s not in done]
        if not todo:
            return
        configs = SeededConfigs(cell.game_config(), todo)
        bar = tqdm(total=len(todo), desc="games") if cell.progress else None
        try:
            record = unfinished_record(cell.results_dir)
            with Run(cell.results_dir, cell.experiment, config=cell.settings(), seed=cell.seed,
                     specs=cell.specs()) as run:
                play_capped(configs, run, budget, record=record, concurrency=cell.concurrency,
                            on_result=(lambda _: bar.update()) if bar else None)
        finally:
            if bar:
                bar.close()


def tasks_done(sessions: pd.DataFrame | None) -> set[str]:
    """The tasks a cell's ``sessions`` rows say were run: an ``interrupted`` session (Ctrl-C) is not one, so the
    next run of the cell runs its task again."""
    if sessions is None or not len(sessions):
        return set()
    return set(sessions.loc[sessions["ended_by"] != "interrupted", "task"])


@dataclass(frozen=True)
class EngineerCell(CellCap):
    """One engineer cell's settings (``experiments/engineer.ipynb``'s parameters), recorded as its run's config:
    the suite's ``tasks`` (None: all) run by ``model`` (``{task}``: each task's folder) for at most ``max_steps``
    steps (None: each task's own) in ``environment`` (None: the best one here); the spending cap: ``CellCap`` (at
    the cap no new session starts, and the one in flight finishes whatever ``at_cap`` says: a session cut mid-way
    would be a wrong result for its task; ``budget_usd`` bounds one session)."""

    tasks: list[str] | None = None
    model: str = "scripted:{task}/good.yaml"
    max_steps: int | None = None
    experiment: str = "engineer"
    environment: str | None = None


def run_engineer_cell(cell: EngineerCell | str, **settings: object) -> Results:
    """Run each task's session into the cell's ``results_dir`` (tasks with a session there already are skipped;
    an interrupted one is run again: ``tasks_done``): an ``EngineerCell``, or its results folder and settings as
    keywords (with a cell, keywords change its settings; an unknown one is a TypeError naming it). A dollar cap on
    a model without a price is refused before any session; at the cap ``BudgetReached`` says what was spent and
    what is left, and a rerun with a higher cap runs the tasks not run yet. An ``environment`` that cannot be
    chosen here is refused in one line before anything is written."""
    cell = EngineerCell.of(cell, **settings)
    problem = kinds.refusal(cell.environment) if cell.environment is not None else None
    if problem:
        raise EnvironmentUnavailable(problem)
    budget = cell.cap()
    with cell_lock(cell.results_dir):
        existing = load(cell.results_dir, complete_games=False).sessions if Path(cell.results_dir).exists() else None
        done = tasks_done(existing)
        todo = [t for t in load_tasks(names=cell.tasks) if t.task not in done]
        if budget is not None:
            budget.check_prices(get_model(cell.model.replace("{task}", str(t.folder))) for t in todo)
        if todo:
            with Run(cell.results_dir, cell.experiment, config=cell.settings(),
                     specs=[cell.model] if "{task}" not in cell.model else ()) as run:
                for i, task in enumerate(todo):
                    if budget is not None and budget.exhausted():
                        raise BudgetReached(budget.line(skipped=len(todo) - i, unit="session"))
                    if cell.max_steps:
                        task.max_steps = cell.max_steps
                    run_sync(run_task(task, cell.model, run, Path(cell.results_dir) / "workspaces",
                                      cell.environment, budget))
    return load(cell.results_dir)
