"""Apply refuses, before anything is written, a result with two entries on one name and a name the user's file
system cannot hold (review of the sandbox, findings 4 and 5): one line, "not applied, nothing changed", the
folder as it was. Real tar archives (``test_apply.archive``), real files, ``result.unpack``."""

from __future__ import annotations

import pytest

from tests.agent.test_apply import archive, tree
from toolkit.agent.environments import result


@pytest.mark.parametrize("members", [
    [("a.txt", "f", b"agent\n"), ("x", "d", None), ("x", "f", b"file\n")],
    [("a.txt", "f", b"agent\n"), ("x", "f", b"file\n"), ("x", "d", None)],
    [("a.txt", "f", b"agent\n"), ("q", "l", "a.txt"), ("q", "d", None)],
], ids=["dir-then-file", "file-then-dir", "link-then-dir"])
def test_two_entries_on_one_name_write_nothing(tmp_path, members):
    """On 0491331 ``a.txt`` was overwritten and ``x/`` made before the move failed (``Is a directory``)."""
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("the user's\n")
    before = tree(folder)
    with pytest.raises(result.ResultError) as refused:
        result.unpack(archive(tmp_path / "s1.tar", members), folder)
    line = str(refused.value)
    assert "\n" not in line and "more than once" in line and "nothing changed" in line, line
    assert tree(folder) == before


def test_a_name_too_long_for_the_folder_is_one_line(tmp_path):
    """A 300-byte name: on 0491331 ``OSError: [Errno 36] File name too long`` escaped ``apply``; refused by
    the name's own check now (255 bytes a part), as when the result is taken."""
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("the user's\n")
    before = tree(folder)
    made = archive(tmp_path / "s1.tar", [("a.txt", "f", b"agent\n"), ("b" * 300, "f", b"x")])
    with pytest.raises(result.ResultError) as refused:
        result.unpack(made, folder)
    line = str(refused.value)
    assert "\n" not in line and "longer than a name may be" in line and "nothing changed" in line, line
    assert tree(folder) == before
