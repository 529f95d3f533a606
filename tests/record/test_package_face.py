"""The record package's face: importing one of its modules (the row classes) loads no pandas, and the package's
``load`` is the loading function whether or not the module of the same name was imported first (each in a fresh
interpreter: the test process has long imported everything). benchmarks/import_rows.py measures the time."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_importing_the_row_classes_loads_no_pandas():
    assert fresh("import sys, toolkit.record.rows; print(sorted(m for m in ('pandas', 'pyarrow') if m in "
                 "sys.modules))") == "[]"


@pytest.mark.slow
@pytest.mark.parametrize("first", ["import toolkit.record.load", "from toolkit.record.load import Results",
                                   "from toolkit.record import Run", "pass"])
def test_the_packages_load_is_the_function_whatever_was_imported_first(first):
    assert fresh(f"{first}\nimport inspect, toolkit.record\nfrom toolkit.record import load, Results, Run\n"
                 "from toolkit.record.load import load as same\n"
                 "print(inspect.isfunction(load), load is same is toolkit.record.load, Results.__name__, "
                 "Run.__name__)") == "True True Results Run"
