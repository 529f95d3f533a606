"""A study's plug-ins reach its workers and their cell kernels (session 19's diff read, M2, L1, L7): a real Dask
worker (``dask worker``, a separate process without the caller's ``TOOLKIT_PLUGINS``) plays a sweep cell and an
adaptive tournament's batch whose model is a provider declared in a plug-in module only the caller names; a
cell kernel that cannot import a plug-in fails its cell with the plug-in's line; a widget taken from
``toolkit.ui`` loads the plug-ins first."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from toolkit.core import plugins

pytest.importorskip("dask.distributed")
REPO = Path(__file__).resolve().parents[2]
METERED = """from toolkit.llm import registry
from toolkit.llm.offline import RandomBackend

registry.PROVIDERS.register(registry.Provider("metered", lambda arg, config: RandomBackend(), "metered:NAME",
                                              arg="required", example="metered:small"))
"""


def _cli(*args, cwd, env):
    return subprocess.run([sys.executable, "-m", "toolkit", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={k: v for k, v in {**os.environ, **env}.items() if k != plugins.ENV
                                            or plugins.ENV in env})


@pytest.mark.slow  # a scheduler and a worker process, a papermill kernel, a batch of two games: about a minute
def test_a_plug_in_provider_only_the_caller_names_plays_on_a_dask_worker_and_in_its_cell_kernel(tmp_path):
    from dask.distributed import Client

    from toolkit.llm.providers import PROVIDERS
    from toolkit.study.batches import play_batch
    from toolkit.study.tournament import plan_from_file
    from toolkit.testing.dask_cluster import dask_cluster

    (tmp_path / "plug").mkdir()
    (tmp_path / "plug" / "myplug_metered.py").write_text(METERED)
    path = os.pathsep.join([str(REPO), str(tmp_path / "plug")])  # the worker can import it, but is not told to
    sweep = tmp_path / "one.yaml"
    sweep.write_text("name: one\nnotebook: experiments/werewolf.ipynb\n"
                     "parameters: {n_games: 1, model: 'metered:small'}\ngrid: {seed: [3]}\n")
    tour = tmp_path / "t.yaml"
    tour.write_text(yaml.safe_dump(dict(name="t", models=["metered:small", "heuristic"], presets=["classic7"],
                                        games=2, seed=1)))
    exec(METERED, {})  # this process plans the tournament (it checks the specs), as a coordinator does
    try:
        plan = plan_from_file(tour)[1]
    finally:
        PROVIDERS.unregister("metered")
    cell = sorted(set(plan["cell"]))[0]
    seeds = sorted({int(s) for s in plan.loc[plan["cell"] == cell, "seed"]})[:2]
    with dask_cluster(1, tmp_path / "dask", env={"PYTHONPATH": path, plugins.ENV: ""}) as cluster:
        swept = _cli("sweep", str(sweep), "--scheduler", cluster.address, "--out", str(tmp_path / "r"), cwd=REPO,
                     env={"PYTHONPATH": path, plugins.ENV: "myplug_metered"})
        with Client(cluster.address, timeout=60) as client:  # an adaptive round's batch, as play_round submits it
            batch = client.submit(play_batch, str(tmp_path / "t" / cell), str(tour), cell, seeds,
                                  plugins=("myplug_metered",), pure=False).result(timeout=300)
    done = next((tmp_path / "r" / "one").glob("*/DONE.json"), None)
    assert swept.returncode == 0 and done is not None, swept.stdout[-2000:] + swept.stderr[-2000:]
    assert json.loads(done.read_text())["ok"]  # on main: "unknown provider 'metered'" in the worker's kernel
    assert batch == {"games": len(seeds), "capped": None}  # on main: play_batch loads no plug-in


@pytest.mark.slow  # a papermill kernel
def test_a_plug_in_the_cell_kernel_cannot_import_fails_the_cell_with_its_line(tmp_path):
    """``python -m toolkit`` imports a module in the folder it runs in (sys.path's first entry); the cell's kernel
    runs in the repository and cannot: the cell fails on that, in one line (before, the kernel logged the
    traceback to kernel.log and the notebook ran without the plug-in)."""
    (tmp_path / "myplug_here.py").write_text("")
    sweep = tmp_path / "one.yaml"
    sweep.write_text("name: one\nnotebook: experiments/werewolf.ipynb\nparameters: {n_games: 1}\ngrid: {seed: [3]}\n")
    done = _cli("sweep", str(sweep), "--out", str(tmp_path / "r"), cwd=tmp_path,
                env={"PYTHONPATH": str(REPO), plugins.ENV: "myplug_here"})
    failed = json.loads(next((tmp_path / "r" / "one").glob("*/FAILED.json")).read_text())
    assert failed["ok"] is False and failed["error"].startswith("plug-in 'myplug_here' (TOOLKIT_PLUGINS) does not "
                                                                "load: ModuleNotFoundError"), failed
    assert "(in the cell's kernel)" in failed["error"] and "myplug_here" in done.stdout + done.stderr


@pytest.mark.slow  # imports ipywidgets and the widget's module
def test_a_widget_taken_from_toolkit_ui_loads_the_plug_ins_first(tmp_path, monkeypatch):
    from toolkit.llm.registry import PROVIDERS

    (tmp_path / "myplug_widget.py").write_text(METERED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(plugins.ENV, "myplug_widget")
    assert "metered" not in PROVIDERS
    try:
        import toolkit.ui

        assert toolkit.ui.ResultsExplorer is not None
        assert "metered" in PROVIDERS
    finally:
        PROVIDERS.pop("metered", None)
        plugins._loaded.discard("myplug_widget")
        sys.modules.pop("myplug_widget", None)
