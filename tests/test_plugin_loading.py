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


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """Plug-in modules written to ``tmp_path`` (on sys.path), forgotten again after the test."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv(plugins.ENV, raising=False)
    before, modules = set(plugins._loaded), set(sys.modules)
    yield tmp_path
    plugins._loaded.intersection_update(before)
    for name in set(sys.modules) - modules:
        if name.startswith("myplug"):
            del sys.modules[name]


def test_any_exception_a_plug_in_raises_as_it_loads_is_one_import_error_naming_it(fresh, monkeypatch):
    (fresh / "myplug_bad.py").write_text("raise ValueError('two discussions named \"x\"')\n")
    (fresh / "myplug_typo.py").write_text("def f(:\n")
    for name, words in (("myplug_bad", "ValueError: two discussions"), ("myplug_typo", "SyntaxError")):
        monkeypatch.setenv(plugins.ENV, name)
        with pytest.raises(ImportError, match=f"plug-in '{name}' \\(TOOLKIT_PLUGINS\\) does not load: {words}"):
            plugins.load()


def test_an_entry_points_module_function_value_is_called_once_and_one_naming_no_function_refused(fresh):
    """``myplug = "myplug:register"``, the usual form, imports the module and calls the function (only the module
    was imported before); a value naming something that is not a function is refused in one line. The entry
    points come from a real distribution's metadata on sys.path; they are read once per process."""
    (fresh / "myplug_ep.py").write_text("import builtins\nCONSTANT = 1\n\n\ndef register():\n"
                                        "    builtins.myplug_calls = getattr(builtins, 'myplug_calls', 0) + 1\n")
    info = fresh / "myplug_ep-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: myplug-ep\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[toolkit.plugins]\nmyplug = myplug_ep:register\n")
    import builtins

    plugins._entry_points.cache_clear()  # this process's scan did not see the distribution made here
    try:
        assert plugins.load() == ["myplug_ep:register"] and plugins.load() == []
        assert builtins.myplug_calls == 1
        assert plugins.names()[-1:] == ["myplug_ep:register"]  # what a study hands its workers
        (info / "entry_points.txt").write_text("[toolkit.plugins]\nmyplug = myplug_ep:CONSTANT\n")
        assert plugins.load() == []  # scanned once per process: the edit is not seen ...
        plugins._entry_points.cache_clear()  # ... until the next process
        with pytest.raises(ImportError, match="entry point 'myplug' of toolkit.plugins.*CONSTANT is not a function"):
            plugins.load()
    finally:
        vars(builtins).pop("myplug_calls", None)
        plugins._entry_points.cache_clear()  # the distribution is gone with tmp_path


def test_a_plug_in_carried_from_the_studys_caller_is_loaded_once(fresh):
    (fresh / "myplug_carried.py").write_text("")
    assert plugins.load(["myplug_carried"]) == ["myplug_carried"] and plugins.load(["myplug_carried"]) == []
    with pytest.raises(ImportError, match="'myplug_missing' \\(the study's caller\\) does not load"):
        plugins.load(["myplug_missing"])
