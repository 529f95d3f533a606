"""Plug-ins from outside the package reach ``python -m toolkit`` (a real subprocess) through ``TOOLKIT_PLUGINS``
or a ``toolkit.plugins`` entry point (``toolkit.core.plugins``)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolkit.core import plugins

REPO = Path(__file__).resolve().parents[1]

METERED = """from toolkit.llm import registry
from toolkit.llm.offline import RandomBackend

registry.PROVIDERS.register(registry.Provider("metered", lambda arg, config: RandomBackend(), "metered:NAME",
                                              arg="required", example="metered:small"))
"""


def _cli(tmp_path, *args, plugins_env):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path)]), "TOOLKIT_PLUGINS": plugins_env}
    return subprocess.run([sys.executable, "-m", "toolkit", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.slow  # a subprocess importing the CLI: seconds on a loaded machine
def test_a_provider_in_a_module_named_by_toolkit_plugins_reaches_the_command_line(tmp_path):
    (tmp_path / "myplug_metered.py").write_text(METERED)
    done = _cli(tmp_path, "play", "--help", plugins_env="myplug_metered")
    assert done.returncode == 0, done.stderr
    assert "metered:NAME" in " ".join(done.stdout.split())


@pytest.mark.slow
def test_a_plug_in_module_that_does_not_import_is_one_line_and_exit_2(tmp_path):
    done = _cli(tmp_path, "play", "--help", plugins_env="no_such_plugin_module")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no_such_plugin_module" in done.stderr and "TOOLKIT_PLUGINS" in done.stderr


def test_load_imports_each_named_module_once(tmp_path, monkeypatch):
    (tmp_path / "myplug_counted.py").write_text("import builtins\nbuiltins.myplug_count = "
                                                "getattr(builtins, 'myplug_count', 0) + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TOOLKIT_PLUGINS", " myplug_counted , myplug_counted,")
    try:
        assert plugins.load() == ["myplug_counted"]
        assert plugins.load() == []
        import builtins

        assert builtins.myplug_count == 1
    finally:
        plugins._loaded.discard("myplug_counted")
        sys.modules.pop("myplug_counted", None)
        import builtins

        vars(builtins).pop("myplug_count", None)
