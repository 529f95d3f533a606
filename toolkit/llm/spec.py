"""What a model spec is: ``PREFIX`` or ``PREFIX:ARG`` (``heuristic``, ``scripted:PATH``,
``openai:MODEL@URL``), the ``Provider`` its prefix names, and the providers other packages install as
entry points of the ``toolkit.models`` group (an entry point's name is the prefix; its object a
``Provider``). The lookup order is ``toolkit.llm.registry``'s; see docs/models.md.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import warnings
from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Callable
from urllib.parse import unquote

from toolkit.core.secrets import redact, register_carried
from toolkit.llm.backend import Backend

GROUP = "toolkit.models"


@dataclass(frozen=True)
class Provider:
    """``factory(arg: str, config) -> Backend`` builds the backend (``config`` is the wrapper's
    ``ModelConfig``: timeouts and token defaults a transport may need); ``usage`` is shown in help and
    errors; ``arg`` is "none" (the bare PREFIX), "required" (PREFIX:ARG) or "optional". What the help, the
    widgets, the report and the docs' table read: ``about`` (what answers), ``example`` (a ready spec the
    widgets offer; empty: none, e.g. one that needs a file), ``real_usage`` (its calls report measured token
    counts; otherwise the report says token counts are estimated); preflight reads ``check`` and
    ``build_to_check``."""

    prefix: str
    factory: Callable[[str, Any], Backend]
    usage: str = ""
    arg: str = "none"
    about: str = ""
    example: str = ""
    real_usage: bool = False
    # Preflight (before anything starts): ``check(arg, seats, probe)`` raises a ValueError of one line when the
    # spec cannot work (``seats``: a game's seat names, or None; ``probe``: a network check is allowed);
    # ``build_to_check``: building the backend is cheap and offline, so preflight also builds it to check its
    # arguments (False: building needs the endpoint, the check says all there is)
    check: Callable[[str, list[str] | None, bool], None] | None = None
    build_to_check: bool = True

    def __post_init__(self) -> None:
        if self.arg not in ("none", "required", "optional"):
            raise ValueError(f"{self.prefix}: arg must be none, required or optional, not {self.arg!r}")
        if not self.usage:
            object.__setattr__(self, "usage", self.prefix)


REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand(arg: str) -> str:
    """``${NAME}`` in a spec's argument replaced by the environment's ``NAME`` (a ValueError naming it when it is
    not set): a password given as ``openai:m@http://user:${MY_PASS}@host/v1`` stays out of every file that keeps
    the spec (sweep and tournament files, schedules, run configs), and its value is registered as a secret."""
    def value(m: re.Match) -> str:
        if m.group(1) not in os.environ:
            raise ValueError(f"the spec names ${{{m.group(1)}}}, which is not set in the environment")
        return os.environ[m.group(1)]

    if "${" not in arg:
        return arg
    expanded = REFERENCE.sub(value, arg)
    register_carried(expanded)
    return expanded


def parse_spec(spec: str) -> tuple[str, str]:
    """(prefix, argument) of a spec as written (``${NAME}`` references are expanded when a backend is built,
    ``expand``); provider parameters after ``?`` are not part of either (``spec_params``). Every secret the spec
    carries (a URL's password, a token in its query or its parameters) is registered with ``toolkit.core.secrets``
    here, so every record this process writes masks it, also when the endpoint echoes it back."""
    register_carried(str(spec).strip())
    spec = str(spec).strip().partition("?")[0]
    prefix, _, arg = spec.partition(":")
    if not prefix:
        raise ValueError(f"empty model spec {spec!r}")
    return prefix, arg


# ------------------------------------------------------------------ provider parameters
# ``openai:o4-mini@URL?reasoning_effort=high&max_completion_tokens=4000``: what follows the first ``?`` is sent in
# the request body unchanged (values typed: whole numbers, numbers, true/false, null, a JSON object or list such
# as OpenRouter's ``reasoning={"effort":"high"}``, else text; ``%26`` is an ``&`` inside a value). The spec string,
# parameters included, names the model in every table, so two cells that differ only by effort are two models.
# The names below are checked; any other name passes through as it is (a provider's own field).
CHECKED_PARAMS: dict[str, Any] = {
    "reasoning_effort": ("none", "minimal", "low", "medium", "high", "xhigh"),
    "verbosity": ("low", "medium", "high"),
    "service_tier": ("auto", "default", "flex", "priority", "scale"),
    "max_completion_tokens": (int, 1, 10**7), "max_tokens": (int, 1, 10**7), "seed": (int, -2**63, 2**63 - 1),
    "temperature": (float, 0.0, 2.0), "top_p": (float, 0.0, 1.0), "top_k": (int, 1, 10**6),
    "presence_penalty": (float, -2.0, 2.0), "frequency_penalty": (float, -2.0, 2.0),
    "parallel_tool_calls": (bool,), "store": (bool,), "logprobs": (bool,),
}
# Set by the toolkit itself, never by a spec.
TOOLKIT_FIELDS = ("model", "messages", "response_format", "tools", "tool_choice", "stream", "n")
# Read by the model wrapper and not sent: the endpoint's limits (requests in flight, requests and tokens per minute).
WRAPPER_PARAMS = {"max_connections": (int, 1, 4096), "rpm": (float, 0.001, 1e9), "tpm": (float, 0.001, 1e12)}
# Other request fields of OpenAI-compatible endpoints (OpenAI's chat completions, and vLLM's, OpenRouter's and
# Ollama's common extras): not checked, but a name close to one of these or the checked ones is probably a typo
# (``reasoning_efort``), which would otherwise be sent, ignored by the endpoint and recorded as a distinct model.
KNOWN_FIELDS = ("stop", "logit_bias", "top_logprobs", "user", "metadata", "modalities", "prediction", "audio",
                "web_search_options", "stream_options", "safety_identifier", "prompt_cache_key", "reasoning",
                "include_reasoning", "min_p", "repetition_penalty", "thinking", "chat_template_kwargs",
                "num_ctx", "keep_alive", "top_a")
# Arguments of the OpenAI Python SDK's ``create()``, not fields of the request body: sent as given they would be
# literal fields (``"extra_body": {...}``) the endpoint ignores. ``extra_body``'s fields are what the SDK merges into
# the body, so they are sent at the top level (with a warning saying so); the others cannot come from a spec.
SDK_ARGUMENTS = {"extra_headers": "headers are not set by a spec (keys go in the environment)",
                 "extra_query": "query parameters are not set by a spec",
                 "timeout": "the deadline of a request is TOOLKIT_TIMEOUT_S"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,63}")


def _typed(text: str, where: str = "", name: str = "") -> Any:
    if text[:1] in ("{", "["):  # an object or a list: JSON, as the request body carries it
        try:
            return json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{where}: {name}={text[:60]!r} is not valid JSON ({exc.msg} at character "
                             f"{exc.pos}); write an object as {name}={{\"effort\":\"high\"}}") from None
    if text in ("true", "false"):
        return text == "true"
    if text == "null":
        return None
    for kind in (int, float):
        try:
            value = kind(text)
            return value if kind is int or math.isfinite(value) else text
        except ValueError:
            continue
    return text


def _check(spec: str, name: str, value: Any, rule: Any) -> Any:
    if isinstance(rule[0], str):  # a choice
        if value not in rule:
            raise ValueError(f"{spec}: {name}={value!r} must be one of {', '.join(rule)}")
        return value
    kind = rule[0]
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{spec}: {name}={value!r} must be true or false")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        raise ValueError(f"{spec}: {name}={value!r} must be a{'whole number' if kind is int else ' number'}")
    if not rule[1] <= value <= rule[2]:
        raise ValueError(f"{spec}: {name}={value!r} must be between {rule[1]:g} and {rule[2]:g}")
    return kind(value)


def spec_params(spec: str) -> dict[str, Any]:
    """The provider parameters of a spec (after ``?``), typed and checked; a ValueError (one line) for a
    malformed or invalid one. ``{}`` for a spec without any."""
    spec = str(spec).strip()
    base, sep, query = spec.partition("?")
    if not sep:
        return {}
    where = f"model spec {base}"
    if not query:
        raise ValueError(f"{where}: nothing after '?' (give NAME=VALUE&NAME=VALUE)")
    out: dict[str, Any] = {}
    for part in query.split("&"):
        name, eq, raw = part.partition("=")
        name = unquote(name.strip())
        if not eq or not _NAME.fullmatch(name):
            raise ValueError(f"{where}: {part!r} is not NAME=VALUE (parameters look like ?reasoning_effort=high)")
        if name in out:
            raise ValueError(f"{where}: {name} is given twice")
        if name in TOOLKIT_FIELDS:
            raise ValueError(f"{where}: {name} is set by the toolkit itself, not by a spec")
        _not_a_credential(where, name)
        if name in SDK_ARGUMENTS:
            raise ValueError(f"{where}: {name} is an argument of the OpenAI Python SDK, not a request field; "
                             f"{SDK_ARGUMENTS[name]}")
        value = _typed(unquote(raw.strip()), where, name)
        if name == "extra_body":
            _extra_body(where, value, out)
            continue
        rule = CHECKED_PARAMS.get(name) or WRAPPER_PARAMS.get(name)
        out[name] = _check(where, name, value, rule) if rule else value
        if not rule:
            _typo(where, name)
    if "max_tokens" in out and "max_completion_tokens" in out:
        raise ValueError(f"{where}: give max_tokens or max_completion_tokens, not both")
    return out


_WARNED: set[tuple[str, str]] = set()


def _not_a_credential(where: str, name: str) -> None:
    if any(word in name.lower() for word in ("key", "secret", "token_id", "password", "authorization")):
        raise ValueError(f"{where}: {name} looks like a credential; keys go in the environment "
                         "(OPENAI_API_KEY or TOOLKIT_KEY_<HOST>), never in a spec that every table records")


def _extra_body(where: str, value: Any, out: dict[str, Any]) -> None:
    """``extra_body={...}``: the OpenAI SDK's way to add fields to the body; its fields go in the body, as the SDK
    would send them, and a warning says to write them as parameters."""
    if not isinstance(value, dict):
        raise ValueError(f"{where}: extra_body must be a JSON object of request fields, e.g. "
                         'extra_body={"reasoning":{"effort":"high"}}')
    twice = sorted(set(value) & set(out))
    if twice:
        raise ValueError(f"{where}: {', '.join(twice)} is given twice (in extra_body and as a parameter)")
    if (where, "extra_body") not in _WARNED:
        _WARNED.add((where, "extra_body"))
        fields = "&".join(f"{k}=..." for k in value)
        warnings.warn(f"{redact(where)}: extra_body is an argument of the OpenAI Python SDK, not a request field; "
                      f"its fields are sent in the body as the SDK would send them (write them as parameters: "
                      f"?{fields})", UserWarning, stacklevel=4)
    for name, field_value in value.items():
        _not_a_credential(where, f"extra_body.{name}")
        if name in TOOLKIT_FIELDS:
            raise ValueError(f"{where}: extra_body.{name} is set by the toolkit itself, not by a spec")
        rule = CHECKED_PARAMS.get(name) or WRAPPER_PARAMS.get(name)
        out[name] = _check(where, name, field_value, rule) if rule else field_value


def _typo(where: str, name: str) -> None:
    """Warn (once per spec and name in a process) when an unchecked name is close to a known field:
    ``reasoning_efort`` → did you mean reasoning_effort? The name is still sent as given: a provider's own field
    is not refused."""
    known = [*CHECKED_PARAMS, *WRAPPER_PARAMS, *KNOWN_FIELDS]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
    if close and close[0] != name and (where, name) not in _WARNED:
        _WARNED.add((where, name))
        warnings.warn(f"{redact(where)}: unknown parameter {name!r} is sent as given (did you mean {close[0]}?)",
                      UserWarning, stacklevel=3)


def provider_params(spec: str) -> dict[str, Any]:
    """The parameters a spec sends in the request body (``spec_params`` without the wrapper's own)."""
    return {k: v for k, v in spec_params(spec).items() if k not in WRAPPER_PARAMS}


@cache
def installed_names() -> dict[str, EntryPoint]:
    """The ``toolkit.models`` entry points of the installed distributions, by name (nothing loaded)."""
    return {ep.name: ep for ep in entry_points(group=GROUP)}


@cache
def installed(prefix: str) -> Provider | None:
    """The installed provider of a prefix (its module imported now), or None."""
    ep = installed_names().get(prefix)
    if ep is None:
        return None
    provider = ep.load()
    if not isinstance(provider, Provider) or provider.prefix != prefix:
        raise TypeError(f"entry point {GROUP}:{prefix} ({ep.value}) must name a Provider with prefix {prefix!r}")
    return provider


def missing_hint() -> str:
    """Why a player spec may be unknown: no entry points installed at all (a checkout used without
    ``pip install -e .``)."""
    return "" if installed_names() else (f" (no {GROUP} entry points are installed, so the werewolf players and "
                                         "replay are missing: pip install -e .)")
