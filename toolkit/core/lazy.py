"""A package's face whose names are imported when first used: ``__getattr__`` and ``__dir__`` for a package
``__init__`` that lists where each public name lives, so that importing one of its modules stays as cheap as
before (PEP 562)."""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable


def face(package: str, where: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: each name of ``where`` from its module, on first use."""
    namespace = import_module(package).__dict__

    def getattr_(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value = getattr(import_module(where[name]), name)
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *where})

    return getattr_, dir_
