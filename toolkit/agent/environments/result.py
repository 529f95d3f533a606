"""What comes back from a session, taken in on the host as bounded, hostile data (docs/environments.md, "The
design"): one path for every workspace, never a folder the sandbox wrote and never git's objects.

``take`` (every session's end, one deadline): the **tar archive** of the workspace's files (``.git`` left out)
is checked as ``apply`` would and kept as ``.agent/results/<session>.tar`` with the host's listing of the folder
at the start; a git workspace's commits come back as text (``<session>.patch``, for the user to read). A refused
result leaves nothing. ``apply`` (``engineer --apply``) writes the changes all or nothing through ``staging``
(``archive`` makes the plan). ``push`` commits the archive's files on the user's ``HEAD`` in a scratch
repository of the host's and sends that commit to an allowed remote.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from toolkit.agent.environments import staging
from toolkit.agent.environments.archive import archive_plan
from toolkit.agent.environments.hostgit import Bounds, ResultError, git
from toolkit.agent.environments.limits import Limits

__all__ = ["ResultError", "apply", "git", "push", "take"]


def take(folder: Path, session: str, made: Path, files: dict | None = None, limits: Limits | None = None) -> str:
    """Take a result in (``made``: the archive, ``result.patch`` beside it); returns one line saying where it
    is, or raises ``ResultError`` (one line) with nothing of it kept. ``files``: the folder's ``manifest`` at
    the session's start."""
    folder, made, limits = Path(folder), Path(made).resolve(), limits or Limits()
    results = folder / ".agent" / "results"
    patch = made.with_name("result.patch")
    archive_plan(made, folder, limits, None, dry=True)  # the same checks as apply's, nothing written
    written = []
    try:
        results.mkdir(parents=True, exist_ok=True)
        need = made.stat().st_size + (patch.stat().st_size if patch.is_file() else 0)
        staging.room("the session's result", need, results, "nothing of it was kept")
        for name, data in ((".tar", made), (".patch", patch if patch.is_file() else None),
                           (".start.json", None if files is None else json.dumps(files).encode()),
                           (".limits.json", json.dumps(limits.model_dump()).encode())):
            if data is not None:
                keep(results / f"{session}{name}", data)
                written.append(results / f"{session}{name}")
    except OSError as exc:
        for path in written:
            path.unlink()
        raise ResultError(f"the session's result could not be kept: {exc.strerror or exc}; nothing of it was "
                          "kept") from None
    commits = f"; its commits as text in {results / f'{session}.patch'}" if patch.is_file() else ""
    return f"{results / f'{session}.tar'} (apply with engineer --apply {session}){commits}"


def keep(target: Path, data: bytes | Path) -> None:
    """``data`` (bytes, or a file's) at ``target``: written under another name, then renamed; on a full disk
    nothing is left under either name."""
    part = target.with_name(f".{target.name}.part")
    try:
        if isinstance(data, Path):
            shutil.copyfile(data, part)
        else:
            part.write_bytes(data)
        os.replace(part, target)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


def kept(folder: Path, session: str) -> tuple[Path, Limits]:
    """A session's kept archive and the limits it ran under (the defaults when they were not kept)."""
    if not re.fullmatch(r"[A-Za-z0-9._-]+", session):
        raise ResultError(f"--apply {session}: not a session id")
    archive = Path(folder) / ".agent" / "results" / f"{session}.tar"
    if not archive.is_file():
        raise ResultError(f"--apply {session}: no result of that session in {folder}")
    try:
        return archive, Limits(**(listing(archive.with_suffix(".limits.json")) or {}))
    except (TypeError, ValueError):
        return archive, Limits()


def listing(path: Path) -> dict | None:
    """A JSON object the host kept beside a result (the limits, the start listing), or None."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def apply(folder: Path, session: str) -> str:
    """Merge a session's result into the user's folder, all or nothing; returns one line saying what changed."""
    archive, limits = kept(folder, session)
    return unpack(archive, Path(folder), limits)


def unpack(archive: Path, folder: Path, limits: Limits | None = None, start: bool = True) -> str:
    """An archive written into ``folder``, all or nothing, then what the session deleted deleted (with
    ``start``: by the folder's listing at the session's start, ``<session>.start.json``, the host's own)."""
    limits = limits or Limits()
    plan = archive_plan(archive, folder, limits, listing(archive.with_suffix(".start.json")) if start else None)
    end = staging.write(archive.name, plan, folder, limits)
    return f"unpacked {len(plan.entries)} new or changed entries from {archive.name} into {folder}{end}"


def push(folder: Path, session: str, branch: str, remote: str, message: str) -> str:
    """The session's files (its kept archive) committed on the user's ``HEAD`` by the host, in a scratch
    repository that only reads the user's objects, and pushed to ``remote`` as ``branch``."""
    archive, limits = kept(folder, session)
    bounds = Bounds.of(limits)
    base = git(folder, "rev-parse", "--verify", "HEAD^{commit}", bounds=bounds).stdout.decode().strip()
    objects = Path(folder, git(folder, "rev-parse", "--git-common-dir").stdout.decode().strip()).resolve() / "objects"
    with tempfile.TemporaryDirectory(prefix="toolkit-push-") as scratch:
        files = Path(scratch)
        git(files, "init", "--quiet", bounds=bounds)
        (files / ".git" / "objects" / "info" / "alternates").write_text(f"{objects}\n")
        unpack(archive, files, limits, start=False)
        shutil.rmtree(files / ".agent")
        git(files, "add", "--all", bounds=bounds)
        tree = git(files, "write-tree", bounds=bounds).stdout.decode().strip()
        commit = git(files, "commit-tree", tree, "-p", base, "-m", message, bounds=bounds).stdout.decode().strip()
        git(files, "push", "--quiet", "--no-verify", remote, f"{commit}:refs/heads/{branch}", bounds=bounds)
    return f"pushed {branch} to {remote}"
