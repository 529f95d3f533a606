"""--help is plain text: its first line showed the docstring's reStructuredText (``python -m toolkit``)."""

from toolkit.cli import build_parser


def test_the_help_shows_no_restructuredtext_markup():
    text = build_parser(only="play").format_help()
    assert text.splitlines()[2].startswith("python -m toolkit: play, replay")
    assert "``" not in text
