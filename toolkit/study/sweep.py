"""Sweeps: one papermill execution of a parameterised notebook per grid cell, in separate processes
(locally or on a Dask cluster), each writing its executed notebook and tables under
``results/<sweep>/<cell>/``. Finished cells are skipped on a rerun (and a cell skips its finished games),
a failed cell is recorded with its error and does not stop the others, and the sweep ends with
``summary.parquet`` and plots. The sweep file, its checks and the cells' folders: docs/experiments.md.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import os
import re
import socket
import sys
import threading
import time
import traceback
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator

import pandas as pd
from tqdm.auto import tqdm

from toolkit import analysis as A
from toolkit.analysis import plots as P
from toolkit.llm.llama_server import study_server
from toolkit.llm.shared_limits import ENV, shared, study_limits
from toolkit.record.load import LoadWarning, games_with_params, load
from toolkit.record.tables import TABLES
from toolkit.core import data, lifeline
from toolkit.core.plugins import ENV as PLUGINS_ENV, load as load_plugins, names as plugin_names
from toolkit.core.files import FileError, SweepFile, did_you_mean, load_file, one_line
from toolkit.core.printable import plural
from toolkit.core.secrets import Redactor, redact, redact_obj, register_carried
from toolkit.llm.budget import Budget, BudgetError, BudgetReached
from toolkit.llm.health import LINES_ENV, EndpointDown
from toolkit.study.executors import EXECUTORS
from toolkit.study.experiments import check_werewolf_parameters
from toolkit.study.shards import NOT_STARTED, SHARD_GAMES, cell_status, shardable, shards
from toolkit.werewolf.engine.preset import preset_models

REPO = data.root()  # relative notebook paths start here: the repository, or the installed package's data


WEREWOLF_PARAMETERS = {"preset", "n_games", "seed", "seats"}  # run_werewolf_cell's: its parameters are checked


@dataclass
class Cell:
    sweep: str
    cell_id: str
    notebook: str
    folder: str
    parameters: dict[str, Any]
    grid_values: dict[str, Any]
    limits: str | None = None  # where the study's workers share their endpoints' limits (run_sweep sets it)
    plugins: tuple[str, ...] = ()  # the caller's plug-ins (toolkit.core.plugins), loaded by the worker and kernel


def _slug(value: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(value)).strip("-.")[:40] or "x"


def named_models(params: dict[str, Any], models: dict[str, str]) -> dict[str, Any]:
    """The parameters with each value (or seats entry) that names a model of the file's ``models:`` replaced by
    its spec."""
    if not models:
        return params
    out = {k: models.get(v, v) if isinstance(v, str) else v for k, v in params.items()}
    if isinstance(out.get("seats"), dict):
        out["seats"] = {seat: models.get(v, v) if isinstance(v, str) else v for seat, v in out["seats"].items()}
    return out


def cell_id(chosen: dict[str, Any]) -> str:
    """A readable prefix (values cut to 40 characters, secrets masked: a model URL's password never names a
    folder) and a short hash of the full values, so two cells that differ only after the cut still get their own
    folders."""
    if not chosen:
        return "all"
    readable = "__".join(f"{_slug(k)}-{_slug(redact(str(v)))}" for k, v in chosen.items())[:150].rstrip("-_.")
    digest = hashlib.sha1(json.dumps(chosen, sort_keys=True, default=repr).encode()).hexdigest()[:8]
    return f"{readable}__{digest}"


UNKNOWN = object()  # a parameter whose default is an expression: any value passes


def notebook_parameters(notebook: Path, source: str | Path = "sweep") -> dict[str, Any]:
    """The names in the notebook's ``parameters`` cell, each with its default's value (``UNKNOWN`` where the
    default is not a literal). A file that is not a Jupyter notebook is a ``FileError``: papermill would run
    it anyway and fail every cell."""
    import nbformat
    import papermill  # its Jupyter stack takes seconds to import: only sweeps need it, not every CLI command

    try:
        nbformat.validate(nbformat.read(str(notebook), as_version=4))
        found = papermill.inspect_notebook(str(notebook))
    except Exception as exc:  # NotJSONError, ValidationError, a missing key, a cell that is not code ...
        raise FileError(f"{source}: notebook {notebook.name} is not a Jupyter notebook "
                        f"({one_line(exc, 120)})") from None
    out: dict[str, Any] = {}
    for name, info in found.items():
        try:
            out[name] = ast.literal_eval(info.get("default") or "")
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            out[name] = UNKNOWN
    return out


def check_type(key: str, value: Any, default: Any, source: str | Path, notebook: str) -> None:
    """A value the notebook's default has the type of (None there: anything; a float takes a whole number;
    a bool is not a number)."""
    if default is None or default is UNKNOWN:
        return
    expected = type(default)
    ok = isinstance(value, expected) and (isinstance(value, bool) == isinstance(default, bool))
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        raise FileError(f"{source}: {key} = {one_line(repr(value), 60)} is a {type(value).__name__}, but "
                        f"{notebook}'s parameters cell sets {key} = {one_line(repr(default), 40)} "
                        f"(a {expected.__name__})")


def load_sweep(path: str | Path, results_root: str | Path = "results") -> tuple[dict[str, Any], list[Cell]]:
    """The sweep's spec and cells. Raises ``FileError`` (one line) for anything wrong in the file: unknown
    keys, empty or malformed grids, a name that would leave the results root, parameters the notebook
    does not have, cells that would share a folder."""

    sweep = load_file(path, SweepFile, "sweep")
    notebook = Path(sweep.notebook)
    if not notebook.is_absolute():
        notebook = (REPO / notebook) if (REPO / notebook).exists() else Path(path).parent / notebook
    if not notebook.is_file():
        raise FileError(f"{path}: notebook {sweep.notebook} not found (relative paths start at the repository "
                        "or the sweep file's folder)")
    known = notebook_parameters(notebook, path)
    for key in [*sweep.parameters, *sweep.grid]:
        if key not in known:
            raise FileError(f"{path}: {key!r} is not a parameter of {notebook.name}"
                            f"{did_you_mean(key, list(known))}; its parameters are {', '.join(known)}")
    for key, value in sweep.parameters.items():
        check_type(key, value, known[key], path, notebook.name)
    for key, values in sweep.grid.items():
        for value in values:
            check_type(key, value, known[key], path, notebook.name)
    root = Path(results_root).resolve()
    if root.exists() and not root.is_dir():
        raise FileError(f"--out {results_root}: is a file, not a folder")
    register_carried([sweep.parameters, sweep.grid])  # a URL's password in a spec: masked in all this writes
    spec = redact_obj(sweep.model_dump())
    keys = list(sweep.grid)
    cells: list[Cell] = []
    for r in range(sweep.repeats):
        for values in itertools.product(*(sweep.grid[k] for k in keys)):
            chosen = dict(zip(keys, values))
            cid = cell_id(chosen) + (f"__rep{r}" if sweep.repeats > 1 else "")
            folder = root / sweep.name / cid
            params = named_models({**sweep.parameters, **chosen, "results_dir": str(folder)}, sweep.models)
            if r:
                params["seed"] = int(params.get("seed", 0)) + 10000 * r
            cells.append(Cell(sweep.name, cid, str(notebook.resolve()), str(folder), params, chosen))
    if WEREWOLF_PARAMETERS <= set(known):  # a werewolf cell (experiments/werewolf.ipynb or a copy of it)
        for cell in cells:
            try:
                check_werewolf_parameters({k: v for k, v in cell.parameters.items() if k in known})
            except ValueError as exc:
                raise FileError(f"{path}: cell {cell.grid_values or cell.cell_id}: {one_line(exc)}") from None
    seen: dict[str, Cell] = {}
    for cell in cells:
        if cell.folder in seen:
            raise FileError(f"{path}: cells {seen[cell.folder].grid_values} and {cell.grid_values} would share "
                            f"the folder {cell.cell_id}; remove the duplicate grid value")
        seen[cell.folder] = cell
    return spec, cells


ENDPOINT_LINES = "endpoint.log"  # in a cell's folder: its kernel's stall lines, relayed to the sweep's stderr
STARTED = "STARTED"  # in a cell's (or shard's) folder: written as it starts (`unfinished`)


PLUGINS_FAILED = "PLUGIN_FAILED.txt"  # in a cell's folder: the line of a plug-in its kernel could not load


def kernel_logged_to(path: Path, limits: str | None = None, plugins: tuple[str, ...] = ()) -> type:
    """A kernel manager whose kernel writes its own stdout and stderr to ``path`` (and shares its endpoints'
    limits through ``limits`` unless this process has ``TOOLKIT_SHARED_LIMITS`` of its own), and its endpoints'
    stall lines to ``ENDPOINT_LINES`` beside it (``toolkit.llm.health``; ``relayed`` says them), sends no request
    once this process is gone (``toolkit.core.lifeline``: a killed sweep's worker), and loads the plug-ins first:
    ``plugins`` (the study caller's) and this worker's own (``toolkit.core.plugins``), a failure written to
    ``PLUGINS_FAILED`` beside it. The kernel logs
    "KeyboardInterrupt caught in kernel." as an ERROR when it is shut down after a successful cell: noise on
    the sweep's terminal, kept in the cell's folder instead (with anything else the kernel says)."""
    from jupyter_client.manager import AsyncKernelManager

    named = ",".join(dict.fromkeys([*plugins, *plugin_names()]))
    # lifeline first: the kernel takes this process's pid out of its environment before anything else runs
    load = ("--IPKernelApp.exec_lines=import toolkit.core.lifeline; import toolkit.core.plugins; "
            f"toolkit.core.plugins.load_in_kernel({str(path.parent / PLUGINS_FAILED)!r})")

    class KernelLogged(AsyncKernelManager):
        async def start_kernel(self, **kw):
            env = {**kw.pop("env", os.environ), ENV: os.environ.get(ENV) or limits or "",
                   LINES_ENV: str(path.parent / ENDPOINT_LINES), lifeline.ENV: str(os.getpid()), PLUGINS_ENV: named}
            kw["extra_arguments"] = [*kw.get("extra_arguments", []), load]
            with open(path, "ab") as log:  # the kernel process holds its own copy of the descriptor
                return await super().start_kernel(stdout=log, stderr=log, env=env, **kw)

    return KernelLogged


def _budget(parameters: dict[str, Any]) -> Budget | None:
    return Budget.at(parameters.get("spend_dir") or parameters["results_dir"], parameters.get("max_usd"),
                     parameters.get("max_tokens"), parameters.get("at_cap") or "stop")


MASKED = "toolkit-masked:"  # papermill writes the executed notebook through MaskedHandler


class MaskedHandler:
    """Papermill's I/O for the executed notebook: every save (papermill saves after each cell, the injected
    parameters cell first) is masked (``toolkit.core.secrets``) before it reaches the disk, so a URL password in
    a parameter, or echoed by an endpoint into a cell's output, is never written, even by a cell killed
    halfway."""

    @staticmethod
    def write(buf: str, path: str) -> None:
        path = path[len(MASKED):]
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(Redactor()(buf.replace(MASKED, "")))  # the notebook's metadata names the plain path
        os.replace(tmp, path)

    @staticmethod
    def read(path: str) -> str:
        return Path(path[len(MASKED):]).read_text(encoding="utf-8")

    @staticmethod
    def pretty_path(path: str) -> str:
        return path[len(MASKED):]

    @staticmethod
    def listdir(path: str) -> list[str]:
        return [str(p) for p in Path(path[len(MASKED):]).iterdir()]


def execute_cell(cell: Cell) -> dict[str, Any]:
    """Run one cell's notebook with papermill (its kernel is a separate process). Never raises. A cell the
    spending cap stopped (or kept from starting) is ``capped``: not done, so a rerun with a higher cap plays
    the rest of it. The secrets the cell's parameters carry (a model URL's password) are registered in this
    worker first, so its notebook, status and error are written masked; the kernel registers them itself when
    it parses the spec. ``cell.limits``: where the study's workers share their endpoints' limits
    (``toolkit.llm.shared_limits.study_limits``), given to the kernel unless this worker has its own."""
    import papermill  # its Jupyter stack takes seconds to import: only sweeps need it, not every CLI command
    from papermill.iorw import papermill_io

    if not any(scheme == MASKED for scheme, _ in papermill_io._handlers):
        papermill_io.register(MASKED, MaskedHandler)
    register_carried(cell.parameters)
    folder = Path(cell.folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / STARTED).touch()  # it began (run_sweep tells a cell stopped while it ran from one never started)
    started = time.time()
    status = {"cell_id": cell.cell_id, **{f"param.{k}": v for k, v in cell.grid_values.items()}, "capped": False,
              "where": f"{socket.gethostname()}:{os.getpid()}"}  # which machine and worker ran it
    budget = _budget(cell.parameters)
    if budget is not None and budget.exhausted():  # no kernel started for a cell that could play nothing
        status.update(ok=False, capped=True, error=budget.line(), wall_s=0.0)
        return status
    note = folder / PLUGINS_FAILED
    note.unlink(missing_ok=True)
    try:
        load_plugins(cell.plugins)  # the caller's: a Dask worker has neither its environment nor its imports
        papermill.execute_notebook(cell.notebook, MASKED + str((folder / "notebook.ipynb").resolve()),
                                   parameters=cell.parameters,
                                   kernel_name="python3", progress_bar=False, cwd=str(REPO),
                                   kernel_manager_class=kernel_logged_to(folder / "kernel.log", cell.limits,
                                                                         cell.plugins))
        status.update(ok=True, error=None)
        (folder / "FAILED.json").unlink(missing_ok=True)
    except papermill.PapermillExecutionError as exc:
        if exc.ename == BudgetReached.__name__:
            status.update(ok=False, capped=True, error=one_line(exc.evalue))
        elif exc.ename == EndpointDown.__name__:  # the study stops: no other cell starts (run_sweep)
            status.update(ok=False, endpoint=one_line(exc.evalue, 1000), error=one_line(exc.evalue, 1000))
        else:  # any other error in the notebook: recorded like the rest (re-raising it ended the whole sweep)
            _failed(status, folder, exc)
    except Exception as exc:  # recorded: the other cells go on
        _failed(status, folder, exc)
    if note.exists():  # the kernel could not load a plug-in: the cell failed on that, whatever the notebook did
        status.update(ok=False, error=f"{note.read_text(encoding='utf-8').strip()} (in the cell's kernel)")
        (folder / "FAILED.json").write_text(redact(json.dumps(status)))
    status = redact_obj(status)
    status["wall_s"] = round(time.time() - started, 2)
    if status["ok"]:
        (folder / "DONE.json").write_text(json.dumps(status))
    return status


def _failed(status: dict[str, Any], folder: Path, exc: Exception) -> None:
    """A failed cell's status and its FAILED.json (error, traceback, where the kernel's own log is). An error the
    notebook raised is its one line (``ValueError: unknown model spec ...``), not papermill's message (the
    kernel's whole traceback, which made the summary table printed at the end of a sweep unreadable); the
    traceback is in FAILED.json."""
    what = (f"{exc.ename}: {exc.evalue}" if hasattr(exc, "ename") and hasattr(exc, "evalue") else
            f"{type(exc).__name__}: {str(exc)[-2000:]}")
    status.update(ok=False, error=f"{one_line(what, 2000)} (the kernel's own log: {folder / 'kernel.log'})")
    (folder / "FAILED.json").write_text(redact(json.dumps({**status, "traceback": traceback.format_exc()[-4000:]})))


CAP_PARAMETERS = ("max_usd", "max_tokens", "at_cap", "spend_dir")


def cell_spec_keys(cell: Cell) -> dict[str, str]:
    """Every model spec a cell plays → the parameter naming it: its parameters named ``*model`` or ``spec``, its
    seats' specs (a seat is a spec or a mapping with ``spec``: ``seats.Player3``), its tournament schedule's."""
    p, found = cell.parameters, {}
    try:  # the preset's models: block (a preset that cannot be read was refused by load_sweep)
        named = preset_models([p["preset"]]) if isinstance(p.get("preset"), str) else {}
    except ValueError:
        named = {}
    for key, value in p.items():
        if isinstance(value, str) and (str(key).endswith("model") or key == "spec"):
            found.setdefault(named.get(value, value), str(key))
    for seat, value in p["seats"].items() if isinstance(p.get("seats"), dict) else ():
        spec = value.get("spec") if isinstance(value, dict) else value
        if isinstance(spec, str):
            found.setdefault(named.get(spec, spec), f"seats.{seat}")
    if isinstance(p.get("schedule"), str) and isinstance(p.get("cell"), str) and Path(p["schedule"]).is_file():
        plan = pd.read_parquet(p["schedule"], columns=["cell", "spec"])
        for spec in plan.loc[plan["cell"] == p["cell"], "spec"]:
            found.setdefault(str(spec), "schedule")
    return found


def cell_specs(cell: Cell) -> set[str]:
    """Every model spec a cell plays (``cell_spec_keys``)."""
    return set(cell_spec_keys(cell))


def apply_cap(spec: dict[str, Any], cells: list[Cell], path: str | Path, results_root: str | Path,
              options: SweepOptions) -> Budget | None:
    """The sweep's spending cap (the options over the file's keys), put into every cell's parameters with
    the sweep folder's ledger; None without a cap. Refused in one line (``FileError``) when the notebook cannot
    take it or a model's price is unknown."""
    from toolkit.llm import get_model

    max_usd = options.max_usd if options.max_usd is not None else spec.get("max_usd")
    max_tokens = options.max_tokens if options.max_tokens is not None else spec.get("max_tokens")
    at_cap = options.at_cap or spec.get("at_cap") or "stop"
    try:
        budget = Budget.at(Path(results_root) / spec["name"], max_usd, max_tokens, at_cap)
    except BudgetError as exc:
        raise FileError(f"{path}: {exc}") from None
    if budget is None:
        return None
    known = notebook_parameters(Path(cells[0].notebook), path) if cells else {}
    missing = [k for k in CAP_PARAMETERS if k not in known]
    if missing:
        raise FileError(f"{path}: a spending cap needs the notebook to take {', '.join(missing)} (as "
                        "experiments/werewolf.ipynb does); this one does not, so the cap could not reach its games")
    specs = sorted(set().union(*(cell_specs(c) for c in cells)) - {""})
    try:
        budget.check_prices(get_model(s) for s in specs if "{task}" not in s and not s.startswith("local"))
    except BudgetError as exc:
        raise FileError(f"{path}: {exc}") from None
    for cell in cells:
        cell.parameters.update(max_usd=budget.max_usd, max_tokens=budget.max_tokens, at_cap=budget.at_cap,
                               spend_dir=str(budget.ledger.parent.resolve()))
    return budget


@dataclass(frozen=True)
class SweepOptions:
    """How a sweep runs (``run_sweep``'s and ``run_tournament``'s keywords, the commands' options): ``workers``
    cells at once on the ``executor`` (``toolkit.study.executors``; ``scheduler``: a running Dask scheduler's
    address); a spending cap (``max_usd``/``max_tokens``, ``at_cap``: over the file's keys) shared by every cell;
    a werewolf cell of more than ``shard_games`` games (else the file's ``shard_games``, else ``SHARD_GAMES``) runs
    as shards that any worker may play (``toolkit.study.shards``)."""

    workers: int = 1
    executor: str = "local"
    scheduler: str | None = None
    progress: bool = True
    max_usd: float | None = None
    max_tokens: int | None = None
    at_cap: str | None = None
    shard_games: int | None = None


def run_sweep(path: str | Path, *, results_root: str | Path = "results", **options: Any) -> pd.DataFrame:
    """Run every cell not done yet, as ``options`` say (``SweepOptions``; an unknown one is a TypeError naming
    it, before anything is written; everything after ``path`` by keyword: ``run_sweep("s.yaml", 4)`` is a
    TypeError, not a results folder named 4); the summary has one row per cell. With a spending cap no new game starts
    once it is reached: the cells it stopped are ``capped`` (not done), ``summary.attrs["budget"]`` is the line
    saying what was spent and what is left, and a rerun with a higher cap plays only what is missing."""
    o = SweepOptions(**options)
    spec, cells = load_sweep(path, results_root)
    budget = apply_cap(spec, cells, path, results_root, o)
    todo = [c for c in cells if not (Path(c.folder) / "DONE.json").exists()]
    statuses = [json.loads((Path(c.folder) / "DONE.json").read_text()) for c in cells if c not in todo]
    known = set(notebook_parameters(Path(todo[0].notebook), path)) if todo else set()
    size = o.shard_games or spec.get("shard_games") or SHARD_GAMES
    units = {c.cell_id: shards(c, size) if shardable(c, known) else [c] for c in todo}
    parts = {u.cell_id: json.loads((Path(u.folder) / "DONE.json").read_text())
             for us in units.values() for u in us if len(us) > 1 and (Path(u.folder) / "DONE.json").exists()}
    run = [u for us in units.values() for u in us if u.cell_id not in parts]
    total = len(cells) - len(todo) + sum(len(us) for us in units.values())
    bar = tqdm(total=total, initial=total - len(run), desc=spec["name"], unit="cell" if total == len(cells) else
               "piece", disable=not o.progress)
    # One llama-server for every cell that uses the `local` model, owned by this process (not on a remote
    # cluster, whose workers cannot reach 127.0.0.1 here: there each cell starts its own).
    found: list[dict] = []
    # One limit per endpoint for every worker: given to each cell (a worker on another machine inherits nothing)
    limits = study_limits(Path(results_root) / spec["name"] / ".limits", o.scheduler)
    run = [replace(u, limits=limits, plugins=tuple(plugin_names())) for u in run]  # the plug-ins too
    for u in run:  # what a cell writes when it starts (execute_cell): its absence says it never did
        (Path(u.folder) / STARTED).unlink(missing_ok=True)
    try:
        with study_server(set().union(*(cell_specs(c) for c in todo)) if o.scheduler is None else ()), shared(limits), \
                relayed([Path(u.folder) / ENDPOINT_LINES for u in run], lambda line: tqdm.write(line, file=sys.stderr)):
            for status in EXECUTORS.one(o.executor).resolve("cells")(execute_cell, run, o.workers, o.scheduler):
                found.append(status)
                bar.update()
    finally:  # a cell whose shards all ended is done (its DONE.json) even when the sweep is stopped
        parts.update((s["cell_id"], s) for s in found)
        down = next((s["endpoint"] for s in found if s.get("endpoint")), None)
        statuses += [cell_status(c, [parts.get(u.cell_id) or unfinished(u, down) for u in units[c.cell_id]])
                     for c in todo]
    bar.close()
    summary = summarise(spec, cells, statuses, Path(results_root) / spec["name"])
    if budget is not None:
        capped = int(summary["capped"].fillna(False).astype(bool).sum()) if "capped" in summary else 0
        summary.attrs["budget"] = budget.line() + (f"; {plural(capped, 'cell')} stopped at the cap (a rerun with a "
                                                   "higher cap plays the rest)" if capped else "")
        summary.attrs["spent"] = budget.spent_text()
    return summary


def unfinished(unit: Cell, down: str | None) -> dict[str, Any]:
    """The status of a cell (or shard) that returned none, by what happened to it: never started (no ``STARTED``
    mark of this run: ``NOT_STARTED``), or stopped while it ran (a Dask worker's cell cancelled when an endpoint
    died, ``down``: counted with the cells the endpoint stopped; a rerun resumes it)."""
    if not (Path(unit.folder) / STARTED).exists():
        return {"cell_id": unit.cell_id, **NOT_STARTED}
    if down is not None:
        return {"cell_id": unit.cell_id, "ok": False, "endpoint": down, "error": f"stopped while it ran: {down}"}
    return {"cell_id": unit.cell_id, "ok": False, "error": "stopped while it ran"}


def state(status: dict[str, Any]) -> str:
    """What became of a cell, in the per-cell table's words: ``ok``, ``capped``, ``interrupted (endpoint)`` (an
    endpoint's death stopped it), ``not started`` or ``failed``."""
    if status.get("ok"):
        return "ok"
    if status.get("capped"):
        return "capped"
    if status.get("endpoint"):
        return "interrupted (endpoint)"
    return "not started" if status.get("not_started") else "failed"


@contextmanager
def relayed(files: list[Path], say: Any, every_s: float = 0.5) -> Iterator[None]:
    """While the block runs, every line a cell's kernel appends to its file (``ENDPOINT_LINES``: an endpoint's
    stall) is said once through ``say`` (the sweep's stderr, above its progress bar), within ``every_s``; the
    lines already there (an earlier run's) are not. A kernel's stderr reaches only its notebook, so a study on a
    stalled endpoint showed nothing but its progress bar (review42 s16 F5)."""
    read = {f: f.stat().st_size if f.exists() else 0 for f in files}

    def tick() -> None:
        for f, at in read.items():
            try:
                with open(f, "rb") as h:
                    if os.fstat(h.fileno()).st_size < at:  # made again, shorter: its lines are new
                        at = 0
                    h.seek(at)
                    chunk = h.read()
            except OSError:  # not there yet, or not readable now: the next tick tries again (the thread lives on)
                continue
            whole = chunk[:chunk.rfind(b"\n") + 1]  # a line still being written waits for the next tick
            read[f] = at + len(whole)
            for line in whole.decode("utf-8", "replace").splitlines():
                say(line)

    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every_s):
            tick()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        tick()


# What the summary reads of each cell (never the prompts: a cell of 100,000 games holds gigabytes of them), and of
# the whole sweep for its plots (the games but their configs: ~1.7 KB of JSON a game that no plot reads; a cell's
# parameters come from its runs row).
CELL_COLUMNS = {"games": ["game_id", "winner", "n_calls", "n_fallbacks"], "sessions": ["session_id", "success"],
                "tool_calls": ["session_id"]}
PLOT_COLUMNS = {"runs": None, "games": [c for c in TABLES["games"] if c != "config"], "sessions": None,
                "tool_calls": None}


def summarise(spec: dict[str, Any], cells: list[Cell], statuses: list[dict], folder: Path) -> pd.DataFrame:
    by_id = {s["cell_id"]: s for s in statuses}
    rows = []
    for cell in cells:
        status = by_id.get(cell.cell_id, NOT_STARTED)
        row = {"cell_id": cell.cell_id, **redact_obj(cell.grid_values), "status": state(status), "ok": status.get("ok"),
               "error": status.get("error"), "endpoint": status.get("endpoint"),
               "capped": bool(status.get("capped")), "not_started": bool(status.get("not_started")),
               "wall_s": status.get("wall_s")}
        if Path(cell.folder).exists():
            tables = load(cell.folder, complete_games=True,
                          columns={**CELL_COLUMNS, "sessions": [*CELL_COLUMNS["sessions"], "ended_by"]})
            if len(tables.games):
                wins = A.win_rates(tables.games).set_index("side")
                row.update(games=len(tables.games), village_win_rate=float(wins.loc["village", "rate"]),
                           village_ci_low=float(wins.loc["village", "ci_low"]),
                           village_ci_high=float(wins.loc["village", "ci_high"]),
                           calls_per_game=float(tables.games["n_calls"].mean()),
                           fallbacks=int(tables.games["n_fallbacks"].sum()))
            if len(tables.sessions):  # an interrupted session (Ctrl-C) is not a session run, as in tasks_done
                interrupted = int((tables.sessions["ended_by"] == "interrupted").sum())
                done = tables.sessions["success"].dropna().astype(bool)
                row.update(sessions=len(tables.sessions) - interrupted, interrupted=interrupted,
                           success_rate=float(done.mean()) if len(done) else None, tool_calls=len(tables.tool_calls))
        rows.append(row)
    summary = pd.DataFrame(rows)
    folder.mkdir(parents=True, exist_ok=True)
    summary.to_parquet(folder / "summary.parquet", index=False)
    with warnings.catch_warnings():  # what it left out was said for each cell above (review s19, 7: said twice)
        warnings.simplefilter("ignore", LoadWarning)
        everything = load(folder, complete_games=True, columns=PLOT_COLUMNS)
    grid_keys = list(spec["grid"])
    if len(everything.games):
        games = games_with_params(everything)
        P.save(P.plot_win_rates(games, [k for k in grid_keys if k in games.columns],
                                title=f"{spec['name']}: win rates by cell"), folder / "win_rates.png")
    if len(everything.sessions):
        P.save(P.plot_tool_usage(everything.tool_calls, everything.sessions), folder / "tool_usage.png")
    return summary
