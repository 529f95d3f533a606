"""Tools from one declaration: ``@tool`` turns a typed, documented function or method into both its
JSON schema (pydantic + docstring-parser) and its dispatch entry, so the two can never drift apart.

A wrong call (unknown tool, missing or mistyped argument) returns a one-line error with a hint, never
a traceback; a tool that raises returns one line too, and the traceback goes to the log. Every call is
handed to the session's recorder (``toolkit.agent.recorder``: the ``tool_calls`` table) here, where it runs.
"""

from __future__ import annotations

import difflib
import inspect
import json
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from toolkit.prompting.structured_call import render
from toolkit.agent.recorder import SessionRecorder
from toolkit.agent.environments.workspace import ToolError  # noqa: F401  (declared below the tools)
from toolkit.core.secrets import redact

log = logging.getLogger(__name__)


def tool(fn: Callable | None = None, *, name: str | None = None, exclusive: bool = False):
    """Mark a function or method as a tool. ``exclusive`` tools (edits, commits) may appear once a step."""

    def mark(f: Callable) -> Callable:
        f.__tool__ = {"name": name, "exclusive": exclusive}
        return f

    return mark(fn) if fn is not None else mark


@dataclass
class ToolSpec:
    name: str
    fn: Callable
    description: str
    args_model: type[BaseModel]
    exclusive: bool

    def schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "parameters": self.args_model.model_json_schema()}

    def signature(self) -> str:
        params = self.args_model.model_json_schema().get("properties", {})
        required = set(self.args_model.model_json_schema().get("required", []))
        return f"{self.name}(" + ", ".join(p if p in required else f"{p}=…" for p in params) + ")"


def spec_of(fn: Callable, prefix: str = "") -> ToolSpec:
    meta = getattr(fn, "__tool__", {})
    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    param_docs = {p.arg_name: p.description for p in doc.params}
    fields: dict[str, Any] = {}
    hints = inspect.get_annotations(fn, eval_str=True)
    for pname, param in inspect.signature(fn).parameters.items():
        if pname in ("self", "cls") or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (hints.get(pname, Any), Field(default, description=param_docs.get(pname)))
    name = meta.get("name") or f"{prefix}{fn.__name__}"
    model = create_model(f"{name.replace('.', '_')}_args", __config__=ConfigDict(extra="forbid"), **fields)
    description = " ".join(filter(None, [doc.short_description, doc.long_description])) or name
    return ToolSpec(name, fn, description, model, bool(meta.get("exclusive")))


class Toolbox:
    """The tools an agent may call, built from objects' ``@tool`` methods (named ``Object.method``)
    and plain ``@tool`` functions."""

    def __init__(self, recorder: SessionRecorder | None = None) -> None:
        self.specs: dict[str, ToolSpec] = {}
        self.recorder = recorder or SessionRecorder()
        self.results: list[ToolResult] = []

    def add(self, obj: Any, prefix: str | None = None, only: list[str] | None = None) -> "Toolbox":
        if callable(obj) and hasattr(obj, "__tool__"):
            spec = spec_of(obj)
            self.specs[spec.name] = spec
            return self
        prefix = f"{prefix or type(obj).__name__}."
        for attr in dir(obj):
            member = getattr(obj, attr, None)
            if callable(member) and hasattr(member, "__tool__"):
                spec = spec_of(member, prefix)
                if only is None or spec.name in only or attr in only:
                    self.specs[spec.name] = spec
        return self

    def describe(self) -> str:
        """The tool listing for the system prompt (``prompts/agent/tools.j2``)."""
        tools = [{"signature": spec.signature(), "description": spec.description, "exclusive": spec.exclusive,
                  "args": [(p, v.get("description") or v.get("type", "any"))
                           for p, v in spec.args_model.model_json_schema().get("properties", {}).items()]}
                 for spec in self.specs.values()]
        return render("agent/tools.j2", tools=tools)

    async def call(self, name: str, args: Any, step: int | None = None) -> "ToolResult":
        """Run one tool call and record it (``tool_calls`` row). Its output has secrets masked before anything
        sees it: the model, the memory, the row."""
        result = await self._call(name, args)
        result.output = redact(result.output)
        result.step = step
        self.record(result)
        return result

    def record(self, result: "ToolResult") -> None:
        self.results.append(result)
        self.recorder.tool_call(result)

    async def _call(self, name: str, args: Any) -> "ToolResult":
        started = time.perf_counter()
        spec = self.specs.get(name)
        if spec is None:
            close = difflib.get_close_matches(str(name), list(self.specs), n=1, cutoff=0.6) or [
                n for n in self.specs if name and str(name).split(".")[-1] == n.split(".")[-1]]
            hint = f" Did you mean {close[0]}?" if close else f" Tools: {', '.join(self.specs)}."
            return ToolResult(name, args, False, f"Unknown command {name!r}.{hint}", started)
        if not isinstance(args, dict):
            return ToolResult(name, args, False, f"{name}: args must be a JSON object; usage: {spec.signature()}",
                              started)
        try:
            parsed = spec.args_model.model_validate(args)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "args"
            return ToolResult(name, args, False, f"{name}: {where}: {err['msg']}; usage: {spec.signature()}", started)
        try:
            out = spec.fn(**parsed.model_dump())
            if inspect.isawaitable(out):
                out = await out
        except Failed as exc:  # the tool ran and failed: its whole output is the observation
            return ToolResult(name, args, False, str(exc), started, command=exc.record)
        except ToolError as exc:
            return ToolResult(name, args, False, f"{name}: {exc}", started)
        except Exception as exc:  # a tool bug: one line for the model, the traceback for the log
            log.exception("tool %s failed", name)
            return ToolResult(name, args, False, f"{name} failed: {type(exc).__name__}: {exc}", started)
        return ToolResult(name, args, True, "" if out is None else str(out), started,
                          command=getattr(out, "record", None))


class Failed(ToolError):
    """Raised by a tool that ran and failed (e.g. a shell command's non-zero exit) with its output: shown in
    full, recorded with ok=False, and the step's later commands are skipped. ``record``: a shell command's
    typed record (``ExecResult.record``)."""

    def __init__(self, message: str, record: dict | None = None):
        super().__init__(message)
        self.record = record


class Output(str):
    """A tool's output with a shell command's typed record (``ExecResult.record``) attached."""

    record: dict | None = None

    def __new__(cls, text: str, record: dict | None = None):
        made = super().__new__(cls, text)
        made.record = record
        return made


@dataclass
class ToolResult:
    tool: str
    args: Any
    ok: bool
    output: str
    started: float
    truncated: bool = False
    step: int | None = None  # set by the loop that ran it
    command: dict | None = None  # a shell command's typed record (``ExecResult.record``)

    def __post_init__(self) -> None:
        self.duration_ms = (time.perf_counter() - self.started) * 1000
        self.truncated = self.truncated or "[… output truncated:" in self.output

    def args_json(self) -> str:
        return json.dumps(self.args, ensure_ascii=False, default=str)
