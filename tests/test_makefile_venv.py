"""The Makefile's install stamp and a shared ``VENV=`` (session 19's incident: ``make check VENV=<another
checkout's venv>`` from a fresh clone reinstalled that venv's package from the clone, because pyproject.toml's
mtime was newer than the stamp). The venv's python is a test double (a shell script logging what it is asked):
a real venv with an editable install from a second checkout takes minutes to build."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

FAKE = """#!/bin/sh
if [ "$1" = "-c" ]; then echo "{where}"; exit 0; fi
echo "$@" >> "{log}"
"""

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _checkout(tmp_path, where: str) -> tuple[Path, Path, Path]:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copy(REPO / "Makefile", checkout)
    shutil.copy(REPO / "pyproject.toml", checkout)
    venv, log = tmp_path / "venv", tmp_path / "calls.log"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(FAKE.format(where=where or checkout.resolve(), log=log))
    python.chmod(0o755)
    return checkout, venv, log


def _make(checkout, venv, target):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    return subprocess.run(["make", "--no-print-directory", "-C", str(checkout), f"VENV={venv}",
                           f"PYTHON={venv / 'bin' / 'python'}", target], env=env, capture_output=True, text=True,
                          timeout=60)


def _stamp(checkout, venv) -> Path:
    done = subprocess.run(f"cat {checkout / 'pyproject.toml'} | cksum | cut -d' ' -f1", shell=True,
                          capture_output=True, text=True, check=True)
    return venv / f".installed-{done.stdout.strip()}"


def test_a_newer_pyproject_with_the_same_content_does_not_reinstall(tmp_path):
    checkout, venv, log = _checkout(tmp_path, "")
    stamp = _stamp(checkout, venv)
    stamp.touch()
    os.utime(stamp, (1, 1))  # the stamp older than pyproject.toml (a fresh clone's)
    done = _make(checkout, venv, str(stamp))
    assert done.returncode == 0, done.stderr
    assert not log.exists()  # nothing installed


def test_a_venv_whose_package_is_installed_from_another_checkout_is_refused_in_one_line(tmp_path):
    checkout, venv, log = _checkout(tmp_path, "/somewhere/else")
    done = _make(checkout, venv, str(_stamp(checkout, venv)))
    assert done.returncode != 0
    line = [s for s in done.stderr.splitlines() if "installed from" in s]
    assert len(line) == 1 and "/somewhere/else" in line[0] and str(checkout.resolve()) in line[0]
    assert not log.exists()  # neither `python -m venv` (it rewrites the shared venv's python) nor pip ran
