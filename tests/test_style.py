"""The code keeps its house style: ruff (configured in pyproject.toml: line length 120, pycodestyle errors
and warnings, pyflakes) finds nothing in the package, the tests and the benchmarks."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "toolkit", "tests", "benchmarks"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-1000:]
