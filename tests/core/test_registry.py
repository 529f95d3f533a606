"""One ``Registry`` for every kind of plug-in: each kind's declarations are in one, declared where the kind is
defined; ``register`` checks a declaration's parts, refuses two different declarations under one name in one
line, and is what every list and ``--help`` choice reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.core.registry import Registry

EXAMPLES = Path(__file__).resolve().parents[2] / "results" / "examples"


def test_every_kind_of_plug_in_is_one_registry():
    """Before, metrics, engineer tools and model providers were plain dicts (no check, no protection of the
    built-ins) and the executors a list written twice in the command line."""
    from toolkit.agent.environments.kinds import KINDS
    from toolkit.agent.loop.toolset import TOOLS
    from toolkit.analysis.sections import METRICS
    from toolkit.export import EXPORTERS
    from toolkit.llm.registry import PROVIDERS
    from toolkit.study.executors import EXECUTORS
    from toolkit.werewolf.engine import discussions, roles, votes

    kinds = {"role": roles.REGISTRY, "discussion": discussions.REGISTRY, "day vote": votes.REGISTRY,
             "vote tie rule": votes.TIES, "provider": PROVIDERS, "environment": KINDS, "exporter": EXPORTERS,
             "metric": METRICS, "tool": TOOLS, "executor": EXECUTORS}
    for what, registry in kinds.items():
        assert isinstance(registry, Registry) and registry.what == what and registry.sealed, what
    assert {"openai", "random", "scripted"} <= PROVIDERS.builtin and {"local", "dask"} == EXECUTORS.builtin
    assert {"Terminal", "Git", "Editor"} <= TOOLS.builtin


def test_two_declarations_under_one_name_are_one_line():
    class Thing:
        def __init__(self, name, colour):
            self.name, self.colour = name, colour

    things: Registry[Thing] = Registry("thing")
    things.register(Thing("a", "red"))
    things.register(Thing("a", "red"))  # the same declaration again: no error
    with pytest.raises(ValueError, match=r"^two things named 'a'$"):
        things.register(Thing("a", "blue"))  # the package's own, twice: a mistake
    things.seal()
    with pytest.raises(ValueError, match=r"^thing 'a' is built in: a plug-in cannot replace it"):
        things.register(Thing("a", "blue"))
    things.register(Thing("b", "blue"))
    assert things.register(Thing("b", "green")).colour == "green"  # a plug-in's own: its new definition
    with pytest.raises(ValueError, match="a thing needs a name"):
        things.register(Thing("no name", "red"))


def test_a_provider_cannot_take_a_built_in_prefix():
    """Before, ``register("openai")`` silently replaced the OpenAI backend for the whole process."""
    from toolkit.llm.offline import RandomBackend
    from toolkit.llm.registry import PROVIDERS, find, register

    with pytest.raises(ValueError, match=r"^provider 'openai' is built in: a plug-in cannot replace it"):
        register("openai")(lambda arg, config: RandomBackend())
    assert find("openai").real_usage
    register("echo-x")(lambda arg, config: RandomBackend())
    try:
        assert find("echo-x").usage == "echo-x"
    finally:
        del PROVIDERS["echo-x"]


def test_a_metric_and_a_tool_are_registered_as_the_other_kinds_are():
    from toolkit.agent.loop import toolset
    from toolkit.agent.tools.base import tool
    from toolkit.analysis import sections

    class Clock:
        def __init__(self, context):
            pass

        @tool
        def now(self) -> str:
            """The time."""
            return "12:00"

    assert toolset.register(Clock) is Clock and toolset.TOOLS["Clock"] is Clock  # a tool named after its class
    del toolset.TOOLS["Clock"]
    with pytest.raises(ValueError, match=r"^tool 'Git' is built in"):
        toolset.register(Clock, "Git")
    with pytest.raises(ValueError, match="a note saying what it compares with"):
        sections.register(sections.Metric("silent", "Silent", lambda t: None, ""))
    assert "silent" not in sections.METRICS


def test_the_executors_choices_and_help_are_the_registrys(capsys):
    from toolkit.cli import main
    from toolkit.study.executors import EXECUTORS, Executor

    EXECUTORS.register(Executor("slurm", "a Slurm allocation", "toolkit.study.executors:local_cells",
                                "toolkit.study.executors:local_pool"))
    try:
        for command in ("sweep", "tournament"):
            with pytest.raises(SystemExit):
                main([command, "--help"])
            shown = " ".join(capsys.readouterr().out.split())
            assert "{local,dask,slurm}" in shown and "slurm: a Slurm allocation" in shown, command
    finally:
        del EXECUTORS["slurm"]


@pytest.mark.slow
def test_an_exporter_declares_its_own_command_line_options(tmp_path, capsys):
    """An exporter's own option (``Flag``) reaches ``export --help`` and its ``Options``, and another format
    refuses it in one line (before, each format's options were written into the command line by name)."""
    from toolkit.cli import main
    from toolkit.export import EXPORTERS, Exporter, Flag

    def write(results, out, options):
        (out / "stamp.txt").write_text(options.flags["stamp"])
        return [out / "stamp.txt"]

    EXPORTERS.register(Exporter("stamped", write, "one file holding the stamp",
                                flags=(Flag("stamp", "the text the file holds", "TEXT"),)))
    try:
        with pytest.raises(SystemExit):
            main(["export", "--help"])
        assert "--stamp TEXT stamped: the text the file holds" in " ".join(capsys.readouterr().out.split())
        assert main(["export", "stamped", str(EXAMPLES), "--stamp", "hi", "--out", str(tmp_path / "s")]) == 0
        assert (tmp_path / "s" / "stamp.txt").read_text() == "hi"
        assert main(["export", "kaggle", str(EXAMPLES), "--stamp", "hi", "--out", str(tmp_path / "k")]) == 2
        assert capsys.readouterr().err.strip() == "error: --stamp is for the stamped format, not kaggle"
        assert not (tmp_path / "k").exists()
    finally:
        del EXPORTERS["stamped"]
