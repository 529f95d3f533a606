"""A prompted, structured model call: template file + pydantic output model + parse + one re-ask + fallback.

Templates are Jinja2 files under ``prompts/``, rendered with StrictUndefined. Values are inserted as data:
Jinja never renders a value as a template, so text such as ``{{ 7*7 }}`` or ``__profile__`` inside a speech
reaches the prompt verbatim and changes nothing else.

A parse or validation failure never reaches the caller as an exception: the action ends with a valid
value, taken from the model or (``fallback=True``) from the caller's legal fallback.

An answer cut at the output token limit (``finish_reason: "length"``, common with reasoning models) is a
``truncated`` attempt, never parsed (a repaired half-answer would pass for a short one): it is asked again,
up to ``truncation_reasks`` times, with a "reason less" nudge that grows with the truncations in a row
(``prompts/truncated.j2``; Kaggle's Game Arena harness does the same), and then the action ends on the fallback
with ``error_kind="truncated"`` for the caller's error policy. A call its endpoint failed (no answer after the
retries: ``toolkit.llm.health``) is no answer of the model: with ``endpoint="wait"`` the action waits for the
endpoint and asks again, and a dead endpoint raises ``EndpointDown``. The caller hands over
the whole ``Request`` (who asks, why, sampling, observation); the action adds the messages and the output
schema, sends it through the model wrapper, and writes every call, good or bad, to the call log.
"""

from __future__ import annotations

import json
import os
import weakref
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Literal, Optional

import jinja2
import json_repair
from pydantic import BaseModel, ValidationError, create_model

from toolkit.core import data
from toolkit.llm import Call, Model, Request
from toolkit.llm.health import EndpointHealth, endpoint_fault, health_of
from toolkit.record.run_log import CallLog

_DEFAULT_DIR = str(data.path("prompts"))


def prompts_dirs() -> tuple[str, ...]:
    """The prompt folders searched in order: ``TOOLKIT_PROMPTS`` (folders separated by ``os.pathsep``: a
    plug-in's own prompt files, or a whole edited copy), then the package's ``prompts/``; the first holding a
    file wins."""
    extra = [f for f in os.environ.get("TOOLKIT_PROMPTS", "").split(os.pathsep) if f.strip()]
    return tuple(dict.fromkeys([*extra, _DEFAULT_DIR]))


def prompts_dir() -> Path:
    """The folder the engineer's role files and feedback texts are read from: the first searched holding
    ``agent/``."""
    return next((Path(f) for f in prompts_dirs() if (Path(f) / "agent").is_dir()), Path(prompts_dirs()[-1]))


_DICT_ATTRIBUTES = frozenset(dir(dict))


class _Environment(jinja2.Environment):
    """Looks dict keys up before attributes: prompts are rendered from plain dicts, thousands a second. A key a
    dict lacks (``obs.checks is defined``) is undefined at once, as Jinja makes it after two exceptions."""

    def getattr(self, obj, attribute):  # noqa: A003 - jinja's hook name
        if type(obj) is dict:
            if attribute in obj:
                return obj[attribute]
            if attribute not in _DICT_ATTRIBUTES:
                return self.undefined(obj=obj, name=attribute)
        return super().getattr(obj, attribute)


@lru_cache(maxsize=4)
def _environment(folders: tuple[str, ...]) -> jinja2.Environment:
    for folder in folders:
        if not Path(folder).is_dir():
            raise FileNotFoundError(f"prompt folder {folder} not found; TOOLKIT_PROMPTS names folders of prompt "
                                    f"files searched before the package's, separated by {os.pathsep!r}")
    # cache_size=-1: the loaded templates in a plain dict (a prompts folder holds a few dozen files), not Jinja's
    # LRU, whose lookups (an extends and an include in every prompt) take a lock and move the key in a deque
    return _Environment(loader=jinja2.FileSystemLoader(list(folders)), undefined=jinja2.StrictUndefined,
                        autoescape=False, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False,
                        auto_reload=False, cache_size=-1)


@lru_cache(maxsize=256)
def _template(folders: tuple[str, ...], name: str) -> jinja2.Template:
    return _environment(folders).get_template(name)


def template(name: str) -> jinja2.Template:
    """A compiled template (cached: edit prompt files between processes, or call ``template.cache_clear``)."""
    return _template(prompts_dirs(), name)


template.cache_clear = _template.cache_clear  # type: ignore[attr-defined]


class PromptMissing(FileNotFoundError):
    """A prompt file a rendering needs (the file named, or one it imports: a plug-in's clause of the rules) is
    not in the prompts folder: one line naming it, not Jinja's traceback."""


def _missing(exc: jinja2.TemplateNotFound) -> PromptMissing:
    return PromptMissing(f"prompt file {exc.name} not found in {os.pathsep.join(prompts_dirs())} (a plug-in's "
                         "prompt files go in a folder TOOLKIT_PROMPTS names, searched before the package's)")


def render(name: str, **values: Any) -> str:
    try:
        return template(name).render(**values).strip()
    except jinja2.TemplateNotFound as exc:
        raise _missing(exc) from None


def macros(name: str, **values: Any) -> Any:
    """A template's module made with ``values`` as its context (what ``{% import NAME as m with context %}``
    gives): its macros, to call from Python (``macros(...).common()``). A caller that renders the same macros
    for many prompts renders them once and passes the text (``werewolf/_base.j2``'s ``static``)."""
    try:
        return template(name).make_module(values)
    except jinja2.TemplateNotFound as exc:
        raise _missing(exc) from None


@lru_cache(maxsize=256)
def _from_string(folders: tuple[str, ...], source: str) -> jinja2.Template:
    return _environment(folders).from_string(source)


def render_string(source: str, **values: Any) -> str:
    """A template given as text (e.g. one entry of a YAML file of messages), rendered like a file."""
    try:
        return _from_string(prompts_dirs(), source).render(**values).strip()
    except jinja2.TemplateNotFound as exc:
        raise _missing(exc) from None


@dataclass
class ActionResult:
    value: BaseModel
    fallback: bool = False
    error: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 1  # model calls this action made (2 after a re-ask)
    call_id: str | None = None  # the call whose answer became the value (None for a fallback)
    # Set when the last call got no answer at all (the endpoint failed, retries spent): its last attempt's
    # error kind ("timeout", "status", "injected" for a fault the chaos backend injects by design, ...);
    # "truncated" when the last answer was cut at the output token limit.
    error_kind: str | None = None
    truncations: int = 0  # answers of this action cut at the token limit
    endpoint_failed: bool = False  # the fallback stood in for the endpoint's failure, not the model's


@lru_cache(maxsize=4096)
def with_choices(model: type[BaseModel], field_name: str, choices: tuple[str, ...],
                 allow_none: bool = False) -> type[BaseModel]:
    """``model`` with ``field_name`` restricted to ``choices`` (an enum in its JSON schema)."""
    kind: Any = Literal[choices] if choices else Literal["__none__"]
    if allow_none:
        kind = Optional[kind]
    made = create_model(model.__name__, __base__=model, **{field_name: (kind, ...)})
    if choices and len(set(choices)) == len(choices) and all(type(c) is str for c in choices):
        _CHOSEN[made] = (model, field_name, choices, allow_none)
    return made


# with_choices' models whose JSON schema is their shape's with the choices filled in: {model: (base, field,
# choices, allow_none)}. Weak: a model dropped from with_choices' cache is not kept alive here.
_CHOSEN: "weakref.WeakKeyDictionary[type[BaseModel], tuple[Any, ...]]" = weakref.WeakKeyDictionary()
_BLANK = "\x00choice {}\x00"  # a choice's stand-in in a shape's schema (no seat, role or word looks like it)


@lru_cache(maxsize=4096)
def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema. A model of ``with_choices`` gets its shape's schema (the same base, field and
    number of choices, made once by pydantic with stand-ins for the choices) with its choices filled in: the
    same schema, without pydantic's ~0.5 ms for every new set of choices (a game of seven asks about a hundred
    sets)."""
    shape = _CHOSEN.get(model)
    if shape is None:
        return model.model_json_schema()
    base, field_name, choices, allow_none = shape
    fill = {_BLANK.format(i): choice for i, choice in enumerate(choices)}
    return _filled(_shape_schema(base, field_name, len(choices), allow_none), fill)


@lru_cache(maxsize=256)
def _shape_schema(base: type[BaseModel], field_name: str, n: int, allow_none: bool) -> dict[str, Any]:
    blanks = tuple(_BLANK.format(i) for i in range(n))
    return with_choices.__wrapped__(base, field_name, blanks, allow_none).model_json_schema()


def _filled(value: Any, fill: dict[str, str]) -> Any:
    """A copy of ``value`` (JSON: dicts, lists, scalars) with each stand-in string replaced by its choice."""
    if isinstance(value, dict):
        return {k: _filled(v, fill) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, fill) for v in value]
    return fill.get(value, value) if isinstance(value, str) else value


def parse(text: str, model: type[BaseModel]) -> tuple[BaseModel | None, str | None]:
    """(value, None), (value, a note) for a repaired answer, or (None, a one-line error the model can act on)."""
    if not text or not text.strip():
        return None, "the answer was empty; reply with one JSON object"
    repaired = False
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data, repaired = json_repair.loads(text), True
        except Exception as exc:  # json_repair raises a variety of errors on hostile input
            return None, f"could not read JSON ({type(exc).__name__})"
    if isinstance(data, list):
        from_list = getattr(model, "from_list", None)  # a model that accepts a bare list (agent commands)
        data = from_list(data) if from_list else (data[0] if data and isinstance(data[0], dict) else data)
    if not isinstance(data, dict):
        return None, "no JSON object found in the answer; reply with one JSON object"
    try:
        value = model.model_validate(data)
        # A repaired answer is used, but the row keeps a note: it was not valid JSON as sent.
        return value, ("repaired malformed JSON" if repaired else None)
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:3]:
            where = ".".join(str(p) for p in err["loc"]) or "answer"
            got = json.dumps(err.get("input"), default=str)[:60]
            problems.append(f"{where}: {err['msg']} (got {got})")
        return None, "; ".join(problems)


def _record(log: CallLog | None, call: Call) -> None:
    """The call's row (which settles it in the ledger), or with no log its settling alone."""
    if log is not None:
        log.write(call)
    else:
        call.settle()


class Action:
    """A named, prompted decision. ``parse`` may be overridden (the agent reads native tool calls)."""

    def __init__(self, name: str, template: str, output: type[BaseModel], system: str | None = None):
        self.name = name
        self.template = template
        self.output = output
        self.system = system

    def messages(self, values: dict[str, Any]) -> list[dict[str, Any]]:
        messages = [{"role": "user", "content": render(self.template, **values)}]
        if self.system:
            messages.insert(0, {"role": "system", "content": render(self.system, **values)})
        return messages

    def parse(self, call: Call, output: type[BaseModel]) -> tuple[BaseModel | None, str | None]:
        return parse(call.text, output)

    async def run(self, model: Model, request: Request, values: dict[str, Any], *,
                  fallback: Callable[[], BaseModel], log: CallLog | None = None,
                  output: type[BaseModel] | None = None, truncation_reasks: int = 2,
                  nudge: bool = True, endpoint: str | None = None) -> ActionResult:
        """Ask, parse, re-ask once with the error; a truncated answer is re-asked up to ``truncation_reasks``
        times (with the growing "reason less" nudge unless ``nudge=False``); then the fallback.

        ``endpoint`` says what the endpoint's failures (``toolkit.llm.health``) do: ``"wait"``: none is the
        model's, the action waits for the endpoint and asks again (``EndpointDown`` when it is dead);
        ``"fallback"``: a failure ends on the fallback as the model's would (``endpoint_failed`` says so), and a
        dead endpoint still raises ``EndpointDown``; None: no health kept (every failure is the action's)."""
        if endpoint is None or model.base_url is None:
            return await self._run(model, request, values, fallback, log, output, truncation_reasks, nudge, None)
        health = health_of(model)
        health.begin()
        try:
            return await self._run(model, request, values, fallback, log, output, truncation_reasks, nudge,
                                   (health, endpoint))
        finally:
            health.end()

    # Over 60 lines: the one loop of asking, parsing, re-asking and falling back, kept whole so its order shows.
    async def _run(self, model: Model, request: Request, values: dict[str, Any], fallback: Callable[[], BaseModel],
                   log: CallLog | None, output: type[BaseModel] | None, truncation_reasks: int, nudge: bool,
                   guard: tuple[EndpointHealth, str] | None) -> ActionResult:
        output = output or self.output
        request = request.but(messages=self.messages(values), schema=json_schema(output), schema_name=self.name,
                              action=self.name)
        asked = request.messages
        error, calls, reasked, truncations = None, 0, False, 0
        while True:
            seq = log.next_seq() if log is not None else 0
            # settled in the ledger once its row is written (CallLog.write), not before: a kill between the two
            # would leave an answer paid and never recorded, paid again by the resumed study
            call = await (guard[0].generate(model, request, settle=False) if guard
                          else model.generate(request, settle=False))
            call.seq, calls = seq, calls + 1
            if guard is not None and guard[1] == "wait" and endpoint_fault(model, call):
                call.ok, call.fallback = False, False  # no decision was made: the endpoint is waited for
                _record(log, call)
                await guard[0].wait(call)  # EndpointDown when the endpoint is dead
                continue
            truncated = call.completion is not None and call.completion.truncated
            if truncated:
                value, error = None, (f"truncated: the answer was cut at the output token limit (finish_reason "
                                      f"length, {call.completion.completion_tokens} output tokens)")
            else:
                value, error = (self.parse(call, output) if call.completion is not None else (None, call.error))
            call.parsed = value.model_dump_json() if value is not None else None
            call.ok, call.error = value is not None, error
            # A call is the final one of its action when it succeeded or nothing more will be asked.
            last = (value is not None or call.completion is None  # a transport failure teaches the model nothing
                    or (truncated and truncations >= truncation_reasks) or (not truncated and reasked))
            call.fallback = value is None and last
            _record(log, call)
            if value is not None:
                return ActionResult(value, messages=request.messages, calls=calls, call_id=call.call_id,
                                    truncations=truncations)
            if last:
                break
            if truncated:  # the same question again (the cut answer is no use to it), with the nudge
                truncations += 1
                request = request.but(messages=[*asked, {"role": "user", "content": render("truncated.j2",
                                                                                           n=truncations)}]
                                      if nudge else asked)
            else:
                reasked = True
                request = request.but(messages=[*request.messages, {"role": "assistant", "content": call.text},
                                                {"role": "user", "content": render("reask.j2", error=error)}])
        if log is not None:
            log.fallbacks += 1
        kind = ("truncated" if call.completion.truncated else None) if call.completion is not None else (
            call.attempts[-1].error_kind if call.attempts else "error")
        if guard is not None and endpoint_fault(model, call):  # played on with a fallback (endpoint="fallback")
            guard[0].judge(call)  # EndpointDown when the endpoint is dead or refused for good
            return ActionResult(fallback(), fallback=True, error=error, messages=request.messages, calls=calls,
                                error_kind=kind, endpoint_failed=True)
        return ActionResult(fallback(), fallback=True, error=error, messages=request.messages, calls=calls,
                            error_kind=kind, truncations=truncations + (kind == "truncated"))
