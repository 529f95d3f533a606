"""A registry of one kind of plug-in, by name: the one place its declarations are listed, read by everything
that offers them (command-line choices and help, preflight, widgets, the docs' tables). Every kind of plug-in has
one, declared in the module that defines the kind (roles, event kinds through the roles, decisions, discussions,
day votes and tie rules, model providers, environment kinds, exporters, report metrics and sections, engineer
tools, executors).

A plain dict (iterate, ``in`` as usual). ``register`` adds a declaration under its name (its ``key`` attribute, or
the ``name`` given) after the kind's own ``check``, and returns it, so it also serves as a decorator; ``one``
refuses an unknown name in one line; ``unregister`` takes a plug-in out again (a test's or a notebook's). ``seal``
marks what the package registered itself as built in. Two different declarations under one name are refused in one
line: among the package's own (before ``seal``) always, and after it a plug-in cannot replace a built-in (a
plug-in's ``bubblewrap`` environment that confines nothing). Registering the same declaration again (a notebook cell
run twice) works; replacing a plug-in's declaration with a different one works (with a warning when it was written
elsewhere: two plug-in packages that chose one name). Every kind refuses, in one line at ``register``, a declaration
without its ``needs`` (a ``summary`` that ``--help`` and the docs show) and a plug-in whose ``"module:name"``
``parts`` do not import (rather than at its first use)."""

from __future__ import annotations

import re
import warnings
from importlib import import_module
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


class Registry(dict, Generic[T]):
    def __init__(self, what: str, *, key: str | Callable[[Any], str] = "name",
                 check: Callable[[T], None] | None = None, names: str = r"[A-Za-z_]\w*",
                 needs: tuple[str, ...] = (), parts: tuple[str, ...] = ()):
        super().__init__()
        self.what = what  # "discussion", "environment": the word the error lines use
        self.key = key  # the attribute holding a declaration's name, or a function of it
        self.check = check  # raises a ValueError of one line for a declaration that lacks a part
        self.names = re.compile(names)
        self.needs = needs  # attributes that must not be empty (a summary)
        self.parts = parts  # attributes that may be "module:name" (or a dict of them): a plug-in's are imported
        self.builtin: set[str] = set()
        self.sealed = False

    def name_of(self, item: Any) -> str:
        return str(self.key(item) if callable(self.key) else getattr(item, self.key, "") or "")

    def register(self, item: T, name: str | None = None) -> T:
        name = name or self.name_of(item)
        if not name or not self.names.fullmatch(name):
            raise ValueError(f"a {self.what} needs a name of letters, digits and _: {item!r}")
        replaces = name in self and not same(self[name], item)
        if replaces and (not self.sealed or name in self.builtin):
            raise ValueError(f"{self.what} {name!r} is built in: a plug-in cannot replace it; register yours under "
                             "another name" if self.sealed else f"two {self.what}s named {name!r}")
        for attr in self.needs:
            if not str(getattr(item, attr, "") or "").strip():
                raise ValueError(f"{self.what} {name!r} needs a {attr} (one line: --help and the docs show it)")
        if self.check is not None:
            self.check(item)
        if self.sealed:
            self._resolves(name, item)
        if replaces and origin(self[name]) != origin(item):
            warnings.warn(f"{self.what} {name!r}: a plug-in's declaration replaces another plug-in's of that name "
                          "(two plug-ins chose one name?)", stacklevel=2)
        self[name] = item
        return item

    def _resolves(self, name: str, item: T) -> None:
        """Each ``"module:name"`` part of a plug-in imports now (not at its first use, a game or a session in)."""
        for attr in self.parts:
            value = getattr(item, attr, None)
            for where in value.values() if isinstance(value, dict) else [value]:
                if isinstance(where, str):
                    try:
                        resolve(where)
                    except Exception as exc:
                        raise ValueError(f"{self.what} {name!r}: its {attr} {where!r} does not import "
                                         f"({type(exc).__name__}: {exc})") from None

    def unregister(self, name: str) -> T:
        """Take a plug-in out again (a test's or a notebook's); a built-in stays."""
        if name in self.builtin:
            raise ValueError(f"{self.what} {name!r} is built in: it cannot be unregistered")
        self.one(name)  # an unknown name: one line
        return self.pop(name)

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


def origin(item: object) -> tuple:
    """Where a declaration was written: its class, when not the package's (a role, a discussion), else the
    functions it holds (an exporter's ``write``). A notebook cell run again writes the same place (no warning);
    another plug-in package another one."""
    kind = type(item)
    if kind.__module__.split(".")[0] != "toolkit":
        return (kind.__module__, kind.__qualname__)
    held = getattr(item, "__dict__", {}).values()
    return tuple(sorted((getattr(v, "__module__", ""), getattr(v, "__qualname__", "")) for v in held if callable(v)))


def resolve(where: str | Callable[..., Any]) -> Callable[..., Any]:
    """A declaration's part named ``"module:name"`` (imported only now, so a registry stays light to import), or
    the callable itself."""
    if callable(where):
        return where
    module, _, name = where.partition(":")
    found = import_module(module)
    for part in name.split("."):
        found = getattr(found, part)
    return found
