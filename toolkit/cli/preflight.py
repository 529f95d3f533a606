"""Checks of the command line's inputs, run before a command creates any folder or starts any process:
model specs (scripted files parse and name real seats, replay folders hold runs, OpenAI endpoints have a
key or a loopback URL, a well-formed URL and something listening), output folders, extras. Each failure
is a ``FileError``: one line naming the option or file and the fix."""

from __future__ import annotations

import argparse

import importlib.util
import os
from pathlib import Path

from toolkit.llm import get_model, known_specs, parse_spec
from toolkit.llm.spec import expand, spec_params
from toolkit.llm.registry import did_you_mean_spec, find
from toolkit.record.load import results_folder  # noqa: F401  (the commands check their results folders here)
from toolkit.core.files import FileError, one_line
from toolkit.core.secrets import mask_url_credentials


def out_folder(path: str | os.PathLike, option: str = "--out") -> Path:
    """Refuse an output folder that is a file or sits under a file or an unwritable folder (nothing is
    created here)."""
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            raise FileError(f"{option} {path}: is a file, not a folder; give a folder")
        if not os.access(p, os.W_OK | os.X_OK):
            raise FileError(f"{option} {path}: the folder is not writable")
        return p
    parent = p.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise FileError(f"{option} {path}: {parent} is a file, so no folder can be made under it")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise FileError(f"{option} {path}: cannot create it ({parent} is not writable)")
    return p


def make_folder(path: str | os.PathLike, option: str = "--out") -> Path:
    """Create the output folder (the last step of validation) or say in one line why it cannot be."""
    p = out_folder(path, option)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FileError(f"{option} {path}: cannot create the folder: {exc.strerror or exc}") from None
    return p


def check_settings() -> None:
    """The model settings from the environment (TOOLKIT_* numbers, the price file, the cache folder),
    checked before anything is written: each bad one is a ``FileError`` naming it."""
    from toolkit.llm.health import deadline_s
    from toolkit.llm.model import ModelConfig, read_prices

    try:
        config = ModelConfig.from_env()
        deadline_s(config.timeout_s, refuse=True)
        if os.environ.get("TOOLKIT_PRICES"):
            read_prices(os.environ["TOOLKIT_PRICES"])
    except ValueError as exc:
        raise FileError(one_line(exc)) from None
    if config.cache_dir:
        out_folder(config.cache_dir, "TOOLKIT_CACHE_DIR")


def check_spec(spec: str, seats: list[str] | None = None, option: str = "--model", probe: bool = True) -> None:
    """Refuse a model spec that cannot work, without starting anything. ``seats`` (a game's seats) lets a
    scripted file's seat names be checked. The environment's model settings are checked first."""
    check_settings()
    try:
        kind, arg = parse_spec(spec)
        spec_params(spec)  # provider parameters: checked here, before anything starts
    except ValueError as exc:
        if "?" in str(spec):
            raise FileError(f"{option}: {exc}") from None
        raise FileError(f"{option}: {exc}; specs are {known_specs()}") from None
    try:
        arg = expand(arg)
    except ValueError as exc:
        raise FileError(f"{option} {one_line(spec, 80)}: {exc}") from None
    if kind == "human":
        raise FileError(f"{option} human: human seats are played in the notebook widgets, not the CLI")
    provider = find(kind)
    if provider is None:
        raise FileError(f"{option} {one_line(spec, 80)}: unknown model spec{did_you_mean_spec(spec)}; specs are "
                        f"{known_specs()}")
    if provider.check is not None:  # the provider's own check (toolkit.llm.providers, or its entry point)
        try:
            provider.check(arg, seats, probe)
        except FileError:
            raise  # a user file's own line (a scripted file), already naming it
        except (ValueError, OSError) as exc:
            message = one_line(exc)
            if not message.startswith(f"{kind}:"):  # say which spec, unless the check did
                message = f"{one_line(mask_url_credentials(spec), 80)}: {message}"
            raise FileError(f"{option}: {message}") from None
    if not provider.build_to_check:
        return
    try:
        get_model(spec)  # offline backends are cheap to build and check their own arguments
    except (ValueError, OSError) as exc:
        raise FileError(f"{option}: {one_line(exc)}") from None


def check_environment(kind: str, option: str = "--env") -> None:
    """The execution environment ``kind`` can run here (its declaration's check, ``toolkit.agent.environments.kinds``),
    before anything is created: a missing engine or daemon is one line naming the kinds to choose instead."""
    from toolkit.agent.environments import kinds

    problem = kinds.refusal(kind)
    if problem:
        raise FileError(f"{option} {kind}: {problem}")


def check_named_specs(parameters: dict, source: str) -> None:
    """A first, cheap pass over a study file's raw ``parameters`` and ``grid`` (each a mapping; a grid's values
    are lists): every value that parses as a model spec (keys ``*model`` and ``spec``, and ``seats``' specs) is
    checked without probing, so a spec that cannot work (an extra not installed, no key) is refused in one line
    before the notebook machinery (papermill, nbformat: seconds) is imported. Names of a ``models:`` block do not
    parse as specs and wait for the full check."""
    for key, value in parameters.items():
        values = value if isinstance(value, list) else [value]
        if str(key) == "seats":
            values = [v.get("spec") if isinstance(v, dict) else v for seats in values if isinstance(seats, dict)
                      for v in seats.values()]
        elif not (str(key).endswith("model") or key == "spec"):
            continue
        for spec in values:
            if not isinstance(spec, str) or "{task}" in spec:  # the engineer suite fills in each task's folder
                continue
            try:
                parse_spec(spec)
            except ValueError:
                continue
            check_spec(spec, option=f"{source}: {key}", probe=False)


def check_executor(args: argparse.Namespace) -> None:
    """``--executor`` (dask with a ``--scheduler``, else local by default): its extra installed."""
    from toolkit.study.executors import EXECUTORS

    args.executor = "dask" if args.scheduler else args.executor or "local"
    if EXECUTORS[args.executor].needs:
        check_extra(EXECUTORS[args.executor].needs, EXECUTORS[args.executor].extra, f"--executor {args.executor}")


def check_extra(module: str, extra: str, what: str) -> None:
    """``module``: a module name, or several separated by commas (each must be installed)."""
    if any(importlib.util.find_spec(m.strip().split(".")[0]) is None for m in module.split(",")):
        raise FileError(f"{what} needs the {extra} extra: pip install -e '.[{extra}]'")
