"""A non-editable install works: the wheel carries the prompts, the agent roles, the presets, the engineer
task suite and the experiment notebooks (toolkit/core/data.py finds them the same way as in a checkout).

The wheel is built from a copy of this checkout's sources (``pip wheel --no-deps``: setuptools builds in the
tree it is given, and tests write only to tmp) and installed with pip into a fresh venv that
borrows its dependencies from this one through a ``.pth`` line naming this venv's site-packages (the
``.pth`` files inside that folder are not processed, so this venv's editable toolkit is not seen). From a
tmp cwd, with no PYTHONPATH, it plays a game, runs one engineer-suite task and one sweep cell.
"""

import ast
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from toolkit.core import data
from toolkit.record.load import load

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "toolkit", *data.SHIPPED)


def test_the_build_ships_what_data_py_names():
    tree = ast.parse((ROOT / "setup.py").read_text())
    shipped = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                   and [t.id for t in n.targets if isinstance(t, ast.Name)] == ["SHIPPED"])
    assert shipped == data.SHIPPED
    manifest = (ROOT / "MANIFEST.in").read_text()
    assert all(f"graft {name}" in manifest for name in data.SHIPPED)  # an sdist carries them too
    assert data.checkout() == ROOT and data.root() == ROOT  # a checkout finds them where the repository keeps them
    assert (data.path("prompts", "agent", "roles") / "engineer.yaml").is_file()
    with pytest.raises(ValueError, match="not shipped"):
        data.path("tests")


def run(cmd, cwd, env, timeout=600):
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{cmd}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python of a fresh venv holding the installed wheel, an environment for it, a tmp cwd)."""
    tmp = tmp_path_factory.mktemp("packaging")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["HOME"] = str(tmp)
    source = tmp / "source"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp / "dist"),
         str(source)], tmp, env)
    wheel = next((tmp / "dist").glob("*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for shipped in ("toolkit/_data/prompts/werewolf/vote.j2", "toolkit/_data/prompts/agent/roles/engineer.yaml",
                    "toolkit/_data/experiments/werewolf.ipynb", "toolkit/_data/experiments/sweeps/example.yaml",
                    "toolkit/_data/experiments/tournaments/example.yaml",
                    "toolkit/_data/experiments/engineer_tasks/fix_function/task.yaml",
                    "toolkit/werewolf/engine/presets/classic7.yaml", "toolkit/llm/prices.yaml",
                    "toolkit/export/templates/game.html"):
        assert shipped in names, shipped
    assert not [n for n in names if "__pycache__" in n or n.startswith(("tests/", "results/"))]
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp, env)
    python = venv / "bin" / "python"
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp, env)
                .strip())
    (site / "borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        tmp, env)
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    cwd = tmp / "elsewhere"
    cwd.mkdir()
    where = run([str(python), "-c", "import toolkit; from toolkit.core import data; "
                 "print(toolkit.__file__); print(data.root()); print(data.checkout())"], cwd, env).split()
    assert where[0] == str(site / "toolkit" / "__init__.py")  # the wheel's copy, not this checkout's
    assert where[1:] == [str(site / "toolkit" / "_data"), "None"]
    return python, env, cwd


def test_an_installed_wheel_plays_a_game(installed):
    python, env, cwd = installed
    out = run([str(python), "-m", "toolkit", "play", "--seed", "3", "--reflection", "--quiet", "--out", "results"],
              cwd, env)
    assert re.search(r"winner: (village|werewolves)", out), out
    tables = load(cwd / "results")
    assert len(tables.games) == 1 and len(tables.calls) > 10
    assert tables.runs["git_sha"].isna().all()  # run by the wheel's toolkit: a checkout's would record its commit


def test_an_installed_wheel_runs_an_engineer_task(installed):
    python, env, cwd = installed
    out = run([str(python), "-m", "toolkit", "engineer-suite", "--task", "fix_function", "--env", "local",
               "--out", "suite"], cwd, env)
    assert "succeeded: 1/1" in out, out
    tables = load(cwd / "suite")
    assert len(tables.sessions) == 1 and tables.runs["git_sha"].isna().all()


def test_an_installed_wheel_runs_a_sweep_cell(installed):
    python, env, cwd = installed
    (cwd / "one.yaml").write_text("name: one-cell\nnotebook: experiments/werewolf.ipynb\n"
                                  "parameters: {n_games: 2, seed: 0, model: heuristic}\ngrid: {preset: [classic7]}\n")
    out = run([str(python), "-m", "toolkit", "sweep", "one.yaml", "--results", "sweeps"], cwd, env, timeout=900)
    cells = list((cwd / "sweeps" / "one-cell").glob("*/DONE.json"))
    assert len(cells) == 1, out
    tables = load(cells[0].parent)
    assert len(tables.games) == 2
    assert tables.runs["git_sha"].isna().all()  # the notebook's kernel ran the wheel's toolkit too
