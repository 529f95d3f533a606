"""A registry of one kind of plug-in, by name: the one place its declarations are listed, read by everything
that offers them (command-line choices and help, preflight, widgets, the docs' tables). A plain dict (iterate,
``in``, ``del`` as usual) whose ``register`` checks the name and ``one`` refuses an unknown name in one line."""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(dict, Generic[T]):
    def __init__(self, what: str):
        super().__init__()
        self.what = what  # "discussion", "environment": the word the error lines use

    def register(self, item: T) -> T:
        name = getattr(item, "name", "")
        if not name or not name.isidentifier():
            raise ValueError(f"a {self.what} needs a name of letters, digits and _: {item!r}")
        self[name] = item
        return item

    def one(self, name: str) -> T:
        if name not in self:
            raise KeyError(f"unknown {self.what} {name!r}; choose one of {', '.join(self)}")
        return self[name]
