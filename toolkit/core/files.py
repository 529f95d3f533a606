"""Schemas of the files a user writes (sweeps, scripted games; presets and agent roles reuse the helpers):
unknown keys are refused with a "did you mean" hint, types and ranges are checked, and names that could
leave a folder are refused. Every problem becomes one ``FileError`` line that names the file."""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import typing
from pathlib import Path
from typing import Annotated, Any, Callable, Literal

import yaml
from pydantic import (AfterValidator, AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator,
                      model_validator)

from toolkit.core.printable import printable
from toolkit.core import werewolf_names

# A name that becomes a folder: letters, digits, '_', '-', '.', not starting with '.' (no '..', no '/').
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
# Keys people write that the schema calls differently (a hint where difflib finds nothing close).
KNOWN_MIX_UPS = {"text": "speech", "params": "parameters", "paramters": "parameters", "repeat": "repeats",
                 "notebooks": "notebook", "player": "seat", "victim": "target"}


class FileError(ValueError):
    """A user's file (or option) is wrong; the message is one line that names it and says how to fix it."""


def one_line(text: Any, limit: int = 300) -> str:
    """``text`` on one line (its lines joined, made printable), cut to ``limit`` characters. A text that is cut
    has its secrets masked first (``toolkit.core.secrets.redact``): half a URL's password, left without the
    ``@`` after it, is no longer a credential the masking of the printed line would recognise."""
    text = " ".join(printable(part.strip()) for part in str(text).splitlines())  # a multi-line message joined
    if len(text) <= limit:
        return text
    from toolkit.core.secrets import redact

    text = redact(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_HOST_PATH = re.compile(r"(?<![\w:/.~-])/(?:[\w.\-]+/)+")


def without_paths(text: str) -> str:
    """Absolute paths cut to their last part (``/home/me/toolkit/x.py`` → ``x.py``; URLs are left alone): for
    a line that goes into a table someone else may read."""
    return _HOST_PATH.sub("", text)


def safe_name(value: str, what: str = "name") -> str:
    if not isinstance(value, str) or not SAFE_NAME.match(value):
        raise ValueError(f"{what} {value!r} must be letters, digits, '_', '-' or '.', not starting with '.' "
                         "(it becomes a folder name)")
    return value


_UNSAFE_CHARS = re.compile(r"(?:[^A-Za-z0-9_.-]|\.{2,})+")  # '..' goes too: no name reads as a way up


def file_name(stem: Any, suffix: str = "", limit: int = 100) -> str:
    """``stem + suffix`` as one safe file name: any run of characters other than letters, digits, '_', '-', '.'
    becomes '-', leading dots go, the stem is cut to ``limit``; where anything changed, a short hash of the
    original keeps two names apart (``../../x`` → ``x-<hash>``)."""
    text = str(stem)
    clean = re.sub(r"-{2,}", "-", _UNSAFE_CHARS.sub("-", text)).lstrip(".-")[:limit] or "x"
    if clean != text:
        clean = f"{clean.rstrip('.-') or 'x'}-{hashlib.sha1(text.encode()).hexdigest()[:8]}"
    return clean + suffix


def inside(folder: str | Path, stem: Any, suffix: str = "") -> Path:
    """The path of ``file_name(stem, suffix)`` in ``folder``, checked to stay there once links are resolved
    (a link planted in the folder under that name cannot redirect the write): for every file a report or an
    export names after something it read (a preset, a condition, a game or session id)."""
    folder = Path(folder)
    path = folder / file_name(stem, suffix)
    base = folder.resolve()
    if path.resolve().parent != base:
        raise FileError(f"{path}: would be written outside {folder} (it resolves to {path.resolve()}); refused")
    return path


def read_yaml(path: str | Path, what: str) -> Any:
    """The parsed YAML of a file, or a FileError saying why it cannot be had."""
    path = Path(path)
    if not path.exists():
        raise FileError(f"{path}: no such {what} file")
    if path.is_dir():
        raise FileError(f"{path}: is a folder; expected a {what} file (YAML)")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FileError(f"{path}: cannot read the {what} file: {one_line(getattr(exc, 'strerror', None) or exc)}")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or exc
        raise FileError(f"{path}: invalid YAML{where}: {one_line(problem)}") from None


def _unwrap(annotation: Any) -> list[Any]:
    """The classes an annotation may hold (through Optional, list[...], dict[..., ...])."""
    origin = typing.get_origin(annotation)
    if origin is None:
        return [annotation]
    out = []
    for arg in typing.get_args(annotation):
        out += _unwrap(arg)
    return out


def _fields_at(model: type[BaseModel], loc: tuple) -> list[str] | None:
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)) or part not in current.model_fields:
            return None
        models = [a for a in _unwrap(current.model_fields[part].annotation)
                  if isinstance(a, type) and issubclass(a, BaseModel)]
        if not models:
            return None
        current = models[0]
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return None


def did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(str(word), choices, n=1, cutoff=0.6)
    if KNOWN_MIX_UPS.get(str(word)) in choices:
        close = [KNOWN_MIX_UPS[str(word)]]
    return f" (did you mean {close[0]!r}?)" if close else ""


def _place(loc: tuple) -> str:
    """``decisions #2.target`` (list items counted from 1, as a person reads a file)."""
    out = ""
    for part in loc:
        out += f" #{part + 1}" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def explain(exc: ValidationError, model: type[BaseModel]) -> str:
    """A pydantic error as one line: where, what, and for an unknown key the closest known one."""
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")  # a typo first: it explains the rest
    first = errors[0]
    loc = tuple(first.get("loc", ()))
    where = _place(loc)
    if first["type"] == "extra_forbidden":
        fields = _fields_at(model, loc[:-1]) or []
        message = f"unknown key {loc[-1]!r}{did_you_mean(loc[-1], fields)}"
        if fields:
            message += f"; keys are {', '.join(fields)}"
        place = _place(loc[:-1])
        message = f"{place}: {message}" if place else message
    else:
        msg = first["msg"].removeprefix("Value error, ")
        message = f"{where}: {msg}" if where else msg
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return one_line(message + more)


def validate(model: type[BaseModel], data: Any, source: str | Path, what: str) -> Any:
    if not isinstance(data, dict):
        kind = "nothing" if data is None else f"a {type(data).__name__}"
        raise FileError(f"{source}: a {what} file must be a mapping of {', '.join(model.model_fields)}; "
                        f"it holds {kind}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise FileError(f"{source}: {explain(exc, model)}") from None


def load_file(path: str | Path, model: type[BaseModel], what: str) -> Any:
    return validate(model, read_yaml(path, what), path, what)


# ------------------------------------------------------------------------------------------------ sweeps
def model_spec(entry: Any) -> Any:
    """A model as a file gives it: a spec string as it is, or ``{spec: SPEC, NAME: VALUE, ...}``, the spec with
    provider parameters (``{spec: "openai:o4-mini@URL", reasoning_effort: high}`` is
    ``openai:o4-mini@URL?reasoning_effort=high``; an object or a list is its JSON: ``reasoning: {effort: high}``
    is ``?reasoning={"effort":"high"}``; the model layer checks them)."""
    if not isinstance(entry, dict):
        return entry
    if not isinstance(entry.get("spec"), str):
        raise ValueError(f"a model given as a mapping needs spec: SPEC, got {one_line(entry, 80)}")
    query = "&".join(f"{k}={_param_text(v)}" for k, v in entry.items() if k != "spec")
    return entry["spec"] + (("&" if "?" in entry["spec"] else "?") + query if query else "")


def _param_text(value: Any) -> str:
    """A parameter's value as a spec writes it: true/false/null, an object or a list as compact JSON, else its
    text; ``%`` and ``&`` escaped (the spec's separator), which the model layer unescapes."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False) if isinstance(value, (dict, list)) \
        else str(value)
    return text.replace("%", "%25").replace("&", "%26")


def models_block(value: Any) -> dict[str, Any]:
    """A ``models:`` block (a sweep's, a preset's): short names → specs (``model_spec`` of each entry)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("must map short names to specs, e.g. {o4-high: {spec: SPEC, reasoning_effort: high}}")
    return {str(k): model_spec(v) for k, v in value.items()}


class SweepFile(BaseModel):
    """A sweep: ``name`` (a folder under the results root), a notebook, fixed parameters, a grid of
    lists (every combination is one cell), and how many repeats (each with seeds shifted by 10000)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    notebook: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, Any]
    repeats: int = Field(1, ge=1, le=1000)
    # A spending cap over every cell (toolkit.llm.budget); --max-usd/--max-tokens/--at-cap override them.
    max_usd: float | None = Field(None, gt=0, allow_inf_nan=False)
    max_tokens: int | None = Field(None, ge=1)
    at_cap: Literal["stop", "finish"] = "stop"
    # A werewolf cell of more games runs as shards of this many (toolkit.study.shards); --shard-games overrides it.
    shard_games: int | None = Field(None, ge=1)
    # Named models: a parameter or grid value (or a seats entry) equal to a name stands for its spec, so cells
    # and their folders are named by the short name: {o4-high: {spec: "openai:o4-mini@URL", reasoning_effort: high}}.
    models: dict[str, Any] = Field(default_factory=dict)

    @field_validator("models", mode="before")
    @classmethod
    def _models(cls, value: Any) -> Any:
        return models_block(value)

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: Any) -> str:
        return safe_name(value, "name")

    @field_validator("parameters", mode="before")
    @classmethod
    def _parameters(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("grid", mode="before")
    @classmethod
    def _grid(cls, value: Any) -> Any:
        if not isinstance(value, dict) or not value:
            raise ValueError("must be a mapping of parameter: [values, ...] with at least one parameter "
                             "(fixed values go under parameters)")
        out = {}
        for key, values in value.items():
            values = values if isinstance(values, list) else [values]
            if not values:
                raise ValueError(f"{key} has no values (give at least one)")
            out[str(key)] = values
        return out

    @model_validator(mode="after")
    def _no_overlap(self) -> "SweepFile":
        both = sorted(set(self.parameters) & set(self.grid))
        if both:
            raise ValueError(f"{both} are both fixed parameters and grid keys; keep each in one place")
        if "results_dir" in self.parameters or "results_dir" in self.grid:
            raise ValueError("results_dir is set by the sweep (RESULTS/<name>/<cell>); remove it")
        return self


# ------------------------------------------------------------------------------------------- tournaments
class TournamentFile(BaseModel):
    """A tournament: ``name`` (a folder under the results root), the model specs that play, the presets,
    the design (``pairs``, the default: every ordered pair of models as village vs wolves, the design that
    can rank models per side; ``rotation``: every model plays every role equally often, mixed tables), and
    its size (``games``, or the ``half_width`` a win rate should reach; neither: 0.1). ``adaptive``: rounds
    that go where comparisons are undecided, stopping when all are decided (``toolkit.study.adaptive``), sized
    by ``alpha``, ``power`` and ``min_difference`` instead, with optional ``compare``, ``village_rate``,
    ``max_games`` and ``max_usd``."""

    model_config = ConfigDict(extra="forbid")

    name: str
    models: list[str] = Field(..., min_length=1)
    presets: list[str] = Field(..., min_length=1)
    design: Literal["rotation", "pairs", "adaptive"] = "pairs"
    self_play: bool = True
    games: int | None = Field(None, ge=1, le=1_000_000)
    half_width: float | None = Field(None, gt=0, lt=0.5)
    seed: int = 0
    games_per_cell: int = Field(100, ge=1)
    reflection: bool = False
    concurrency: int = Field(16, ge=1, le=1024)
    notebook: str | None = None
    error_policy: str | None = None  # fallback, forfeit, eliminate_after:N (toolkit.werewolf.engine.preset)
    # the endpoint's failures: wait for the endpoint, or fallback (the seats' failed decisions, Kaggle-style)
    on_endpoint_failure: Literal["wait", "fallback"] | None = None
    max_usd: float | None = Field(None, gt=0, allow_inf_nan=False)  # a spending cap (toolkit.llm.budget)
    max_tokens: int | None = Field(None, ge=1)
    at_cap: Literal["stop", "finish"] = "stop"
    # design: adaptive (toolkit.study.adaptive)
    alpha: float | None = Field(None, gt=0, le=0.5)  # family-wise error over the comparisons (0.05)
    power: float | None = Field(None, ge=0.5, lt=1)  # at a true difference of min_difference (0.8)
    min_difference: float | None = Field(None, gt=0, le=5)  # logits (0.5)
    compare: list[str] | None = Field(None, min_length=1)  # "A vs B" (head-to-head); default: every pair
    village_rate: float | None = Field(None, gt=0, lt=1)  # the design's P(village wins); default: the preset's known
    max_games: int | None = Field(None, ge=1, le=1_000_000)

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: Any) -> str:
        return safe_name(value, "name")

    @field_validator("models", mode="before")
    @classmethod
    def _model_entries(cls, value: Any) -> Any:
        """A model is a spec, or ``{spec: SPEC, NAME: VALUE, ...}`` (``model_spec``)."""
        return [model_spec(entry) for entry in value] if isinstance(value, list) else value

    @field_validator("models", "presets")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        twice = sorted({x for x in value if value.count(x) > 1})
        if twice:  # a preset listed twice would double its games, a model twice its matchups
            raise ValueError(f"{', '.join(twice)} listed more than once; list each once")
        return value

    @model_validator(mode="after")
    def _one_size(self) -> "TournamentFile":
        if self.games is not None and self.half_width is not None:
            raise ValueError(f"games ({self.games}) and half_width ({self.half_width}) both set the tournament's "
                             "size; give one (games per matchup, or the half-width that decides it)")
        adaptive = ("alpha", "power", "min_difference", "compare", "village_rate", "max_games")
        if self.design == "adaptive":
            fixed = [k for k in ("games", "half_width") if getattr(self, k) is not None]
            if fixed:
                raise ValueError(f"{', '.join(fixed)}: an adaptive tournament is sized by alpha, power and "
                                 "min_difference (and stops when its comparisons are decided); leave it out")
        else:
            given = [k for k in adaptive if getattr(self, k) is not None]
            if given:
                raise ValueError(f"{', '.join(given)} only apply to design: adaptive (this file's design is "
                                 f"{self.design})")
        return self


# --------------------------------------------------------------------------------------- scripted games
def _registered(what: str, known: Callable[[], tuple[str, ...]]) -> Callable[[str], str]:
    def check(name: str) -> str:
        names = list(known())
        if name not in names:
            raise ValueError(f"unknown {what} {name!r}{did_you_mean(name, names)}; one of {', '.join(names)}")
        return name

    return check


# A role or decision registered when the file is read (``werewolf_names``): a plug-in role and its decisions too.
RoleName = Annotated[str, AfterValidator(_registered("role", werewolf_names.roles))]
ActionName = Annotated[str, AfterValidator(_registered("action", werewolf_names.actions))]


class ScriptedDecision(BaseModel):
    """One scripted answer: matched by ``day``/``action``/``seat`` (those given); the other fields given are the
    answer (``text`` is read as ``speech``, ``reflection`` as ``summary``)."""

    model_config = ConfigDict(extra="forbid")
    MATCH_KEYS: typing.ClassVar[tuple[str, ...]] = ("day", "action", "seat")

    day: int | None = Field(None, ge=1)
    action: ActionName | None = None
    seat: str | None = None
    target: str | None = None
    speech: str | None = Field(None, validation_alias=AliasChoices("speech", "text"))
    thought: str | None = None
    summary: str | None = Field(None, validation_alias=AliasChoices("summary", "reflection"))
    beliefs: list[dict[str, Any]] | None = None
    bid: int | None = Field(None, ge=0, le=4)  # a bidding discussion's bid (0-4)

    @model_validator(mode="after")
    def _answer_fits_action(self) -> "ScriptedDecision":
        if self.action == "bid" and self.bid is None:
            raise ValueError("a bid decision needs bid: 0-4")
        if self.action == "speak" and self.speech is None:
            raise ValueError("a speak decision needs speech: \"...\"")
        if self.action in werewolf_names.targeted_actions() and "target" not in self.model_fields_set:
            raise ValueError(f"a {self.action} decision needs target: SEAT (or target: null to pass)")
        if self.action == "reflect" and self.summary is None:
            raise ValueError("a reflect decision needs summary: \"...\"")
        return self

    def matches(self, observation: dict[str, Any]) -> bool:
        """Every match key this decision gives equals the observation's (compared as text)."""
        given = self.model_fields_set
        return all(str(getattr(self, k)) == str(observation.get(k)) for k in self.MATCH_KEYS if k in given)

    def answer(self) -> dict[str, Any]:
        """The answer fields given (``target: null`` included: a pass)."""
        return self.model_dump(exclude_unset=True, exclude=set(self.MATCH_KEYS))


class ScriptedFile(BaseModel):
    """``answers`` (in order), or ``decisions`` (matched), ``roles`` (fixed roles) and ``default``. Read here
    for the scripted backend (``toolkit.llm.offline``) and for the CLI's checks alike."""

    model_config = ConfigDict(extra="forbid")

    answers: list[Any] | None = None
    decisions: list[ScriptedDecision] = Field(default_factory=list)
    roles: dict[str, RoleName] | None = None
    # the rules' random draws, "kind:day" → seat (kinds: wolf_tie, vote_tie, speech_start, vote_start)
    draws: dict[str, str] | None = None
    default: Literal["random", "heuristic", "error"] = "error"

    @field_validator("draws")
    @classmethod
    def _draw_keys(cls, draws: dict[str, str] | None) -> dict[str, str] | None:
        kinds = ("wolf_tie", "vote_tie", "speech_start", "vote_start", "wolf_start")
        for key in draws or {}:
            kind, _, day = key.partition(":")
            if kind not in kinds or not day.isdigit() or int(day) < 1:
                raise ValueError(f"draw {key!r}: a key is KIND:DAY, KIND one of {', '.join(kinds)}, DAY from 1")
        return draws

    @field_validator("decisions", mode="before")
    @classmethod
    def _decisions(cls, value: Any) -> Any:
        return [] if value is None else value

    def seats_named(self) -> set[str]:
        return {d.seat for d in self.decisions if d.seat} | set(self.roles or {}) | \
            {d.target for d in self.decisions if d.target} | set((self.draws or {}).values())


def load_scripted(path: str | Path) -> ScriptedFile:
    data = read_yaml(path, "scripted")
    if isinstance(data, list):
        data = {"answers": data}
    return validate(ScriptedFile, data, f"scripted:{path}", "scripted")
