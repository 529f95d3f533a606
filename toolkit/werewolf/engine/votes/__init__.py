"""The day's vote, as declarations: how the ballots are taken (``DayVote``, a preset's ``day_vote``) and what a
tie does (``TieRule``, its ``vote_tie``); ``base`` says what the engine asks each. A shipped one is a module here
holding ``VOTES`` and/or ``TIES`` (the declarations it defines), named in ``MODULES``, with its clause of the rules
as a prompt file (``prompts/werewolf/votes/<name>.j2``: ``clause()`` for a way of voting;
``prompts/werewolf/votes/ties/<name>.j2``: ``tie()`` and ``all_abstain()`` for a tie rule). ``register`` and
``register_tie`` add one from outside the package (e.g. a test). The preset's validation and Kaggle's replay
reader read these registries; ``rules.Game`` names no option."""

from __future__ import annotations

from importlib import import_module

from toolkit.core.registry import Registry
from toolkit.werewolf.engine.votes.base import REVOTE, DayVote, TieRule

__all__ = ["MODULES", "REGISTRY", "REVOTE", "TIES", "DayVote", "TieRule", "get", "get_tie", "register",
           "register_tie"]

MODULES = ("simultaneous", "sequential", "ties")
REGISTRY: Registry[DayVote] = Registry("day vote", needs=("summary",))
TIES: Registry[TieRule] = Registry("vote tie rule", needs=("summary",))
register, get = REGISTRY.register, REGISTRY.one
register_tie, get_tie = TIES.register, TIES.one


for _module in MODULES:
    _declared = import_module(f"{__name__}.{_module}")
    for _vote in getattr(_declared, "VOTES", ()):
        register(_vote)
    for _tie in getattr(_declared, "TIES", ()):
        register_tie(_tie)
REGISTRY.seal()  # a plug-in registers its own under another name
TIES.seal()
