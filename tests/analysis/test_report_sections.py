"""The werewolf report's sections are data, as the metrics are: each a ``Section`` in one registry, rendered from
the report's ``Context`` alone (so one is tested alone), and a study's own section is one function and one
declaration (before, the built-in sections were closures inside one 187-line function and a study could add only
a metric)."""

from __future__ import annotations

import pytest

from toolkit.core.registry import Registry


def test_the_built_in_sections_are_one_registry_in_the_reports_order():
    from toolkit.analysis.werewolf_sections import SECTIONS, Section

    assert isinstance(SECTIONS, Registry) and SECTIONS.sealed
    assert list(SECTIONS)[:3] == ["summary", "win_rates", "models"] and list(SECTIONS)[-1] == "degeneracy"
    assert [s.name for s in SECTIONS.values() if s.eager] == ["summary", "win_rates"]
    with pytest.raises(ValueError, match=r"^report section 'votes' is built in: a plug-in cannot replace it"):
        SECTIONS.register(Section("votes", "My votes", lambda c: []))


@pytest.mark.slow
def test_a_section_added_here_reaches_the_report_and_one_section_renders_alone(tmp_path):
    from toolkit.analysis.report import Report, write_report
    from toolkit.analysis.werewolf_sections import SECTIONS, Context, Section
    from toolkit.study.experiments import run_werewolf_cell

    run_werewolf_cell(str(tmp_path / "res"), n_games=3, seed=0)

    def longest_day(c: Context) -> list[str]:
        return [f"It lasted {int(c.games['days'].max())} days (n = {len(c.games)} games).\n"]

    SECTIONS.register(Section("longest", "The longest game", longest_day))
    SECTIONS.register(Section("never", "Never shown", lambda c: ["## Never\n"], shown=lambda c: False))
    try:
        write_report(tmp_path / "res", tmp_path / "out")
        text = (tmp_path / "out" / "summary.md").read_text()
        # the report writes the section's title as its heading (review F4)
        assert "## The longest game\n\nIt lasted " in text and "(n = 3 games)" in text and "## Never" not in text
        assert text.index("## Degenerate play per model") < text.index("## The longest game")  # after the built-ins
        report = Report(tmp_path / "res", tmp_path / "alone")
        assert [p.title for p in report.parts][-1] == "The longest game"
        # one built-in section alone, from the context only
        context = Context.of(report.tables, tmp_path / "alone", [], tmp_path / "res")
        survival = "".join(SECTIONS["survival"].render(context))
        assert survival.startswith("## Survival and dominance") and "| spec |" in survival
    finally:
        del SECTIONS["longest"], SECTIONS["never"]


def test_a_plug_in_section_is_headed_by_its_title_and_one_without_a_title_is_refused():
    """Session 19 review, F4: a plug-in section's title reached only the progress bar, its text ran on under the
    section before it."""
    from toolkit.analysis.werewolf_sections import SECTIONS, Section, headed

    lengths = Section("lengths", "Game lengths", lambda c: ["Games: 4.\n"])
    assert headed(lengths, None) == ["## Game lengths\n", "Games: 4.\n"]
    for bad in (Section("untitled", " ", lambda c: []), Section("unrendered", "Unrendered", None)):
        with pytest.raises(ValueError, match="it needs a title"):
            SECTIONS.register(bad)
        assert bad.name not in SECTIONS
