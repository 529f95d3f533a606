"""A registry of one kind of plug-in, by name: the one place its declarations are listed, read by everything
that offers them (command-line choices and help, preflight, widgets, the docs' tables). A plain dict (iterate,
``in``, ``del`` as usual) whose ``register`` checks the name and ``one`` refuses an unknown name in one line.
``seal`` marks what the package registered itself as built in: ``register`` then refuses to replace one of those
with anything else (a plug-in's ``bubblewrap`` environment that confines nothing), while registering the same
declaration again (a notebook cell run twice) still works, as does replacing a plug-in's own."""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(dict, Generic[T]):
    def __init__(self, what: str):
        super().__init__()
        self.what = what  # "discussion", "environment": the word the error lines use
        self.builtin: set[str] = set()

    def register(self, item: T) -> T:
        name = getattr(item, "name", "")
        if not name or not name.isidentifier():
            raise ValueError(f"a {self.what} needs a name of letters, digits and _: {item!r}")
        self.refuse_replacing(name, item)
        self[name] = item
        return item

    def seal(self) -> None:
        """What is registered so far is the package's own (built in)."""
        self.builtin = set(self)

    def refuse_replacing(self, name: str, item: T) -> None:
        """A ValueError of one line when ``item`` would replace a built-in ``name`` with something else."""
        if name in self.builtin and name in self and not same(self[name], item):
            raise ValueError(f"{self.what} {name!r} is built in: a plug-in cannot replace it; register yours under "
                             "another name")

    def one(self, name: str) -> T:
        if name not in self:
            raise KeyError(f"unknown {self.what} {name!r}; choose one of {', '.join(self)}")
        return self[name]


def same(old: object, new: object) -> bool:
    """The same declaration: the same object, an equal one, or one of the same class with the same attributes."""
    return old is new or old == new or (type(old) is type(new) and hasattr(new, "__dict__")
                                        and vars(old) == vars(new))
