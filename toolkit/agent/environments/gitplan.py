"""A git workspace's result (``refs/agent/<session>/start`` → ``result`` in the user's repository) read as
data into a ``staging.Plan``: the changed paths from ``git diff --raw`` (no filter, no rename detection, no
content read), each new blob's size from ``cat-file --batch-check`` and its bytes from ``cat-file blob`` when
staged, every git bounded (``hostgit``). A file the session changes or deletes must still be, in the user's
folder, what it was at the start (its blob id, computed here from its bytes), and a file it adds must not be
there yet: otherwise the whole result is refused (the user's later edit is never overwritten). A submodule
refuses the whole.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from toolkit.agent.environments import staging
from toolkit.agent.environments.hostgit import Bounds, git
from toolkit.agent.environments.manifest import refuse_repositories

FILES = {"100644": 0o644, "100755": 0o755, "120000": None}


def blob_id(folder: Path, path: str) -> str | None:
    """The git blob id of the user's ``path`` as it is (a link: its target), reached without following links;
    None when it is not there (or not a file or link)."""
    parts = path.split("/")
    try:
        fd = staging.walk(folder, parts[:-1])
    except OSError:
        return None
    try:
        try:
            data = os.readlink(parts[-1], dir_fd=fd).encode("utf-8", "surrogateescape")
        except OSError:
            data = None
        h = hashlib.sha1()
        if data is not None:
            h.update(b"blob %d\0" % len(data) + data)
            return h.hexdigest()
        try:
            f = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW, dir_fd=fd)
        except OSError:
            return None
        with os.fdopen(f, "rb") as file:
            h.update(b"blob %d\0" % os.fstat(file.fileno()).st_size)
            for piece in iter(lambda: file.read(2**20), b""):
                h.update(piece)
        return h.hexdigest()
    finally:
        os.close(fd)


def writer(folder: Path, sha: str, bounds: Bounds):
    def write(path: Path) -> None:
        with open(path, "xb") as f:
            git(folder, "cat-file", "blob", sha, stdout=f, bounds=bounds)
    return write


def git_plan(folder: Path, prefix: str, limits) -> staging.Plan:
    """The changes from ``prefix/start`` to ``prefix/result`` as a plan (the user's folder checked as it is)."""
    what, bounds, plan = f"{prefix}/result", Bounds.of(limits), staging.Plan()
    raw = git(folder, "diff", "--raw", "-z", "-r", "--no-renames", "--no-abbrev", f"{prefix}/start",
              f"{prefix}/result", bounds=bounds).stdout.split(b"\0")
    changes, gone = [], []
    for meta, name in zip(raw[0::2], raw[1::2]):
        old_mode, new_mode, old, new, status = meta.decode().lstrip(":").split()
        path = os.fsdecode(name)
        staging.check_name(what, path)
        if "160000" in (old_mode, new_mode) or new_mode not in (*FILES, "000000"):
            raise staging.refuse(what, path, "is a submodule")
        if blob_id(folder, path) != (None if status == "A" else old):
            raise staging.refuse(what, path, "changed in your folder since the session began (or is not a file "
                                 "there)" if status != "A" else "is in your folder and was not at the session's start")
        (gone if status == "D" else changes).append((path, new_mode, new))
    with tempfile.TemporaryFile() as shas:
        shas.write("".join(f"{sha}\n" for _, _, sha in changes).encode())
        shas.seek(0)
        sizes = git(folder, "cat-file", "--batch-check=%(objectsize)", stdin=shas, bounds=bounds).stdout.split()
    for (path, mode, sha), size in zip(changes, sizes):
        if mode == "120000":
            if int(size) > 4096:
                raise staging.refuse(what, path, "is a link with a target longer than 4096 bytes")
            target = git(folder, "cat-file", "blob", sha, bounds=bounds).stdout.decode("utf-8", "surrogateescape")
            plan.entries.append(staging.Entry(path, "l", target=target))
        else:
            plan.entries.append(staging.Entry(path, "f", int(size), FILES[mode], write=writer(folder, sha, bounds)))
    tree = git(folder, "ls-tree", "-r", "-z", "--name-only", what, bounds=bounds).stdout  # at most bounds.output
    refuse_repositories(folder, [p for p, _, _ in changes], os.fsdecode(tree).split("\0"), top=False, what=what)
    plan.changed, plan.gone = len(changes) + len(gone), [p for p, _, _ in gone]
    if gone:
        plan.delete = lambda at: delete(at, [p for p, _, _ in gone])
    return plan


def delete(folder: Path, paths: list[str]) -> str:
    """Remove what the session deleted (checked unchanged when planned), then folders it emptied."""
    for path in paths:
        parts = path.split("/")
        fd = staging.walk(folder, parts[:-1])
        try:
            os.unlink(parts[-1], dir_fd=fd)
        finally:
            os.close(fd)
        for i in range(len(parts) - 1, 0, -1):  # git's own: a folder left empty goes
            try:
                os.rmdir(folder / "/".join(parts[:i]))
            except OSError:
                break
    return ""
