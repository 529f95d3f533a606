"""What comes back from a session, taken in on the host as bounded, hostile data (docs/environments.md, "The
design"): never a folder the sandbox wrote, never more than the session could have made.

``take`` (every session's end, one deadline, ``hostgit.Bounds``): a git workspace's **bundle** is measured from
its pack headers (``packcheck``), fetched by a bounded git into a scratch repository, measured there (new
objects against ``disk_mb``, trees against ``inodes``), and only then fetched into the user's repository as
``refs/agent/<session>/{result,start,heads/…}``; a plain folder's **tar archive** is checked as ``apply`` would
and kept as ``.agent/results/<session>.tar`` with the host's listing of the folder at the start. A refused
result leaves nothing. ``apply`` (``engineer --apply``) writes the changes all or nothing through ``staging``
(``gitplan`` or ``archive`` make the plan); ``push`` sends a fetched branch to an allowed remote.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from toolkit.agent.environments import packcheck, staging
from toolkit.agent.environments.archive import archive_plan
from toolkit.agent.environments.hostgit import Bounds, ResultError, git
from toolkit.agent.environments.limits import Limits
from toolkit.agent.environments.manifest import manifest  # noqa: F401  (environment.py takes it from here)

__all__ = ["ResultError", "apply", "git", "is_git", "manifest", "push", "take"]
MAX_OBJECTS = 5_000_000
MAX_REFS, MAX_BRANCHES = 10_000, 100  # refs a bundle may name; branches a session may make or move
MiB = 2**20
FETCH = ("fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head", "--force")


def is_git(folder: Path) -> bool:
    return (Path(folder) / ".git").exists()


def take(folder: Path, session: str, made: Path, start: str = "", files: dict | None = None,
         limits: Limits | None = None) -> str:
    """Take a result file in; returns one line saying where it is, or raises ``ResultError`` (one line) with
    nothing of it kept. ``files``: a plain folder's ``manifest`` at the session's start."""
    folder, made, limits = Path(folder), Path(made).resolve(), limits or Limits()
    bounds = Bounds.of(limits, made.stat().st_size)  # one deadline for the whole intake
    try:
        if made.suffix == ".bundle":
            line = take_bundle(folder, session, made, start, limits, bounds)
        else:
            line = take_archive(folder, session, made, files, limits, bounds)
        keep(folder / ".agent" / "results" / f"{session}.limits.json", json.dumps(limits.model_dump()).encode())
        return line
    except ResultError as exc:  # a git of the intake failed, e.g. past its bounds
        if made.suffix != ".bundle" or str(exc).endswith("nothing of it was kept"):
            raise
        raise ResultError(f"the session's result is refused: {exc}; nothing of it was kept") from None
    except OSError as exc:
        raise ResultError(f"the session's result could not be kept: {exc.strerror or exc}; nothing of it was "
                          "kept") from None


def take_bundle(folder: Path, session: str, made: Path, start: str, limits: Limits, bounds: Bounds) -> str:
    try:
        packcheck.check(str(made), bounds.objects, MAX_OBJECTS, bounds.left(), MAX_REFS, bounds.delta,
                        limits.disk_mb * MiB)
    except packcheck.PackRefused as exc:
        raise ResultError(f"the session's result is refused: {exc}; nothing of it was kept") from None
    common = git(folder, "rev-parse", "--git-common-dir").stdout.decode().strip()
    objects = (folder / common).resolve() / "objects"
    prefix = f"refs/agent/{session}"
    with tempfile.TemporaryDirectory(prefix="intake-", dir=made.parent) as scratch:
        git(Path(scratch), "init", "--quiet", "--bare")
        Path(scratch, "objects", "info", "alternates").write_text(f"{objects}\n")
        git(Path(scratch), *FETCH, str(made), "refs/toolkit/*:refs/toolkit/*", "refs/heads/*:refs/heads/*",
            bounds=bounds)
        if start and git(Path(scratch), "rev-parse", "refs/toolkit/start").stdout.decode().strip() != start:
            raise ResultError("the result's start is not the working tree the session began with; not taken")
        branches = new_branches(folder, Path(scratch), bounds)
        measure(Path(scratch), ["refs/toolkit/result", "refs/toolkit/start", *branches], limits, bounds)
        staging.room("the session's result", made.stat().st_size, objects, "nothing of it was kept")
        git(folder, *FETCH, scratch, f"refs/toolkit/result:{prefix}/result", f"refs/toolkit/start:{prefix}/start",
            *(f"{b}:{prefix}/heads/{b.removeprefix('refs/heads/')}" for b in branches), bounds=bounds)
    n = git(folder, "diff", "--name-only", "-z", "--no-renames", f"{prefix}/start", f"{prefix}/result",
            bounds=bounds).stdout.count(b"\0")
    return f"{prefix}/result ({n} file{'s' if n != 1 else ''} changed; apply with engineer --apply {session})"


def new_branches(folder: Path, scratch: Path, bounds: Bounds) -> list[str]:
    """The copy's branches that are new or moved (the user's own, as they are, are not taken again); refused
    when more than ``MAX_BRANCHES``."""
    def listed(repo: Path) -> set[bytes]:
        return set(git(repo, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/",
                       bounds=bounds).stdout.splitlines())
    moved = sorted(listed(scratch) - listed(folder))
    if len(moved) > MAX_BRANCHES:
        raise ResultError(f"the session's result is refused: {len(moved)} new or moved branches, more than "
                          f"{MAX_BRANCHES}; nothing of it was kept")
    return [os.fsdecode(line.split(b" ", 1)[1]) for line in moved]


def measure(scratch: Path, tips: list[str], limits: Limits, bounds: Bounds) -> None:
    """Refuse (one line) when the objects ``tips`` would add to the user's repository (those it does not hold
    yet) are together larger than ``disk_mb``, or a tip's tree lists more files than ``inodes``: the session
    could not have made them (a pack of deltas claims any size; a tree listing one subtree many times, any
    number of files). Listings go to files of ``scratch`` under ``RLIMIT_FSIZE``, never whole into memory."""
    listing, sizes = scratch / "new-objects", scratch / "sizes"
    with open(listing, "wb") as out:
        git(scratch, "rev-list", "--objects", "--no-object-names", *tips, "--not", "--alternate-refs",
            stdout=out, bounds=bounds)
    with open(listing, "rb") as inp, open(sizes, "wb") as out:
        git(scratch, "cat-file", "--batch-check=%(objectsize)", stdin=inp, stdout=out, bounds=bounds)
    with open(sizes, "rb") as f:
        total = sum(int(line) for line in f)
    if total > limits.disk_mb * MiB:
        raise ResultError(f"the session's result is refused: its new objects hold {total} bytes, more than the "
                          f"session could make (disk_mb: {limits.disk_mb * MiB} bytes); nothing of it was kept")
    capped = replace(bounds, file_bytes=limits.inodes * 1024)
    for tip in dict.fromkeys(tips):
        with open(listing, "wb") as out:
            done = git(scratch, "ls-tree", "-r", "-z", "--name-only", tip, stdout=out, bounds=capped, check=False)
        with open(listing, "rb") as f:
            files = sum(piece.count(b"\0") for piece in iter(lambda: f.read(MiB), b""))
        if done.returncode or files > limits.inodes:  # failed: past the cap
            raise ResultError(f"the session's result is refused: {tip.removeprefix('refs/')} lists more files "
                              f"than the session could make (inodes: {limits.inodes}); nothing of it was kept")


def take_archive(folder: Path, session: str, made: Path, files: dict | None, limits: Limits, bounds: Bounds) -> str:
    target = folder / ".agent" / "results" / f"{session}.tar"
    archive_plan(made, folder, limits, None, dry=True, bounds=bounds)  # the same checks as apply's, nothing written
    target.parent.mkdir(parents=True, exist_ok=True)
    staging.room("the session's result", made.stat().st_size, target.parent, "nothing of it was kept")
    keep(target, made)
    if files is not None:
        keep(target.with_suffix(".start.json"), json.dumps(files).encode())
    return f"{target} (apply with engineer --apply {session})"


def keep(target: Path, data: bytes | Path) -> None:
    """``data`` (bytes, or a file's) at ``target``: written under another name, then renamed; on a full disk
    nothing is left under either name."""
    target.parent.mkdir(parents=True, exist_ok=True)
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


def session_limits(folder: Path, session: str) -> Limits:
    """The limits ``take`` kept for a session (the defaults for one taken before they were kept)."""
    try:
        return Limits(**json.loads((folder / ".agent" / "results" / f"{session}.limits.json").read_text()))
    except (OSError, ValueError, TypeError):
        return Limits()


def apply(folder: Path, session: str) -> str:
    """Merge a session's result into the user's folder, all or nothing; returns one line saying what changed."""
    folder = Path(folder)
    if not re.fullmatch(r"[A-Za-z0-9._-]+", session):
        raise ResultError(f"--apply {session}: not a session id")
    limits = session_limits(folder, session)
    archive = folder / ".agent" / "results" / f"{session}.tar"
    if is_git(folder) and git(folder, "rev-parse", "--verify", "-q", f"refs/agent/{session}/result",
                              check=False).returncode == 0:
        from toolkit.agent.environments.gitplan import git_plan

        plan = git_plan(folder, f"refs/agent/{session}", limits)
        if not plan.entries and plan.delete is None:
            return "nothing to apply: the session changed no file"
        end = staging.write(f"refs/agent/{session}/result", plan, folder, limits)
        return f"applied {plan.changed} changed file{'s' if plan.changed != 1 else ''} from refs/agent/{session}/" \
               f"result to the working tree{end}"
    if archive.is_file():
        return unpack(archive, folder, limits)
    raise ResultError(f"--apply {session}: no result of that session in {folder}")


def unpack(archive: Path, folder: Path, limits: Limits | None = None) -> str:
    """A plain folder's result written into ``folder``, all or nothing, then what the session deleted deleted."""
    limits = limits or Limits()
    plan = archive_plan(archive, folder, limits, start_listing(archive))
    end = staging.write(archive.name, plan, folder, limits)
    return f"unpacked {len(plan.entries)} new or changed entries from {archive.name} into {folder}{end}"


def start_listing(archive: Path) -> dict | None:
    """The folder's listing at the session's start (``<session>.start.json``, the host's own), or None."""
    listing = archive.with_suffix(".start.json")
    try:
        start = json.loads(listing.read_text()) if listing.is_file() else None
    except (OSError, ValueError):
        start = None
    return start if isinstance(start, dict) else None


def push(folder: Path, session: str, branch: str, remote: str) -> str:
    """Push the fetched ``heads/<branch>`` of a session to ``remote`` (an allowed URL or path)."""
    git(folder, "push", "--quiet", "--no-verify", remote, f"refs/agent/{session}/heads/{branch}:refs/heads/{branch}")
    return f"pushed {branch} to {remote}"
