"""A shipped notebook saved in JupyterLab is no change to the checkout.

git sends every ``.ipynb`` through the ``nbstripout`` clean filter (``.gitattributes``, the Makefile's
``notebook-filter``), so a saved notebook with outputs *stages* nothing; but git lists a file whose size changed as
modified without running the filter, so ``git status`` still showed it. ``strip_before_save`` is JupyterLab's
``pre_save_hook`` (``make install`` names it in the venv's Jupyter config): a notebook that git tracks through that
filter is saved as the filter would store it (no outputs, no execution counts, the filter's extra keys dropped),
by running the very command git runs. A clone whose ``.git/config`` lacks the filter (``make install`` never ran in
it, e.g. JupyterLab started from another venv) is stripped all the same, by ``nbstripout --keep-id`` with the extra
keys of the repository's ``pyproject.toml`` (``[tool.nbstripout]``, the place the Makefile's filter reads too), and
the server log says once to run ``make install``. Any other notebook (untracked, outside a checkout, no filter) is
saved as it is, outputs and all: save a copy under another name to keep a run's outputs.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

TIMEOUT_S = 60


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def clean_command(path: Path, log: Any = None) -> str | None:
    """The clean filter git applies to ``path``, if git tracks it through one (else None)."""
    folder, name = path.parent, path.name
    if _git(folder, "ls-files", "--error-unmatch", "--", name) is None:
        return None
    attr = _git(folder, "check-attr", "filter", "--", name) or ""
    driver = attr.rsplit(": ", 1)[-1]
    if driver in ("", "unspecified", "unset", "set"):
        return None
    return _git(folder, "config", f"filter.{driver}.clean") or _fallback(folder, driver, log)


_warned: set[str] = set()  # the clones whose missing filter the server log has named (once each)


def _fallback(folder: Path, driver: str, log: Any) -> str | None:
    """nbstripout as the Makefile defines it, for a clone whose config lacks the filter (else None)."""
    top = _git(folder, "rev-parse", "--show-toplevel")
    if driver != "nbstripout" or top is None:
        return None
    if top not in _warned and log is not None:
        _warned.add(top)
        log.warning("%s: git's nbstripout filter is not defined in this clone; notebooks are stripped by the save "
                    "hook, but run `make install` there so git's own filter is defined", top)
    keys = extra_keys(Path(top) / "pyproject.toml")
    return shlex.join([sys.executable, "-m", "nbstripout", "--keep-id", "--extra-keys", keys])


def extra_keys(pyproject: Path) -> str:
    """The ``[tool.nbstripout] extra_keys`` of a pyproject.toml, space-separated ("" when it has none)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: tomli, a dependency of jupyterlab there
        import tomli as tomllib
    try:
        config = tomllib.loads(pyproject.read_text())
    except (OSError, ValueError):
        return ""
    return " ".join(str(config.get("tool", {}).get("nbstripout", {}).get("extra_keys", "")).split())


def strip_before_save(model: dict[str, Any], path: str, contents_manager: Any, **_: Any) -> None:
    """JupyterLab's pre-save hook: a tracked, filtered notebook's content becomes what git would store."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    target = Path(getattr(contents_manager, "root_dir", ".")) / path.lstrip("/")
    command = clean_command(target, getattr(contents_manager, "log", None))
    if command is None:
        return
    import nbformat  # the server's own dependency; imported here so the module costs nothing elsewhere

    text = nbformat.writes(nbformat.from_dict(model["content"]))
    try:
        done = subprocess.run(command, shell=True, input=text, capture_output=True, text=True, timeout=TIMEOUT_S,
                              cwd=target.parent)
    except subprocess.TimeoutExpired:
        done = subprocess.CompletedProcess(command, 1, "", f"no answer in {TIMEOUT_S} s")
    if done.returncode != 0 or not done.stdout.strip():  # the filter failed: save what the user has, unchanged
        contents_manager.log.warning("%s: the notebook filter failed (%s); saved with its outputs", path,
                                     done.stderr.strip()[:200])
        return
    model["content"] = json.loads(done.stdout)
