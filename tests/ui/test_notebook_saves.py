"""A shipped notebook saved through a real Jupyter server (the REST call JupyterLab's Ctrl+S and autosave make)
leaves ``git status`` empty: the server's pre_save_hook (the Makefile's Jupyter config) saves it as git stores it.
Without the hook git listed it as modified (its size changed), though the clean filter staged nothing."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "notebooks" / "03_analysis.ipynb"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def checkout(tmp: Path) -> Path:
    """A git checkout holding a shipped notebook, with the Makefile's notebook filter for this Python."""
    repo = tmp / "repo"
    (repo / "notebooks").mkdir(parents=True)
    shutil.copy(SHIPPED, repo / "notebooks" / SHIPPED.name)
    for name in (".gitattributes", ".gitignore"):  # the checkout's own (.ipynb_checkpoints is ignored)
        shutil.copy(ROOT / name, repo / name)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.org")
    git(repo, "config", "user.name", "t")
    subprocess.run(["make", "-s", "-f", str(ROOT / "Makefile"), "notebook-filter", f"PY={sys.executable}",
                    f"VENV={tmp / 'venv'}"], cwd=repo, check=True, capture_output=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "shipped")
    return repo


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_saving_a_shipped_notebook_through_jupyter_leaves_git_status_empty(tmp_path):
    repo = checkout(tmp_path)
    config = tmp_path / "venv" / "etc" / "jupyter"  # what `make notebook-filter` wrote for that venv
    assert "notebook_saves.strip_before_save" in (config / "jupyter_server_config.json").read_text()
    port = free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config), "PYTHONPATH": str(ROOT),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTER_DATA_DIR": str(tmp_path / "data")}
    server = subprocess.Popen([sys.executable, "-m", "jupyter_server", "--allow-root", "--no-browser",
                               f"--port={port}", "--ServerApp.token=t", f"--ServerApp.root_dir={repo}"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}/api/contents/notebooks/{SHIPPED.name}"
        deadline = time.monotonic() + 240
        while True:
            try:
                urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": "token t"}), timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "the Jupyter server did not start"
                time.sleep(1)
        nb = json.loads(SHIPPED.read_text())
        code = next(c for c in nb["cells"] if c["cell_type"] == "code")
        code["execution_count"] = 7  # as a run leaves it: a count and an output
        code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["a run's output\n"]}]
        body = json.dumps({"type": "notebook", "format": "json", "content": nb}).encode()
        save = urllib.request.Request(url, data=body, method="PUT",
                                      headers={"Authorization": "token t", "Content-Type": "application/json"})
        urllib.request.urlopen(save, timeout=60)
    finally:
        server.terminate()
        server.wait(timeout=60)
    saved = (repo / "notebooks" / SHIPPED.name).read_text()
    assert "a run's output" not in saved
    assert git(repo, "status", "--porcelain") == ""


def test_an_untracked_notebook_keeps_its_outputs(tmp_path):
    """Only what git tracks through the filter is stripped: a user's own notebook is saved as it is."""
    from toolkit.ui.notebook_saves import strip_before_save

    repo = checkout(tmp_path)
    model = {"type": "notebook", "content": {"cells": [{"cell_type": "code", "outputs": [{"x": 1}]}]}}
    before = json.dumps(model)

    class Manager:
        root_dir = str(repo)

    strip_before_save(model, "notebooks/mine.ipynb", Manager())
    assert json.dumps(model) == before


@pytest.mark.slow  # nbstripout's start: ~3 s of CPU
def test_a_clone_without_the_filter_defined_saves_the_notebook_as_the_repository_stores_it(tmp_path, monkeypatch):
    """A fresh clone where `make install` never ran has no filter in .git/config (git never clones it): JupyterLab's
    save hook strips the notebook all the same, with pyproject.toml's extra keys, and says once to run
    `make install`. Before, it saved the notebook unchanged: outputs and the kernel's language details made
    `git status` list it."""
    import logging

    import nbformat

    from toolkit.ui.notebook_saves import clean_command, strip_before_save

    repo = tmp_path / "clone"
    (repo / "notebooks").mkdir(parents=True)
    shutil.copy(SHIPPED, repo / "notebooks" / SHIPPED.name)
    for name in (".gitattributes", ".gitignore", "pyproject.toml"):
        shutil.copy(ROOT / name, repo / name)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "shipped")
    assert subprocess.run(["git", "-C", str(repo), "config", "filter.nbstripout.clean"]).returncode == 1
    nb = json.loads(SHIPPED.read_text())
    nb["metadata"]["language_info"].update(version="3.11.7", pygments_lexer="ipython3", mimetype="text/x-python")
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["execution_count"] = 7
    code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["a run's output\n"]}]
    model = {"type": "notebook", "content": nb}

    class Manager:
        root_dir = str(repo)
        log = logging.getLogger("test_notebook_saves")

    warnings = []
    monkeypatch.setattr(Manager.log, "warning", lambda message, *args: warnings.append(message % args))
    strip_before_save(model, f"notebooks/{SHIPPED.name}", Manager())
    assert clean_command(repo / "notebooks" / SHIPPED.name, Manager.log)  # a second save: no second warning
    # what Jupyter's contents manager then writes
    nbformat.write(nbformat.from_dict(model["content"]), repo / "notebooks" / SHIPPED.name, version=nbformat.NO_CONVERT)
    assert git(repo, "status", "--porcelain") == ""
    assert len(warnings) == 1 and "make install" in warnings[0]
