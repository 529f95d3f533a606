"""The engineer's tools, built from one table: a role names the tools it has (``RoleConfig.tools``: ``Editor``,
or one method of it, ``Git.commit``), and each name here says how its object is made from the session's one
``ToolContext``. A tool's names are its methods' (``@tool``: ``Object.method``, or the name the method gives
itself, as ``write_new_code``); nothing is renamed after the fact. Adding a tool: a class with ``@tool``
methods (``toolkit/agent/tools/``) and one line registering it in ``TOOLS``."""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass
from typing import Any, Callable

from toolkit.agent.environments.environment import Environment
from toolkit.agent.environments.workspace import Workspace
from toolkit.agent.loop.plan import Plan
from toolkit.agent.tools.base import Toolbox
from toolkit.agent.tools.codegen import CodeReview, CodeWriter
from toolkit.agent.tools.deployer import Deployer, ImageGetter
from toolkit.agent.tools.editor import Editor
from toolkit.agent.tools.git import Git
from toolkit.agent.tools.human import Channel, Human
from toolkit.agent.tools.terminal import Terminal
from toolkit.core.files import did_you_mean
from toolkit.core.registry import Registry


@dataclass
class ToolContext:
    """What every tool of a session is made from: its workspace and environment (where every command runs:
    there is no other), its plan and editor (the loop's context shows them), the human channel, and the two
    calls back into the session (``ask``: a model call on its behalf; ``land``: take its result in)."""

    workspace: Workspace
    environment: Environment
    plan: Plan
    editor: Editor
    channel: Channel
    ask: Callable[..., Any]
    land: Callable[[], str]
    remote: str = "origin"
    terminal_timeout_s: float = 60.0


def _has_tools(make: Callable[[ToolContext], Any]) -> None:
    """A tool class has a ``@tool`` method (a role naming one without would get no tool, and nothing said)."""
    if inspect.isclass(make) and not any(hasattr(getattr(make, n, None), "__tool__") for n in dir(make)):
        raise ValueError(f"tool {make.__name__!r} has no @tool method (toolkit.agent.tools.base.tool)")


# a tool's name -> what makes its object from the session's ToolContext (a class taking the context is one)
TOOLS: Registry[Callable[[ToolContext], Any]] = Registry("tool", key=lambda make: getattr(make, "__name__", ""),
                                                         check=_has_tools)
for _name, _make in {
    "Plan": lambda c: c.plan,
    "Editor": lambda c: c.editor,
    "Terminal": lambda c: Terminal(c.workspace, timeout_s=c.terminal_timeout_s, environment=c.environment),
    "Git": lambda c: Git(c.workspace, c.remote, environment=c.environment, land=c.land),
    "CodeWriter": lambda c: CodeWriter(c.ask, c.workspace, c.editor),
    "CodeReview": lambda c: CodeReview(c.ask, c.workspace, c.editor, c.environment),
    "Deployer": lambda c: Deployer(c.workspace, environment=c.environment),
    "ImageGetter": lambda c: ImageGetter(c.workspace),
    "Human": lambda c: Human(c.channel),
}.items():
    TOOLS.register(_make, _name)
TOOLS.seal()
register = TOOLS.register  # ``register(Clock)``: a class taking the ToolContext, named after itself


def build(names: list[str], context: ToolContext, toolbox: Toolbox, role: str = "") -> dict[str, Any]:
    """The objects of the tools ``names`` (each made once, however many of its methods are named), their
    ``@tool`` methods added to ``toolbox``. An unknown tool or method is a ValueError of one line."""
    made: dict[str, Any] = {}
    for name in names:
        base, _, only = name.partition(".")
        if base not in TOOLS:
            raise ValueError(f"role {role}: no tool {base!r}{did_you_mean(base, list(TOOLS))}; tools are "
                             f"{', '.join(TOOLS)}")
        obj = made[base] = made.get(base) or TOOLS[base](context)
        before = set(toolbox.specs)
        toolbox.add(obj, prefix=base, only=[only] if only else None)
        if only and set(toolbox.specs) == before:  # a misspelt method would silently give no tool
            methods = sorted(s.split(".")[-1] for s in Toolbox().add(obj, prefix=base).specs)
            raise ValueError(f"role {role}: {base} has no tool {only!r}{did_you_mean(only, methods)}; "
                             f"its tools are {', '.join(methods)}")
    return made


async def close(made: dict[str, Any]) -> None:
    """Close what the tools opened (the Terminal's shell, the Deployer's server): every tool, even after one
    whose close raised; then the first error is raised (a later one is a warning line naming its tool)."""
    first: BaseException | None = None
    for name, obj in made.items():
        closing = getattr(obj, "close", None)
        if callable(closing):
            try:
                outcome = closing()
                if inspect.isawaitable(outcome):
                    await outcome
            except BaseException as exc:  # raised below, once every tool is closed
                if first is None:
                    first = exc
                else:
                    warnings.warn(f"{name}.close also failed: {type(exc).__name__}: {exc}", stacklevel=2)
    if first is not None:
        raise first
