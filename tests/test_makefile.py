"""`make test` installs what its tests need, or says in one line what to run: the real Makefile, run by make."""

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

if shutil.which("make") is None:
    pytest.fail("make is not installed (apt-get install -y make)", pytrace=False)


def make(tmp_path, *args, uid="1000"):
    """``make`` in the repository with ``id -u`` answering ``uid`` and the venv's stamps out of the way."""
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    (bin_ / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (bin_ / "id").chmod(0o755)
    (bin_ / "apt-get").write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path / 'apt.log'}\n")  # never the real one
    (bin_ / "apt-get").chmod(0o755)
    import os
    # run as a top-level make even inside `make test` (CI): MAKELEVEL turns "make:" into "make[1]:", MAKEFLAGS
    # would pass the outer make's options on
    make_vars = ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "ARGS")
    env = {k: v for k, v in os.environ.items() if k not in make_vars}
    env["PATH"] = f"{bin_}:{os.environ['PATH']}"
    return subprocess.run(["make", "-s", "--no-print-directory", *args, "LOCAL_STAMP="], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)


def test_without_root_missing_packages_stop_with_one_line_naming_the_command(tmp_path):
    out = make(tmp_path, "test-deps", f"DEBIAN_PACKAGES=chromium:{tmp_path}/no-chromium bubblewrap:/usr/bin/env")
    assert out.returncode == 2
    ours = [x for x in out.stderr.splitlines() if not x.startswith("make: ***")]  # make adds its own trailer
    assert ours == ["make test needs Debian packages it cannot install without root: sudo apt-get install -y "
                    "chromium"], out.stderr
    assert "bubblewrap" not in out.stderr  # present (here: a file that exists), so not asked for
    assert not (tmp_path / "apt.log").exists()


def test_as_root_missing_packages_are_installed_with_apt_get(tmp_path):
    out = make(tmp_path, "test-deps", f"DEBIAN_PACKAGES=chromium:{tmp_path}/a bubblewrap:{tmp_path}/b", uid="0")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "apt.log").read_text().splitlines() == ["update -qq", "install -y -qq chromium bubblewrap"]


def test_nothing_is_installed_when_everything_is_there(tmp_path):
    out = make(tmp_path, "test-deps", "DEBIAN_PACKAGES=x:/usr/bin/env", uid="0")
    assert out.returncode == 0 and out.stdout == "" and not (tmp_path / "apt.log").exists()


def test_ci_is_a_thin_wrapper_around_make_test_and_a_failing_fast_tier_fails_it():
    lines = [x for x in (REPO / ".ci" / "run").read_text().splitlines() if x.strip() and not x.startswith("#")]
    assert "make test" in lines and len(lines) <= 10
    assert "make check || check=$?" in lines and any("SECONDS" in x for x in lines)  # the fast tier, timed
    assert lines[-1].startswith('[ "$check" = 0 ] ||') and "exit 1" in lines[-1]  # its failure fails CI


def test_the_fast_tier_collects_without_the_full_tiers_tools(tmp_path):
    """`make check` on a new machine (no chromium yet): the browser module is deselected, and importing it must
    not fail collection (it did: a module-level failure is an error whatever -m selects)."""
    import os
    import sys
    fast = "not (slow or sandbox or browser or local_model or interop)"
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "-m", fast, "tests/ui/test_browser.py"], cwd=REPO, capture_output=True, text=True,
                         env={**os.environ, "TOOLKIT_TEST_CHROMIUM": str(tmp_path / "no-chromium")}, timeout=120)
    assert out.returncode == 5, out.stdout[-2000:]  # 5: every test deselected, nothing failed
    assert "error" not in out.stdout.lower(), out.stdout[-2000:]
