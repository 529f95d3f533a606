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


@pytest.mark.slow
def test_an_interrupted_session_is_run_again_by_the_next_run_of_the_cell(tmp_path):
    """A Ctrl-C'd cell leaves its task's session row with ``ended_by`` interrupted (``Session.interrupted``): the next
    run of the cell runs that task again, and the run after that runs nothing (before, the interrupted row counted
    as the task done, so the task was never run)."""
    from toolkit.agent.suite import load_tasks
    from toolkit.record.rows import SessionRow
    from toolkit.record.run_log import Run

    (task,) = load_tasks(names=["eval_commit"])
    with Run(tmp_path / "cell", "engineer") as run:
        run.write(SessionRow(session_id="s-cut", run_id=run.run_id, task=task.task, spec="scripted", steps=1,
                             ended_by="interrupted", success=None, cost_usd=None, wall_s=1.0))
    sessions = run_engineer_cell(str(tmp_path / "cell"), tasks=["eval_commit"], environment="local").sessions
    assert len(sessions) == 2 and sorted(sessions["ended_by"])[-1] == "interrupted"
    assert sessions.loc[sessions["session_id"] != "s-cut", "success"].tolist() == [True]
    again = run_engineer_cell(str(tmp_path / "cell"), tasks=["eval_commit"], environment="local").sessions
    assert len(again) == 2


def test_an_engineer_cells_settings_are_one_object_recorded_as_they_were_and_a_misspelt_one_is_refused(tmp_path):
    """``run_engineer_cell`` takes an ``EngineerCell`` or its folder and settings as keywords (it took ten
    parameters and recorded ``dict(locals())``): the run's config keeps the old keys in their old order, the cap is
    the werewolf cell's declaration (``CellCap``: no ledger without a cap, as before), and a misspelt setting is a
    TypeError naming it before anything is written."""
    import dataclasses

    from toolkit.study import EngineerCell
    from toolkit.study.experiments import CellCap, WerewolfCell

    cell = EngineerCell(str(tmp_path / "cell"), tasks=["add_cli_flag"], max_usd=2.0)
    assert list(cell.settings()) == ["results_dir", "tasks", "model", "max_steps", "experiment", "environment",
                                     "max_usd", "max_tokens", "at_cap", "spend_dir"]
    assert EngineerCell(str(tmp_path)).cap() is None and cell.cap().max_usd == 2.0
    assert issubclass(EngineerCell, CellCap) and issubclass(WerewolfCell, CellCap)
    assert "error_policy" not in {f.name for f in dataclasses.fields(EngineerCell)}  # a game's policy: not here
    assert EngineerCell.of(cell, at_cap="finish").settings() == {**cell.settings(), "at_cap": "finish"}
    with pytest.raises(TypeError, match="max_step"):
        run_engineer_cell(str(tmp_path / "cell"), max_step=3)
    with pytest.raises(EnvironmentUnavailable, match="bogus"):
        run_engineer_cell(cell, environment="bogus")
    assert not (tmp_path / "cell").exists()
