"""``run_engineer_cell`` (what experiments/engineer.ipynb calls): an environment it cannot use is refused before
anything is written."""

import pytest

from toolkit.agent.environments.environment import EnvironmentUnavailable
from toolkit.study.experiments import run_engineer_cell


def test_a_bad_environment_is_refused_before_the_cell_folder_is_made(tmp_path):
    """Before, the cell's folder, a run folder holding only runs.parquet and the task's workspace were made, then
    the session refused the environment."""
    cell = tmp_path / "cell"
    with pytest.raises(EnvironmentUnavailable, match=r"^unknown environment 'bogus'; choose one of [^\n]*local"):
        run_engineer_cell(str(cell), tasks=["add_cli_flag"], environment="bogus")
    assert not cell.exists()
