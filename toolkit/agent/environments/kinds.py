"""The kinds of execution environment, each declared once: its name, what it is (one line), whether it confines
the agent's commands, where its class lives and how to learn whether it can run here. The command line
(``engineer --env``, ``engineer-suite --env``), the role files' ``environment.kind``, ``make_environment`` and the
docs' table read this registry; ``register`` adds one more (a kind defined outside the package, e.g. in a test).
This module imports nothing heavy, so ``--help`` stays fast: a kind's class is imported when one is made.

``auto`` is not a kind: it chooses ``bubblewrap`` where it works here, else ``local`` with a warning.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Callable

from toolkit.core.registry import Registry, resolve

__all__ = ["AUTO", "KINDS", "Kind", "choices", "get", "refusal", "register"]

AUTO = "auto"


@dataclass(frozen=True)
class Kind:
    """One kind: ``make`` is ``"module:Class"`` (or the class itself), built as ``Class(workspace, config,
    allowed_remotes, **options)``; ``problem`` (``"module:function"`` or a function of no argument) returns
    None when the kind can run here, else why not in one line."""

    name: str
    summary: str
    confined: bool
    make: str | Callable[..., Any]
    problem: str | Callable[[], str | None] | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def build(self, workspace: str | os.PathLike, config: Any, allowed_remotes: Any = ()) -> Any:
        return resolve(self.make)(workspace, config, allowed_remotes, **self.options)

    def check(self) -> str | None:
        """None when this kind can run here, else why not (one line)."""
        return resolve(self.problem)() if self.problem else None


def _check(kind: Kind) -> None:
    if kind.name == AUTO:
        raise ValueError(f"{AUTO!r} is not a kind: it chooses one")


KINDS: Registry[Kind] = Registry("environment", check=_check, needs=("summary",), parts=("make", "problem"))
register, get = KINDS.register, KINDS.one


def choices() -> list[str]:
    """What ``--env`` and a role's ``environment.kind`` accept: ``auto`` and every registered kind."""
    return [AUTO, *KINDS]


def unknown(kind: str) -> str | None:
    """None when ``kind`` is one of ``choices()``, else the one line every place that refuses it says."""
    return None if kind in choices() else f"unknown environment {kind!r}; choose one of {', '.join(choices())}"


def refusal(kind: str) -> str | None:
    """None when ``kind`` can be chosen here (``auto`` always can), else one line: why not, and what to choose
    instead. ``engineer --env``, a role's ``environment.kind`` and the engineer widget refuse with it."""
    if kind == AUTO:
        return None  # bubblewrap where it works, else local with a warning
    if kind not in KINDS:
        return unknown(kind)
    problem = KINDS[kind].check()
    return f"{problem}; choose one of {', '.join(k for k in choices() if k != kind)}" if problem else None


_ENV = "toolkit.agent.environments"
register(Kind("bubblewrap", "a sandbox (Debian's bwrap): the system read-only, the workspace writable, nothing "
              "else of the host visible, its own network namespace", True, f"{_ENV}.bubblewrap:BubblewrapEnvironment",
              f"{_ENV}.selfcheck:bwrap_problem"))
register(Kind("local", "UNCONFINED: the host, as the current user (an allow-list environment, git hooks off, the "
              "session's processes end with it)", False, f"{_ENV}.local:LocalEnvironment"))
for _engine in ("docker", "podman"):
    register(Kind(_engine, f"a {_engine} container: the workspace mounted, no network", True,
                  f"{_ENV}.container:ContainerEnvironment", lambda engine=_engine: _container_problem(engine),
                  {"engine": _engine}))
KINDS.seal()  # a plug-in cannot replace these (a `bubblewrap` that confines nothing): it registers another name


def _container_problem(engine: str) -> str | None:
    return getattr(import_module(f"{_ENV}.container"), "ContainerEnvironment").problem(engine)
