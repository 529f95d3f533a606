"""The host's handling of one result as a whole (issue 43, what the first two passes left): room left on the
user's disk before an archive is kept, names that fold together (``README`` and ``readme``) refused whole, and
what a host git prints read only up to a bound. Crafted tar archives and trees, real git, real files; every
refusal one line, nothing of the result written."""

from __future__ import annotations

import subprocess

import pytest

from tests.agent.test_apply import archive, git, kept_session, listed, small_fs, tree  # noqa: F401  (small_fs: a fixture)
from toolkit.agent.environments import hostgit, result
from toolkit.agent.environments.limits import Limits

MiB = 2**20


def test_an_archive_is_kept_only_with_room_left_on_the_users_disk(tmp_path, small_fs):  # noqa: F811
    """A 3.5 MiB archive for a folder on a 4 MiB file system: refused in one line, nothing under
    ``.agent/results``. On 2648500 it was copied, leaving the user's disk all but full."""
    folder = small_fs / "ws"
    folder.mkdir()
    made = archive(tmp_path / "s1.tar", [("big", "f", b"\0" * (7 * MiB // 2))])
    with pytest.raises(result.ResultError) as refused:
        result.take(folder, "s1", made, files={})
    line = str(refused.value)
    assert "\n" not in line and "free on" in line and "nothing of it was kept" in line, line
    results = folder / ".agent" / "results"
    assert not (results.exists() and list(results.iterdir()))


@pytest.mark.parametrize("members", [
    [("a.txt", "f", b"agent\n"), ("README", "f", b"one\n"), ("readme", "f", b"two\n")],
    [("a.txt", "f", b"agent\n"), ("X", "f", b"file\n"), ("x", "d", None), ("x/y", "f", b"below\n")],
    [("a.txt", "f", b"agent\n"), ("caf\u00e9", "f", b"nfc\n"), ("cafe\u0301", "f", b"nfd\n")],
], ids=["README-readme", "X-below-x", "unicode-forms"])
def test_names_that_fold_together_are_refused_whole(tmp_path, members):
    """Two names one file where case folds: on 2648500 both were written here (and on a folding file system
    the first would be overwritten, or the move fail half-way at ``x/``)."""
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("the user's\n")
    before = tree(folder)
    with pytest.raises(result.ResultError) as refused:
        result.unpack(listed(archive(tmp_path / "s1.tar", members), folder), folder)
    line = str(refused.value)
    assert "\n" not in line and ("differ only in case" in line or "folds onto" in line), line
    assert "nothing changed" in line and tree(folder) == before


def test_a_folder_holding_both_names_still_takes_a_change_to_one(tmp_path):
    """Only names written (or deleted) count: the user's own ``README`` and ``readme``, one changed by the
    session, is applied."""
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "README").write_text("upper\n")
    (folder / "readme").write_text("lower\n")
    made = archive(tmp_path / "s1.tar", [("README", "f", b"upper\n"), ("readme", "f", b"changed\n")])
    assert "unpacked 1 new or changed" in result.unpack(listed(made, folder), folder)
    assert (folder / "readme").read_text() == "changed\n" and (folder / "README").read_text() == "upper\n"


def test_a_change_of_case_is_refused_whole(tmp_path):
    """``readme`` renamed ``README``: where case folds, writing ``README`` then deleting ``readme`` deletes the
    file just written. Refused before anything is written (on 2648500 the git path applied it)."""
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "readme").write_text("the user's\n")
    (folder / "a.txt").write_text("a\n")

    def change(copy):
        (copy / "readme").rename(copy / "README")
        (copy / "a.txt").write_text("changed\n")
    kept_session(folder, change)
    before = tree(folder)
    with pytest.raises(result.ResultError) as refused:
        result.apply(folder, "s1")
    line = str(refused.value)
    assert "\n" not in line and "differ only in case" in line and "nothing changed" in line, line
    assert tree(folder) == before


@pytest.mark.slow
def test_what_a_host_git_prints_is_read_only_up_to_a_bound(tmp_path):
    """A tree listing 25**4 = 390,625 paths (four trees, each listing the next 25 times: a few hundred bytes):
    a host git's ``ls-tree -r`` of it is cut at 16 MiB (``inodes`` KiB, at least 16 MiB) and refused in one line,
    not read whole into the toolkit's memory (~40 MB here; ~10 GB at depth 6)."""
    folder = tmp_path / "ws"
    folder.mkdir()
    git("init", "-q", cwd=folder)
    sha = subprocess.run(["git", "-C", str(folder), "hash-object", "-w", "--stdin"], input=b"b\n",
                         capture_output=True, check=True).stdout.decode().strip()
    mode = "100644 blob"
    for _ in range(4):
        listing = "".join(f"{mode} {sha}\t{i}\n" for i in range(25))
        sha = subprocess.run(["git", "-C", str(folder), "mktree"], input=listing.encode(), capture_output=True,
                             check=True).stdout.decode().strip()
        mode = "040000 tree"
    with pytest.raises(result.ResultError) as refused:
        hostgit.git(folder, "ls-tree", "-r", sha, bounds=hostgit.Bounds.of(Limits(inodes=64)))
    line = str(refused.value)
    assert "\n" not in line and f"printed more than {16 * MiB} bytes" in line, line
