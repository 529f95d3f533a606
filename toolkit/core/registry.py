"""A registry of one kind of plug-in, by name: the one place its declarations are listed, read by everything
that offers them (command-line choices and help, preflight, widgets, the docs' tables). Every kind of plug-in has
one, declared in the module that defines the kind (roles, event kinds through the roles, decisions, discussions,
day votes and tie rules, model providers, environment kinds, exporters, report metrics and sections, engineer
tools, executors).

A plain dict (iterate, ``in``, ``del`` as usual). ``register`` adds a declaration under its name (its ``key``
attribute, or the ``name`` given) after the kind's own ``check``, and returns it, so it also serves as a
decorator; ``one`` refuses an unknown name in one line. ``seal`` marks what the package registered itself as
built in. Two different declarations under one name are refused in one line: among the package's own (before
``seal``) always, and after it a plug-in cannot replace a built-in (a plug-in's ``bubblewrap`` environment that
confines nothing). Registering the same declaration again (a notebook cell run twice) works, as does replacing a
plug-in's own."""

from __future__ import annotations

import re
from importlib import import_module
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


class Registry(dict, Generic[T]):
    def __init__(self, what: str, *, key: str | Callable[[Any], str] = "name",
                 check: Callable[[T], None] | None = None, names: str = r"[A-Za-z_]\w*"):
        super().__init__()
        self.what = what  # "discussion", "environment": the word the error lines use
        self.key = key  # the attribute holding a declaration's name, or a function of it
        self.check = check  # raises a ValueError of one line for a declaration that lacks a part
        self.names = re.compile(names)
        self.builtin: set[str] = set()
        self.sealed = False

    def name_of(self, item: Any) -> str:
        return str(self.key(item) if callable(self.key) else getattr(item, self.key, "") or "")

    def register(self, item: T, name: str | None = None) -> T:
        name = name or self.name_of(item)
        if not name or not self.names.fullmatch(name):
            raise ValueError(f"a {self.what} needs a name of letters, digits and _: {item!r}")
        if name in self and not same(self[name], item) and (not self.sealed or name in self.builtin):
            raise ValueError(f"{self.what} {name!r} is built in: a plug-in cannot replace it; register yours under "
                             "another name" if self.sealed else f"two {self.what}s named {name!r}")
        if self.check is not None:
            self.check(item)
        self[name] = item
        return item

    def seal(self) -> None:
        """What is registered so far is the package's own (built in)."""
        self.builtin, self.sealed = set(self), True

    def one(self, name: str) -> T:
        if name not in self:
            raise KeyError(f"unknown {self.what} {name!r}; choose one of {', '.join(self)}")
        return self[name]


def same(old: object, new: object) -> bool:
    """The same declaration: the same object, an equal one, or one of the same class with the same attributes."""
    return old is new or old == new or (type(old) is type(new) and hasattr(new, "__dict__")
                                        and vars(old) == vars(new))


def resolve(where: str | Callable[..., Any]) -> Callable[..., Any]:
    """A declaration's part named ``"module:name"`` (imported only now, so a registry stays light to import), or
    the callable itself."""
    if callable(where):
        return where
    module, _, name = where.partition(":")
    return getattr(import_module(module), name)
