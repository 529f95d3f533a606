"""Exports the field's own tools read, and a replay a person can look at.

One module per target: ``kaggle`` (Kaggle Game Arena werewolf replay JSON), ``inspect_log`` (an Inspect AI
``EvalLog``), ``mini`` (mini-swe-agent ``.traj.json``), ``otel`` (OpenTelemetry GenAI spans, OTLP JSON or
OTLP/HTTP), ``hf`` (a Hugging Face ``datasets`` folder), ``html`` (the self-contained replay page). Each reads
the tables ``toolkit.record.load.load`` returns; none needs the target tool to write, except ``inspect_log``
(Inspect's own writer) and ``otel`` (the OpenTelemetry SDK), both in the ``interop`` extra. Secrets stay
masked (``toolkit.core.secrets.redact`` runs over everything written) and ``content=False`` leaves message
contents (speech, prompts, answers, thoughts, tool outputs) out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from toolkit.core.printable import plural
from toolkit.core.registry import Registry

__all__ = ["EXPORTERS", "Exporter", "Flag", "Options", "register"]


@dataclass(frozen=True)
class Flag:
    """A command-line option of one exporter (``export FORMAT --NAME``): ``metavar`` for one that takes a value
    (empty: an on/off switch); ``needs``/``extra`` a module it imports (checked before anything is written);
    ``check(value)`` refuses a bad value (a ``FileError`` of one line); ``sends``: given, the exporter's ``send``
    runs instead of ``write`` and ``--out`` is not needed."""

    name: str
    help: str
    metavar: str = ""
    needs: str = ""
    extra: str = "interop"
    check: Callable[[Any], None] | None = None
    sends: bool = False


@dataclass(frozen=True)
class Options:
    """What ``export`` passes every exporter: contents in or out, the games asked for (None: all), each engineer
    session's trajectory (read only when the exporter asks for it) and the results folder's path."""

    content: bool = True
    game_ids: list[str] | None = None
    trajectories: dict[str, Any] | None = None
    source: str = ""
    flags: dict[str, Any] = field(default_factory=dict)  # the exporter's own options (``Exporter.flags``), by name


@dataclass(frozen=True)
class Exporter:
    """One export format: ``write(results, out, options) -> paths written``. ``summary`` is its line in
    ``export --help``, ``writes`` and ``read_by`` its row of the docs' table (docs/exports.md, generated);
    ``needs`` a module its writer imports, or several separated by commas (checked before anything is written),
    ``extra`` the extra holding it;
    ``trajectories``: it reads the engineer sessions' trajectories; ``flags`` are its own command-line options.
    ``batched``: ``write`` is given a
    ``toolkit.export.study.Study`` (the study read a batch of games at a time: memory flat in its size) instead
    of the whole ``Results`` of ``load`` (what an exporter that does not set it gets, as before)."""

    name: str
    write: Callable[[Any, Path, Options], list[Path]]
    summary: str
    writes: str = ""
    read_by: str = ""
    needs: str = ""
    extra: str = "interop"
    trajectories: bool = False
    batched: bool = False
    flags: tuple[Flag, ...] = ()  # its own command-line options
    note: Callable[[Any, Options], str] | None = None  # a line to show before writing (what is left out)
    send: Callable[[Any, Options], str] | None = None  # with a ``sends`` flag: send, return the line to show


# ``export``'s own options (toolkit/cli/export.py): no exporter's flag may take one of these names
OWN_OPTIONS = frozenset({"out", "game", "no-content", "help", "h"})


def _check(exporter: Exporter) -> None:
    """An exporter's flags: not named like ``export``'s own options, nor like another exporter's flag that takes
    another kind of value (a clash would break ``export --help`` for every format)."""
    for flag in exporter.flags:
        if flag.name in OWN_OPTIONS:
            raise ValueError(f"exporter {exporter.name}: its flag --{flag.name} is one of export's own options "
                             f"({', '.join('--' + o for o in sorted(OWN_OPTIONS))}): name it otherwise")
        for other in EXPORTERS.values():
            for theirs in other.flags:
                if other.name != exporter.name and theirs.name == flag.name and (
                        theirs.metavar, theirs.sends) != (flag.metavar, flag.sends):
                    raise ValueError(f"exporter {exporter.name}: its flag --{flag.name} is exporter {other.name}'s "
                                     "with another kind of value: name it otherwise")


EXPORTERS: Registry[Exporter] = Registry("exporter", check=_check, needs=("summary",))
register = EXPORTERS.register  # add an export format (``export NAME`` and the docs' table list it from here)


def _kaggle(results, out: Path, o: Options) -> list[Path]:
    from toolkit.export import kaggle

    paths = kaggle.write(results, out, o.content, o.game_ids)
    return paths + kaggle.write_html(paths, out) if o.flags.get("html") else paths


def _undecided(results, o: Options) -> str:
    from toolkit.export import kaggle

    decided = set(kaggle.decided(results.games)["game_id"])
    left = len([g for g in (o.game_ids or results.games["game_id"]) if g not in decided])
    return f"{plural(left, 'undecided game')} left out (Kaggle's loader needs a winning side)" if left else ""


def _inspect(results, out: Path, o: Options) -> list[Path]:
    from toolkit.export import inspect_log

    return inspect_log.write(results, out, o.content, o.game_ids, o.trajectories,
                             suffix=".json" if o.flags.get("json") else ".eval")


def _mini(results, out: Path, o: Options) -> list[Path]:
    from toolkit.core.files import FileError
    from toolkit.export import mini

    if results.sessions.empty:
        raise FileError(f"{o.source}: no engineer sessions to export (mini-swe-agent trajectories are sessions)")
    return mini.write(results.rest() if hasattr(results, "rest") else results, out, o.trajectories or {}, o.content)


def _otel(results, out: Path, o: Options) -> list[Path]:
    from toolkit.export import otel

    return otel.write(results, out, o.content, o.game_ids)


def _otel_send(results, o: Options) -> str:
    from toolkit.export import otel

    n = otel.send(results, o.flags["endpoint"], o.content, o.game_ids)
    return f"sent {plural(n, 'span')} to {o.flags['endpoint']}"


def _reachable(url: str) -> None:
    from toolkit.export.otel import check_endpoint

    check_endpoint(url)


def _hf(results, out: Path, o: Options) -> list[Path]:
    from toolkit.export import hf

    return hf.write(results, out, o.content, source=o.source)


for _exporter in (
    Exporter("kaggle", _kaggle, "one Kaggle Game Arena werewolf replay JSON per decided game (--html: also "
             "Kaggle's own viewer page)",
             "one Kaggle Game Arena werewolf replay JSON per decided game; `--html` also puts each game into "
             "Kaggle's own visualizer page", "`kaggle_environments.envs.werewolf.eval.loaders.GameResult`",
             batched=True, note=_undecided,
             flags=(Flag("html", "also write each game into the visualizer page kaggle-environments ships",
                         needs="kaggle_environments"),)),
    Exporter("inspect", _inspect, "an Inspect AI eval log (.eval; --json: .json): one sample per game or engineer "
             "session",
             "per run, `werewolf_<run_id>.eval` (one `EvalSample` per game) and `engineer_<run_id>.eval` (one "
             "per session); `--json` writes them as `.json`",
             "`inspect_ai.log.read_eval_log`, `inspect_ai.analysis.evals_df` / `samples_df` / "
             "`messages_df` / `events_df`", needs="inspect_ai", trajectories=True, batched=True,
             flags=(Flag("json", "write Inspect's .json logs instead of .eval (about 4 times as fast to write, about "
                         "23 times the size)"),)),
    Exporter("mini", _mini, "one mini-swe-agent .traj.json per engineer session",
             "one mini-swe-agent `.traj.json` per engineer session",
             "mini-swe-agent's trajectory inspector (`TrajectoryInspector`)", trajectories=True, batched=True),
    Exporter("otel", _otel, "OpenTelemetry GenAI spans: OTLP JSON files in --out, or sent to --endpoint over "
             "OTLP/HTTP",
             "OpenTelemetry GenAI spans: `traces.jsonl` (OTLP JSON, one request per game or session a line), or "
             "sent over OTLP/HTTP with `--endpoint`",
             "Phoenix (`arize-phoenix`) as the OTLP receiver, read with its client", needs="opentelemetry.sdk,orjson",
             batched=True, send=_otel_send,
             flags=(Flag("endpoint", "send to this OTLP/HTTP endpoint (e.g. http://127.0.0.1:6006) instead of files",
                         "URL", check=_reachable, sends=True),)),
    Exporter("hf", _hf, "a folder datasets.load_dataset opens: one config per table, with a dataset card",
             "`data/<table>.parquet` per table and a `README.md` dataset card with one config per table",
             '`datasets.load_dataset(DIR, "games")`', needs="pyarrow", batched=True),
):
    register(_exporter)
EXPORTERS.seal()  # a plug-in registers its own under another name
