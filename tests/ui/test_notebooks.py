"""Every notebook (notebooks/ and experiments/) runs top to bottom in a real kernel (nbclient), offline, with its
defaults, in a git checkout laid out as the repository's, from its own folder as JupyterLab starts its kernel;
saved with its outputs, it leaves that checkout clean (`git status` says nothing): its run's files land in
git-ignored folders, and the nbstripout filter (.gitattributes; the Makefile's notebook-filter) keeps outputs
out of what git stores. The shipped notebooks carry no outputs."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# 04_rl_door trains a policy through the PettingZoo door: it needs the rl extra and minutes at its defaults, so
# tests/doors/test_learning.py runs it (papermill, small parameters) instead of the widget checks below.
RL_NOTEBOOK = REPO / "notebooks" / "04_rl_door.ipynb"
NOTEBOOKS = [p for p in sorted((REPO / "notebooks").glob("*.ipynb")) if p != RL_NOTEBOOK]
EXPERIMENTS = sorted((REPO / "experiments").glob("*.ipynb"))


def git(cwd, *args) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


def test_there_are_four_notebooks():
    assert [p.name for p in sorted((REPO / "notebooks").glob("*.ipynb"))] == [
        "01_werewolf_session.ipynb", "02_engineer_session.ipynb", "03_analysis.ipynb", "04_rl_door.ipynb"]


def test_every_tracked_notebook_is_shipped_without_outputs():
    tracked = git(REPO, "ls-files", "*.ipynb").split()
    assert len(tracked) >= 6
    for name in tracked:
        cells = json.loads((REPO / name).read_text())["cells"]
        code = [c for c in cells if c["cell_type"] == "code"]
        assert all(c["outputs"] == [] and c["execution_count"] is None for c in code), name
    assert "*.ipynb filter=nbstripout" in (REPO / ".gitattributes").read_text()


def checkout(tmp_path, notebook: Path) -> Path:
    """A git checkout laid out as the repository's (the notebook in its folder, the repository's ignore rules
    and attributes), its filter defined by the Makefile's own target. Only the notebook under test is in it:
    git runs the filter (a Python process, seconds on a busy machine) once per notebook it adds, and the other
    notebooks, never run here, would only add those seconds (six notebooks: about half the module's time)."""
    root = tmp_path / "checkout"
    (root / notebook.parent.name).mkdir(parents=True)
    shutil.copy(notebook, root / notebook.parent.name / notebook.name)
    for name in (".gitignore", ".gitattributes"):
        shutil.copy(REPO / name, root / name)
    git(root, "init", "-q")
    subprocess.run(["make", "-s", "-f", str(REPO / "Makefile"), "notebook-filter", f"PY={sys.executable}"],
                   cwd=root, check=True, capture_output=True)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "shipped")
    return root


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS + EXPERIMENTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_runs_with_its_defaults_and_leaves_the_checkout_clean(path, tmp_path):
    import nbformat  # here, not at the top: with nbclient ~6-9 s of CPU in each process that collects this file
    from nbclient import NotebookClient

    root = checkout(tmp_path, path)
    target = root / path.parent.name / path.name
    nb = nbformat.read(target, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(target.parent)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    if path.parent.name == "notebooks":
        widgets = [o for c in nb.cells for o in c.get("outputs", [])
                   if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
        assert widgets  # each notebook shows its widget panel
    nbformat.write(nb, target)  # saved with its outputs, as JupyterLab's autosave does
    assert sum(len(c.get("outputs", [])) for c in nbformat.read(target, as_version=4).cells) > 0
    written = [p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts and p.suffix != ".ipynb"]
    assert written  # the run wrote its tables, somewhere git ignores:
    status = git(root, "status", "--porcelain", "--untracked-files=all").split()
    assert status in ([], ["M", f"{path.parent.name}/{path.name}"])
    # the saved outputs are no change to git: nothing to diff, nothing to commit (git status marks the file
    # until git add re-reads it through the filter: its size changed, and git trusts a size change)
    assert git(root, "diff") == ""
    git(root, "add", "-A")
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
