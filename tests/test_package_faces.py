"""The packages a user imports from have faces: ``toolkit.werewolf``, ``toolkit.record``, ``toolkit.study`` and
``toolkit.agent`` list their public names in ``__all__`` and each one resolves (the README's first example
imports from two of them)."""

import importlib
import subprocess
import sys

import pytest


@pytest.mark.parametrize("package", ["toolkit.werewolf", "toolkit.record", "toolkit.study", "toolkit.agent"])
def test_every_public_name_resolves(package):
    module = importlib.import_module(package)
    assert module.__all__ and all(callable(getattr(module, name)) for name in module.__all__)
    assert set(module.__all__) <= set(dir(module))


@pytest.mark.slow
def test_record_load_is_the_function_even_after_its_module_is_imported():
    """``load`` is also a module's name: the face must hand out the function in a fresh interpreter, whatever
    was imported first."""
    code = ("import toolkit.record.load, toolkit.record.run_log\n"
            "from toolkit.record import Run, load\n"
            "print(load.__module__, callable(load), Run.__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["toolkit.record.load", "True", "Run"], done.stderr
