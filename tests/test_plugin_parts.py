"""Forgetting a part of a plug-in fails the fast tier (issue 46, Done when): a declaration of each kind that lacks
a part is refused when it is registered, in one line, and nothing is registered. Each plug-in is defined here, in
the test, as a user would define it in a module of their own. (The kinds whose one part is a prompt file, a
discussion protocol or a vote, are refused at their first rendering: tests/test_plugins.py.)"""

from __future__ import annotations

import pytest

from toolkit.werewolf.engine.events import EventKind
from toolkit.werewolf.engine.roles.base import Role


def _role_without_a_play():
    from toolkit.werewolf.engine import roles

    class Bard(Role):
        name = "Bard"
        actions = ("sing",)

    return roles.REGISTRY, "Bard", lambda: roles.register(Bard())


def _role_taking_a_kaggle_entry():
    from toolkit.werewolf.engine import roles

    class Healer(Role):
        name = "Healer"
        actions = ("mend",)
        plays = {"mend": lambda obs, choices, rng: choices[0]}
        events = (EventKind("mended", decision="mend", kaggle=("DoctorHealActionDataEntry", "heal_action")),)

    return roles.REGISTRY, "Healer", lambda: roles.register(Healer())


def _metric_without_a_note():
    from toolkit.analysis import sections

    return sections.METRICS, "quiet", lambda: sections.register(sections.Metric("quiet", "Quiet", lambda t: None, " "))


def _environment_named_auto():
    from toolkit.agent.environments import kinds

    return kinds.KINDS, "auto", lambda: kinds.register(kinds.Kind("auto", "chooses", True, "no.such:make"))


def _section_without_a_render():
    from toolkit.analysis.werewolf_sections import SECTIONS, Section

    return SECTIONS, "longest", lambda: SECTIONS.register(Section("longest", "The longest game"))


def _executor_without_a_pool():
    from toolkit.study.executors import EXECUTORS, Executor

    return EXECUTORS, "slurm", lambda: EXECUTORS.register(Executor("slurm", "a Slurm allocation", "no.such:cells"))


def _exporter_without_a_summary():
    from toolkit.export import EXPORTERS, Exporter

    return EXPORTERS, "csv", lambda: EXPORTERS.register(Exporter("csv", lambda results, out, options: []))


def _provider_without_a_factory():
    from toolkit.llm.providers import PROVIDERS
    from toolkit.llm.spec import Provider

    return PROVIDERS, "echo", lambda: PROVIDERS.register(Provider("echo"))


def _tool_without_a_name():
    from toolkit.agent.loop import toolset

    return toolset.TOOLS, "", lambda: toolset.register(lambda context: object())


def _decision_under_a_built_in_name():
    from toolkit.prompting.structured_call import Action
    from toolkit.werewolf.seat.decisions import ACTIONS, Target

    return ACTIONS, None, lambda: ACTIONS.register(Action("vote", "werewolf/my_vote.j2", Target))


def _discussion_without_a_summary():
    from toolkit.werewolf.engine import discussions
    from toolkit.werewolf.engine.discussions.base import Discussion

    class Quiet(Discussion):
        name = "quiet"

    return discussions.REGISTRY, "quiet", lambda: discussions.register(Quiet())


def _environment_whose_class_does_not_import():
    from toolkit.agent.environments import kinds

    return kinds.KINDS, "mine", lambda: kinds.register(kinds.Kind("mine", "mine", True, "no_such_module:Thing"))


def _tool_class_without_a_tool():
    from toolkit.agent.loop import toolset

    class Toolless:
        def __init__(self, context):
            pass

    return toolset.TOOLS, "Toolless", lambda: toolset.register(Toolless)


CASES = {
    "a role without a rule-based play": (_role_without_a_play, r"no rule-based play for 'sing'"),
    "a role reusing a Kaggle entry": (_role_taking_a_kaggle_entry, r"records two decisions"),
    "a metric without a note": (_metric_without_a_note, r"a note saying what it compares with"),
    "an environment kind named auto": (_environment_named_auto, r"'auto' is not a kind"),
    "a report section without its render": (_section_without_a_render, r"missing 1 required .*'render'"),
    "an executor without its pool": (_executor_without_a_pool, r"missing 1 required .*'pool'"),
    "an exporter without its summary": (_exporter_without_a_summary, r"missing 1 required .*'summary'"),
    "a provider without its factory": (_provider_without_a_factory, r"missing 1 required .*'factory'"),
    "a tool without a name": (_tool_without_a_name, r"a tool needs a name"),
    "a decision under a built-in's name": (_decision_under_a_built_in_name, r"decision 'vote' is built in"),
    "a discussion without a summary": (_discussion_without_a_summary, r"discussion 'quiet' needs a summary"),
    "an environment kind whose class does not import": (_environment_whose_class_does_not_import,
                                                         r"its make 'no_such_module:Thing' does not import"),
    "a tool class without a @tool method": (_tool_class_without_a_tool, r"tool 'Toolless' has no @tool method"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_plug_in_missing_a_part_is_refused_in_one_line_and_not_registered(case):
    make, pattern = CASES[case]
    registry, name, register = make()
    before = dict(registry)
    with pytest.raises((ValueError, TypeError), match=pattern) as refused:
        register()
    assert "\n" not in str(refused.value)
    assert dict(registry) == before
