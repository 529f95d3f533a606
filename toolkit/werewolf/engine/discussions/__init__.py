"""The discussion protocols, one module each (``base.Discussion`` says what the engine asks a protocol). The
registry holds every protocol a preset's ``discussion`` may name; ``register`` adds one more (a protocol defined
outside the package, e.g. in a test). A shipped protocol is a module here holding ``DISCUSSIONS`` (the
protocols it defines), named in ``MODULES``, and its prompt file ``prompts/werewolf/discussions/<name>.j2`` (the
rules' clause for the day's talk). The command line (``play --discussion``), the widget's choices, Kaggle's
replay reader and the docs' table read the registry."""

from __future__ import annotations

from importlib import import_module

from toolkit.core.registry import Registry
from toolkit.werewolf.engine.discussions.base import Discussion

__all__ = ["MODULES", "REGISTRY", "Discussion", "get", "register"]

MODULES = ("round_robin", "parallel", "bidding")
REGISTRY: Registry[Discussion] = Registry("discussion", needs=("summary",))
register, get = REGISTRY.register, REGISTRY.one


for _module in MODULES:
    for _discussion in import_module(f"{__name__}.{_module}").DISCUSSIONS:
        register(_discussion)
REGISTRY.seal()  # a plug-in registers a protocol of its own under another name
