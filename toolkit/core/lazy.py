"""A package's face whose names are imported when first used: ``__getattr__`` and ``__dir__`` for a package
``__init__`` that lists where each public name lives, so that importing one of its modules stays as cheap as
before (PEP 562)."""

from __future__ import annotations

import sys
import types
from importlib import import_module
from typing import Any, Callable


class _Face(types.ModuleType):
    """A package whose public name is also the name of the module it lives in (``toolkit.record.load``, the
    function, in ``toolkit.record.load``, the module): when that module is imported, Python binds it on the
    package under that name; the package keeps its function there instead (the module stays in
    ``sys.modules``, so ``from toolkit.record.load import ...`` is unchanged)."""

    _same_named: frozenset[str] = frozenset()

    def __setattr__(self, name: str, value: object) -> None:
        if name in self._same_named and isinstance(value, types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


def face(package: str, where: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: each name of ``where`` from its module, on first use. A name
    that is also its module's name stays the name's value once the module is imported (``_Face``)."""
    module = import_module(package)
    namespace = module.__dict__
    same = frozenset(n for n, where_ in where.items() if where_ == f"{package}.{n}")
    if same:
        sys.modules[package].__class__ = type("Face", (_Face,), {"_same_named": same})

    def getattr_(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value = getattr(import_module(where[name]), name)
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *where})

    return getattr_, dir_
