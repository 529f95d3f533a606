"""``engineer --apply``: all or nothing, bounded, one rule for links and hard links, one path for every
workspace (the archive of its files). Real archives, real git, and, as root, a real small file system (a tmpfs
of a few MiB mounted in the test)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.agent.test_boundary import AS, Host
from toolkit.agent.environments import result
from toolkit.agent.environments.environment import bwrap_problem
from toolkit.agent.environments.limits import Limits

MiB = 2**20


def tree(folder: Path) -> dict:
    """The folder's entries (``.agent`` left out): bytes, link targets, link counts."""
    out = {}
    for top, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != ".agent"]
        for name in dirs + files:
            p = Path(top) / name
            out[str(p.relative_to(folder))] = os.readlink(p) if p.is_symlink() else \
                (p.read_bytes(), p.stat().st_nlink) if p.is_file() else "dir"
    return out


def listed(made: Path, folder: Path) -> Path:
    """``made`` with the host's listing of ``folder`` beside it, as ``result.take`` keeps it."""
    from toolkit.agent.environments.manifest import manifest

    made.with_suffix(".start.json").write_text(json.dumps(manifest(folder)))
    return made


def archive(path: Path, members: list[tuple]) -> Path:
    """A tar of ``(name, kind, data)``: kind ``f`` (bytes), ``l`` (a link's target), ``h`` (a hard link to a
    member), ``d``."""
    with tarfile.open(path, "w") as tar:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            info.mtime = 1
            if kind == "f":
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                continue
            info.type = {"l": tarfile.SYMTYPE, "h": tarfile.LNKTYPE, "d": tarfile.DIRTYPE}[kind]
            info.linkname = data or ""
            tar.addfile(info)
    return path


@pytest.fixture(params=AS)
def host(request, tmp_path):
    """The host side as root and as a normal user (``test_boundary.Host``)."""
    h = Host(request.param, tmp_path)
    yield h
    h.close()


@pytest.fixture
def small_fs(tmp_path):
    """A tmpfs of 4 MiB and 24 inodes, mounted in the test (root only)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    where = tmp_path / "fs"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,nr_inodes=24", "tmpfs", str(where)], check=True)
    yield where
    subprocess.run(["umount", "-l", str(where)], check=True)


def test_a_refused_archive_writes_nothing(tmp_path):
    """Files before a refused member (a link out) are not written: on 51c499d ``0_first.txt``, ``a.txt``
    and ``d/`` were, before ``tarfile``'s filter refused the link."""
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("the user's\n")
    made = archive(tmp_path / "s1.tar", [("0_first.txt", "f", b"new\n"), ("a.txt", "f", b"overwritten\n"),
                                         ("d", "d", None), ("d/x", "f", b"x"), ("evil", "l", "/etc")])
    before = tree(folder)
    with pytest.raises(result.ResultError) as refused:
        result.unpack(listed(made, folder), folder)
    assert "a link out of the folder" in str(refused.value) and "nothing changed" in str(refused.value)
    assert tree(folder) == before


@pytest.mark.parametrize("target", ["/elsewhere", "../../../..", "sub/../../x", "../up"])
def test_links_out_of_the_folder_are_refused_on_the_archive_path(tmp_path, target):
    folder = tmp_path / "ws"
    folder.mkdir()
    made = archive(tmp_path / "s1.tar", [("ok.txt", "f", b"ok"), ("link", "l", target)])
    with pytest.raises(result.ResultError, match="a link out of the folder"):
        result.unpack(made, folder)
    assert tree(folder) == {}


def test_a_hard_link_arrives_as_a_file_of_its_own(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    made = archive(tmp_path / "s1.tar", [("a", "f", b"shared"), ("b", "h", "a"), ("in", "l", "a")])
    result.unpack(made, folder)
    assert tree(folder) == {"a": (b"shared", 1), "b": (b"shared", 1), "in": "a"}


def test_sizes_count_bytes_against_disk_mb(tmp_path):
    """Three files of 3 MiB (a sparse file's length, not its blocks) against ``disk_mb: 8``: refused whole."""
    folder = tmp_path / "ws"
    folder.mkdir()
    made = archive(tmp_path / "s1.tar", [(f"f{i}", "f", b"\0" * (3 * MiB)) for i in range(3)])
    with pytest.raises(result.ResultError, match="more than the session's disk_mb"):
        result.unpack(made, folder, Limits(disk_mb=8))
    assert tree(folder) == {}


def test_a_result_larger_than_the_file_system_writes_nothing(tmp_path, small_fs):
    """6 MiB of files onto a 4 MiB file system (``disk_mb`` 50 allows them): refused before a byte is written;
    on 51c499d the files were written until the disk was full, a half-written one left."""
    folder = small_fs / "ws"
    folder.mkdir()
    (folder / "keep.txt").write_text("the user's\n")
    made = archive(tmp_path / "s1.tar", [(f"big{i}", "f", b"\0" * (2 * MiB)) for i in range(3)])
    before = tree(folder)
    with pytest.raises(result.ResultError, match="free on"):
        result.unpack(made, folder, Limits(disk_mb=50))
    assert tree(folder) == before


def test_a_full_disk_while_staging_writes_nothing(tmp_path, small_fs):
    """Bytes fit, inodes do not (24 on the file system): nothing of the result in the folder, no staging folder
    left; on 51c499d the first members were written. (Since the check counts free inodes, it refuses before
    staging; before that the staging ran out, and was removed.)"""
    folder = small_fs / "ws"
    folder.mkdir()
    (folder / "keep.txt").write_text("the user's\n")
    made = archive(tmp_path / "s1.tar", [(f"f{i:02}", "f", b"x") for i in range(40)])
    before = tree(folder)
    with pytest.raises(result.ResultError, match="nothing changed"):
        result.unpack(made, folder)
    assert tree(folder) == before
    assert not [p for p in (folder / ".agent").glob("staging*")]


def test_a_staging_folder_on_another_file_system_writes_nothing(tmp_path, small_fs):
    """The user's ``.agent`` is a link to another file system: the renames would fail half-way, so nothing is
    moved (refused before the first)."""
    folder = tmp_path / "ws"
    folder.mkdir()
    (small_fs / "agent").mkdir()
    (folder / ".agent").symlink_to(small_fs / "agent")
    made = archive(tmp_path / "s1.tar", [("a", "f", b"a"), ("b", "f", b"b")])
    with pytest.raises(result.ResultError, match="not on the folder's file system"):
        result.unpack(made, folder)
    assert tree(folder) == {}


def git(*args, cwd):
    env = {**os.environ, "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@u", "GIT_COMMITTER_NAME": "u",
           "GIT_COMMITTER_EMAIL": "u@u", "GIT_CONFIG_GLOBAL": "/dev/null"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout.strip()


def kept_session(folder: Path, change) -> str:
    """A session's result as the host keeps it: the start listing, ``change`` run in a copy, the copy's archive
    made by ``collect.py tar`` and taken in (``result.take``) as session ``s1``; returns take's line."""
    from toolkit.agent.environments import collect
    from toolkit.agent.environments.manifest import manifest

    listing = manifest(folder)
    copy = folder.parent / "copy"
    shutil.copytree(folder, copy, symlinks=True, ignore=shutil.ignore_patterns(".agent"))  # mtimes kept
    change(copy)
    made = folder.parent / "made" / "result.tar"
    made.parent.mkdir()
    (made.parent / "start.json").write_text(json.dumps(listing))
    with open(made, "wb") as out:
        subprocess.run([sys.executable, "-I", "-S", collect.__file__, "tar", str(copy),
                        str(made.parent / "start.json")], stdout=out, check=True)
    shutil.rmtree(copy)
    line = result.take(folder, "s1", made, files=listing)
    shutil.rmtree(made.parent)
    return line


def test_the_archive_applies_changes_and_deletions_and_refuses_over_a_users_edit(tmp_path):
    """Changes, a deletion, a new script and link applied; a file the session left alone keeps the user's edit;
    a second session that changes a file the user edited after it began is refused whole (on 743c66f the
    archive path wrote over the user's edit; only the git path refused)."""
    folder = tmp_path / "ws"
    folder.mkdir()
    for name in ("a.txt", "gone/x.txt", "keep.txt"):
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(name)

    def change(copy):
        (copy / "a.txt").write_text("changed\n")
        (copy / "gone" / "x.txt").unlink()
        (copy / "gone").rmdir()
        (copy / "new").mkdir()
        (copy / "new" / "run.sh").write_text("#!/bin/sh\n")
        (copy / "new" / "run.sh").chmod(0o755)
        (copy / "new" / "in").symlink_to("../keep.txt")
    kept_session(folder, change)
    (folder / "keep.txt").write_text("the user's edit\n")  # not changed by the session: kept
    result.apply(folder, "s1")
    assert (folder / "a.txt").read_text() == "changed\n" and not (folder / "gone").exists()
    assert os.access(folder / "new" / "run.sh", os.X_OK) and os.readlink(folder / "new" / "in") == "../keep.txt"
    assert (folder / "keep.txt").read_text() == "the user's edit\n"
    shutil.rmtree(folder / ".agent")
    kept_session(folder, lambda copy: (copy / "a.txt").write_text("the session's\n"))
    (folder / "a.txt").write_text("the user's later edit\n")
    before = tree(folder)
    with pytest.raises(result.ResultError, match="'a.txt' changed in your folder since the session began"):
        result.apply(folder, "s1")
    assert tree(folder) == before


def test_a_git_workspaces_result_brings_files_and_its_commits_only_as_text(tmp_path):
    """The copy's ``.git`` (a commit of the agent's, a planted hook and config) is left out of the archive: the
    files apply, the user's ``.git`` is byte for byte as it was, and nothing of the agent's git is read."""
    from tests.agent.test_intake import repository_state

    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("a\n")
    git("init", "-q", cwd=folder)
    git("add", "-A", cwd=folder)
    git("commit", "-q", "-m", "start", cwd=folder)
    before = repository_state(folder)

    def change(copy):
        (copy / "a.txt").write_text("changed\n")
        git("commit", "-q", "-am", "agent", cwd=copy)
        (copy / ".git" / "hooks" / "post-checkout").write_text("#!/bin/sh\ntouch PWNED\n")
        (copy / ".git" / "config").write_text("[core]\n\tfsmonitor = touch PWNED\n")
    kept_session(folder, change)
    with tarfile.open(folder / ".agent" / "results" / "s1.tar") as tar:
        assert sorted(tar.getnames()) == [".agent/deleted", "a.txt"]  # the change, and what it deleted
    result.apply(folder, "s1")
    assert (folder / "a.txt").read_text() == "changed\n" and repository_state(folder) == before


def test_a_pull_request_is_a_commit_the_host_makes_of_the_applied_files(tmp_path):
    """``result.push``: the kept archive's files committed on the user's ``HEAD`` in a scratch repository and
    pushed to the remote as the branch, with the given message; the user's own repository gains nothing."""
    from tests.agent.test_intake import repository_state

    remote = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(remote), cwd=tmp_path)
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("a\n")
    (folder / "old.txt").write_text("old\n")
    git("init", "-q", cwd=folder)
    git("add", "-A", cwd=folder)
    git("commit", "-q", "-m", "start", cwd=folder)
    head = git("rev-parse", "HEAD", cwd=folder)

    def change(copy):
        (copy / "a.txt").write_text("changed\n")
        (copy / "old.txt").unlink()
        (copy / "new.txt").write_text("new\n")
    kept_session(folder, change)
    before = repository_state(folder)
    pushed = result.push(folder, "s1", "feature", str(remote), "the title\n\nthe body")
    assert pushed.line == f"pushed feature to {remote}"
    assert git("rev-parse", "feature^", cwd=remote) == head
    assert git("log", "-1", "--format=%B", "feature", cwd=remote) == "the title\n\nthe body"
    assert git("ls-tree", "--name-only", "feature", cwd=remote).split() == ["a.txt", "new.txt"]
    assert git("show", "feature:a.txt", cwd=remote) == "changed"
    assert repository_state(folder) == before and (folder / "a.txt").read_text() == "a\n"


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.skipif(bool(bwrap_problem()) or os.geteuid() != 0, reason="needs bubblewrap and root (both hosts)")
@pytest.mark.parametrize("git_repo", [True, False], ids=["git", "plain"])
def test_a_session_that_links_out_is_refused_whole_at_apply(host, git_repo):
    """The attack end to end, through the CLI under bubblewrap, as root and as a normal user: new and changed
    files beside a link out of the folder: ``--apply`` refuses in one line and writes nothing (the archive is
    kept at the session's end: the user's own links out come back in every archive, unchanged)."""
    from tests.agent.test_boundary import apply_result, observations, session, term, tree_digest, workspace

    ws = workspace(host, git_repo)
    traj = session(host, ws, [term("echo new > 0_first.txt && echo changed > a.txt && mkdir d && echo x > d/x && "
                                   "ln -s ../../../.. link_up && ln -s /elsewhere link_abs && echo planted")])
    assert "planted" in observations(traj)
    before = tree_digest(ws)
    applied = apply_result(host, ws, traj["session_id"], check=False)
    assert applied.returncode == 2 and "a link out of the folder" in applied.stderr, (applied.stderr, traj["result"])
    assert len(applied.stderr.strip().splitlines()) == 1
    assert tree_digest(ws) == before


def test_a_nested_repositorys_git_is_never_in_the_result_nor_deleted_by_it(tmp_path):
    """A workspace holding a repository of its own (``vendor/lib/.git``, a vendored clone) and a submodule's
    gitfile (``sub/.git``): a session's change comes back (on 6294a2d every such session's archive was refused
    whole for its ``vendor/lib/.git`` part), and a session that deletes them leaves the user's git untouched (on
    6294a2d ``--apply`` deleted the nested repository's history: session 19's hostile review, F1 and F2)."""
    from toolkit.agent.environments.manifest import remove

    folder = tmp_path / "ws"
    (folder / "vendor" / "lib").mkdir(parents=True)
    (folder / "a.txt").write_text("a\n")
    (folder / "vendor" / "lib" / "lib.py").write_text("x = 1\n")
    git("init", "-q", cwd=folder / "vendor" / "lib")
    git("add", "-A", cwd=folder / "vendor" / "lib")
    git("commit", "-qm", "the user's own history", cwd=folder / "vendor" / "lib")
    (folder / "sub").mkdir()
    (folder / "sub" / ".git").write_text("gitdir: ../.git/modules/sub\n")
    history = git("log", "--format=%H %s", cwd=folder / "vendor" / "lib")
    kept_session(folder, lambda copy: (copy / "a.txt").write_text("improved\n"))
    result.apply(folder, "s1")
    assert (folder / "a.txt").read_text() == "improved\n"
    shutil.rmtree(folder / ".agent")

    def delete_their_git(copy):
        shutil.rmtree(copy / "vendor" / "lib" / ".git")
        (copy / "sub" / ".git").unlink()
    kept_session(folder, delete_their_git)
    result.apply(folder, "s1")
    assert git("log", "--format=%H %s", cwd=folder / "vendor" / "lib") == history
    assert (folder / "sub" / ".git").read_text() == "gitdir: ../.git/modules/sub\n"
    assert not remove(folder, os.path.join("vendor", "lib", ".git", "HEAD"), ["f", 0, 0])


def test_the_users_own_link_out_of_the_folder_left_unchanged_does_not_refuse_the_apply(tmp_path):
    """A venv's ``bin/python -> /usr/bin/python3`` or a ``data -> /elsewhere`` link of the user's, unchanged by
    the session, comes back in every archive: the apply writes the session's change and leaves the link (on
    fbb90fd every such folder's apply was refused: session 19's diff read, S1); a link out the session makes is
    still refused whole."""
    folder = tmp_path / "ws"
    (folder / ".venv" / "bin").mkdir(parents=True)
    (folder / ".venv" / "bin" / "python").symlink_to("/usr/bin/python3")
    (folder / "a.txt").write_text("a\n")
    kept_session(folder, lambda copy: (copy / "a.txt").write_text("improved\n"))
    result.apply(folder, "s1")
    assert (folder / "a.txt").read_text() == "improved\n"
    assert os.readlink(folder / ".venv" / "bin" / "python") == "/usr/bin/python3"
    shutil.rmtree(folder / ".agent")
    kept_session(folder, lambda copy: (copy / "out").symlink_to("/etc"))
    before = tree(folder)
    with pytest.raises(result.ResultError, match="'out' is a link out of the folder"):
        result.apply(folder, "s1")
    assert tree(folder) == before


def test_the_result_carries_only_what_the_session_changed(tmp_path):
    """A git workspace with an ignored venv of 4 MiB: the kept archive holds the session's change (an edit, a new
    file, a mode change, a link changed) and the names it deleted, not the venv; applied, the folder is as the
    session left it. On 7f68d02 the archive held the whole folder, ignored trees included (4 MiB here; over 2 GiB
    the result was lost, and a full copy was kept per session)."""
    folder = tmp_path / "ws"
    (folder / "venv" / "lib").mkdir(parents=True)
    for i in range(16):
        (folder / "venv" / "lib" / f"m{i}.so").write_bytes(os.urandom(256 * 1024))
    (folder / "venv" / "python").symlink_to("/usr/bin/python3")
    (folder / ".gitignore").write_text("venv/\n")
    (folder / "a.txt").write_text("a\n")
    (folder / "run.sh").write_text("echo\n")
    (folder / "old.txt").write_text("old\n")
    (folder / "link").symlink_to("a.txt")
    git("init", "-q", cwd=folder)
    git("add", "-A", cwd=folder)
    git("commit", "-q", "-m", "start", cwd=folder)

    def change(copy):
        (copy / "a.txt").write_text("changed\n")
        (copy / "new.txt").write_text("new\n")
        (copy / "run.sh").chmod(0o755)
        (copy / "link").unlink()
        (copy / "link").symlink_to("new.txt")
        (copy / "old.txt").unlink()
        (copy / "venv" / "lib" / "m0.so").unlink()
    kept_session(folder, change)
    kept = folder / ".agent" / "results" / "s1.tar"
    with tarfile.open(kept) as tar:
        names = sorted(tar.getnames())
    assert names == [".agent/deleted", "a.txt", "link", "new.txt", "run.sh", "venv/python"], names
    assert kept.stat().st_size < 64 * 1024
    assert "deleted 2 entries" in result.apply(folder, "s1")
    assert (folder / "a.txt").read_text() == "changed\n" and (folder / "new.txt").read_text() == "new\n"
    assert os.stat(folder / "run.sh").st_mode & 0o777 == 0o755 and os.readlink(folder / "link") == "new.txt"
    assert not (folder / "old.txt").exists() and not (folder / "venv" / "lib" / "m0.so").exists()
    assert len(list((folder / "venv" / "lib").iterdir())) == 15


def test_with_no_listing_kept_an_existing_file_is_never_overwritten_silently(tmp_path):
    """A result whose start listing is missing (one past 100,000 entries was never kept before, or it was
    deleted) cannot tell the user's edit from the session's: writing over an existing file that differs is
    refused in one line. On 7f68d02 the edit check was skipped silently and the file overwritten."""
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("the user's edit\n")
    made = archive(tmp_path / "s1.tar", [("a.txt", "f", b"the session's\n"), ("b.txt", "f", b"new\n")])
    with pytest.raises(result.ResultError) as refused:
        result.unpack(made, folder)
    assert "no listing" in str(refused.value) and "nothing changed" in str(refused.value)
    assert (folder / "a.txt").read_text() == "the user's edit\n" and not (folder / "b.txt").exists()


@pytest.mark.slow
def test_a_folder_of_more_than_100000_entries_still_keeps_the_users_edit(tmp_path):
    """100,001 files: the start listing is made and kept at any size, so a file the user edits while the session
    changes it refuses the apply. On 7f68d02 no listing was kept past 100,000 entries and the edit was
    overwritten without a word (diff read s19, M1)."""
    folder = tmp_path / "ws"
    (folder / "many").mkdir(parents=True)
    for i in range(100_001):
        (folder / "many" / str(i)).touch()
    (folder / "a.txt").write_text("a\n")

    def change(copy):
        (copy / "a.txt").write_text("the session's\n")
    kept_session(folder, change)
    assert (folder / ".agent" / "results" / "s1.start.json").is_file()
    (folder / "a.txt").write_text("the user's edit\n")
    with pytest.raises(result.ResultError) as refused:
        result.apply(folder, "s1")
    assert "changed in your folder since the session began" in str(refused.value)
    assert (folder / "a.txt").read_text() == "the user's edit\n"


def test_a_folder_the_copy_cannot_list_fails_the_result_and_reads_as_no_deletion(tmp_path, monkeypatch):
    """``collect.py tar`` over a copy with a listed folder it cannot list (mode 000 for the sandbox's user, or
    one gone mid-walk) fails, as it did before the result carried only the change: on b89d905..e29c86f the walk
    skipped the folder silently, its listed names went into ``.agent/deleted`` and ``--apply`` deleted the user's
    unchanged files there (diff read s20, M1). Root lists a mode-000 folder, so the listing error is made by a
    stand-in for ``os.scandir`` on that one folder (a test double: this suite runs as root)."""
    import types

    from toolkit.agent.environments import collect
    from toolkit.agent.environments.manifest import manifest

    copy = tmp_path / "copy"
    (copy / "sub").mkdir(parents=True)
    (copy / "a.txt").write_text("a\n")
    (copy / "sub" / "b.txt").write_text("b\n")
    listing = manifest(copy)
    assert "sub/b.txt" in listing
    (copy / "a.txt").write_text("changed\n")
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path) == str(copy / "sub"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(collect.os, "scandir", scandir)
    out = types.SimpleNamespace(buffer=io.BytesIO())
    monkeypatch.setattr(sys, "stdout", out)
    with pytest.raises(PermissionError):
        collect.archive(str(copy), listing)
    assert collect.DELETED.encode() not in out.buffer.getvalue()
