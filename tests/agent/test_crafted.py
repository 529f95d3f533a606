"""Results crafted to hurt the host (issue 43's hostile pass, a third time): a tar archive whose extended
header claims any size, a member of negative size (``tarfile`` steps back and reads for ever), an archive
damaged half-way (``tarfile`` stops there quietly, and the rest counted as deleted), names that a folding file
system takes for ``.git`` or ``.agent``, names longer than a file system allows, and more folders than the
user's file system has inodes (the move stopped half-way). Real archives made byte by byte, real files, and as
root a real small file system; every refusal one line, nothing written."""

from __future__ import annotations

import json
import os
import tarfile
import time
from pathlib import Path

import pytest

from tests.agent.test_apply import archive, small_fs, tree  # noqa: F401  (small_fs: a fixture)
from toolkit.agent.environments import hostgit, result, staging
from toolkit.agent.environments.manifest import manifest

MiB = 2**20


def long_name_archive(path: Path, size: int) -> Path:
    """A GNU long-name header of ``size`` bytes (what ``tarfile`` reads whole into memory), then one file."""
    with open(path, "wb") as f:
        head = tarfile.TarInfo("././@LongLink")
        head.type, head.size = tarfile.GNUTYPE_LONGNAME, size + 1
        f.write(head.tobuf(tarfile.GNU_FORMAT))
        f.write(b"a" * size + b"\0" * (512 - size % 512))
        member = tarfile.TarInfo("placeholder")
        member.size = 1
        f.write(member.tobuf(tarfile.GNU_FORMAT) + b"z" + b"\0" * 511 + b"\0" * 1024)
    return path


def test_an_extended_header_larger_than_a_name_is_refused_before_it_is_read(tmp_path):
    """A 1 MiB long name (its header claims it; 256 MiB took 800 MB of the host's memory, 2 GiB would take
    ~6 GiB): refused in one line at the session's end, nothing kept. On the old code it was read whole and
    the archive kept (``disk_mb`` alone bounded it)."""
    folder = tmp_path / "ws"
    folder.mkdir()
    made = long_name_archive(tmp_path / "s1.tar", MiB)
    with pytest.raises(result.ResultError) as refused:
        result.take(folder, "s1", made, files={})
    line = str(refused.value)
    assert "\n" not in line and len(line) < 300 and "sparse or extended header" in line, line[:300]
    assert not (folder / ".agent").exists()


def negative_size_archive(path: Path, pax: bool) -> Path:
    """Two empty files, then a member whose size is -1536 (a pax record's) or -1024 (GNU base-256 in the
    header): ``tarfile`` (before 3.11.13) steps back to the second member and reads the same three for ever."""
    with open(path, "wb") as f:
        for name in ("x", "y"):
            f.write(tarfile.TarInfo(name).tobuf(tarfile.PAX_FORMAT))
        last = tarfile.TarInfo("a")
        if pax:
            last.pax_headers = {"size": "-1536"}
            f.write(last.tobuf(tarfile.PAX_FORMAT))
        else:
            block = bytearray(last.tobuf(tarfile.GNU_FORMAT))
            block[124:136] = b"\xff" + (256**11 - 1024).to_bytes(11, "big")
            block[148:156] = b" " * 8
            block[148:155] = b"%06o\0" % sum(block)
            f.write(bytes(block))
        f.write(b"\0" * 1024)
    return path


@pytest.mark.parametrize("pax", [False, True], ids=["header", "pax"])
def test_a_member_of_negative_size_is_refused_at_once(tmp_path, monkeypatch, pax):
    """On the old code the host read the same members until the intake's deadline (3 s here, 600 s in use),
    holding every one: 13 MB a second, ~8 GB by the deadline, at every session's end."""
    monkeypatch.setattr(hostgit, "INTAKE_S", 3)
    folder = tmp_path / "ws"
    folder.mkdir()
    made = negative_size_archive(tmp_path / "s1.tar", pax)
    began = time.monotonic()
    with pytest.raises(result.ResultError, match="negative") as refused:
        result.take(folder, "s1", made, files={})
    assert "\n" not in str(refused.value) and time.monotonic() - began < 1
    assert not (folder / ".agent").exists()


@pytest.mark.parametrize("ending", ["garbage", "cut"])
def test_a_damaged_archive_applies_nothing_and_deletes_nothing(tmp_path, ending):
    """A file, then a damaged header (or the end cut off) and a file after it: ``tarfile`` ends quietly at
    the damage, so on the old code the first file was written and the user's ``keep.txt``, listed at the
    start and not in what was read, deleted as if the session had deleted it. Refused whole now."""
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "keep.txt").write_text("the user's\n")
    good = archive(tmp_path / "good.tar", [("new.txt", "f", b"new\n")]).read_bytes()
    later = archive(tmp_path / "later.tar", [("keep.txt", "f", b"the user's\n")]).read_bytes()
    first = good[:1024]  # the header and one block of data: no end of archive
    made = tmp_path / "s1.tar"
    made.write_bytes(first + b"\x7f" * 512 + later if ending == "garbage" else first)
    made.with_suffix(".start.json").write_text(json.dumps(manifest(folder)))
    before = tree(folder)
    with pytest.raises(result.ResultError) as refused:
        result.unpack(made, folder)
    assert "\n" not in str(refused.value) and "refused" in str(refused.value)
    assert tree(folder) == before


@pytest.mark.parametrize("name", [".GIT/hooks/pre-commit", ".Git/config", ".g\u200cit/hooks/post-checkout",
                                  ".git./hooks/pre-commit", "GIT~1/config", "sub/.GIT/config",
                                  ".AGENT/results/s2.start.json"])
def test_names_a_folding_file_system_takes_for_git_or_agent_are_refused(tmp_path, name):
    """Where names fold (macOS, Windows, exFAT, an ext4 ``casefold`` folder), ``.GIT/hooks/pre-commit`` is the
    user's own hook and ``.AGENT/results`` the toolkit's kept results: refused as ``.git``/``.agent`` are (git's
    own rule for its working trees). On the old code they were written (on such a system, into them)."""
    folder = tmp_path / "ws"
    folder.mkdir()
    made = archive(tmp_path / "s1.tar", [("a.txt", "f", b"a"), (name, "f", b"#!/bin/sh\necho hook\n")])
    with pytest.raises(result.ResultError, match="a .git or .agent path"):
        result.unpack(made, folder)
    assert tree(folder) == {}


@pytest.mark.parametrize("name", ["x" * 256, "/".join(["d" * 200] * 21)])
def test_a_name_longer_than_a_file_system_allows_is_refused_at_the_sessions_end(tmp_path, name):
    """A part over 255 bytes, or a path over 4095: no file system of the user's takes it, so the result is
    refused when taken, not kept to fail at ``--apply``. On the old code it was kept."""
    folder = tmp_path / "ws"
    folder.mkdir()
    made = archive(tmp_path / "s1.tar", [("a.txt", "f", b"a"), (name, "f", b"x")])
    with pytest.raises(result.ResultError, match="longer than a name may be"):
        result.take(folder, "s1", made, files={})
    assert not (folder / ".agent").exists()


def test_more_folders_than_the_file_system_has_inodes_writes_nothing(tmp_path, small_fs):  # noqa: F811
    """One file and 30 folders onto a file system of 24 inodes: the staging holds the file, the move makes
    the folders. Refused before anything is written; on the old code the move stopped at ``d19`` (ENOSPC, a
    bare ``OSError``), 19 folders written and the file not."""
    folder = small_fs / "ws"
    folder.mkdir()
    made = archive(tmp_path / "s1.tar", [("a.txt", "f", b"x")] + [(f"d{i:02}", "d", None) for i in range(30)])
    with pytest.raises(result.ResultError) as refused:
        result.unpack(made, folder)
    assert "inodes free" in str(refused.value) and "nothing changed" in str(refused.value)
    assert sorted(os.listdir(folder)) == []


def test_a_move_that_fails_part_way_is_undone(tmp_path, small_fs, monkeypatch):  # noqa: F811
    """The user's ``keep.txt`` replaced first, then a file below 30 new folders on a file system of 24 inodes.
    ``staging.room`` is made to pass (a stand-in for another program taking the inodes between the check and
    the move): the move fails part-way through the folders and every step is taken back, ``keep.txt`` as the
    user had it. Before 101c273 ``keep.txt`` was overwritten and the folders made so far left (a bare
    ``OSError``); on 101c273 the same, in one line saying how many entries were moved."""
    monkeypatch.setattr(staging, "room", lambda *a, **k: None)
    folder = small_fs / "ws"
    folder.mkdir()
    (folder / "keep.txt").write_text("the user's\n")
    deep = "/".join(f"d{i:02}" for i in range(30)) + "/f"
    made = archive(tmp_path / "s1.tar", [("keep.txt", "f", b"the session's\n"), (deep, "f", b"x")])
    before = tree(folder)
    with pytest.raises(result.ResultError) as refused:
        result.unpack(made, folder)
    assert "undone, nothing changed" in str(refused.value) and "\n" not in str(refused.value)
    assert tree(folder) == before
    assert not list((folder / ".agent").glob("staging*"))
