"""Every notebook runs top to bottom in a real kernel (nbclient), offline."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def test_there_are_three_notebooks():
    assert [p.name for p in NOTEBOOKS] == ["01_werewolf_session.ipynb", "02_engineer_session.ipynb",
                                           "03_analysis.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_headless(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    cwd = tmp_path / "notebooks"  # the notebooks write to ../results/: here that is tmp_path/results
    cwd.mkdir()
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    assert (tmp_path / "results").is_dir()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    widgets = [o for c in nb.cells for o in c.get("outputs", [])
               if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert widgets  # each notebook shows its widget panel
