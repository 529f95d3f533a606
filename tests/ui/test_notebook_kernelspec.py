"""Every shipped notebook names its kernel as JupyterLab writes it on a save (ipykernel's kernelspec): a notebook
saved in JupyterLab is then no change (the old ones said "Python 3"; a save wrote "Python 3 (ipykernel)").
The browser test saves one in JupyterLab (tests/ui/test_browser.py)."""

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_shipped_notebook_names_its_kernel_as_a_save_would():
    for path in [*sorted((REPO / "notebooks").glob("*.ipynb")), *sorted((REPO / "experiments").glob("*.ipynb"))]:
        spec = json.loads(path.read_text())["metadata"]["kernelspec"]
        # (ipykernel's kernel.json)
        assert (spec["name"], spec["display_name"]) == ("python3", "Python 3 (ipykernel)"), path.name
