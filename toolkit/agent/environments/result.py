"""What comes back from a session, taken in on the host as bounded, hostile data (docs/environments.md, "The
design"): one path for every workspace, never a folder the sandbox wrote and never git's objects.

``take`` (every session's end, one deadline): the **tar archive** of the workspace's files (``.git`` left out)
is checked as ``apply`` would and kept as ``.agent/results/<session>.tar`` with the host's listing of the folder
at the start; a git workspace's commits come back as text (``<session>.patch``, for the user to read). A refused
result leaves nothing. ``apply`` (``engineer --apply``) writes the changes all or nothing through ``staging``
(``archive`` makes the plan). ``push`` commits the archive's files on the session's start commit in a
scratch repository of the host's, as the user's ``git add -A`` would take them, and sends that commit to an
allowed remote.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from toolkit.agent.environments import hostgit, staging
from toolkit.agent.environments.archive import archive_plan, as_listed, same
from toolkit.agent.environments.hostgit import MiB, Bounds, ResultError, git
from toolkit.agent.environments.limits import Limits
from toolkit.core.printable import printable

__all__ = ["Pushed", "ResultError", "apply", "git", "push", "take"]


def take(folder: Path, session: str, made: Path, files: dict | None = None, limits: Limits | None = None) -> str:
    """Take a result in (``made``: the archive, ``result.patch`` beside it); returns one line saying where it
    is, or raises ``ResultError`` (one line) with nothing of it kept. ``files``: the folder's ``manifest`` at
    the session's start."""
    folder, made, limits = Path(folder), Path(made).resolve(), limits or Limits()
    results = folder / ".agent" / "results"
    patch = made.with_name("result.patch")
    archive_plan(made, folder, limits, None, dry=True)  # the same checks as apply's, nothing written
    written, (text, escaped) = [], shown(patch.read_bytes()) if patch.is_file() else (None, 0)
    try:
        results.mkdir(parents=True, exist_ok=True)
        need = made.stat().st_size + len(text or b"")
        staging.room("the session's result", need, results, "nothing of it was kept")
        for name, data in ((".tar", made), (".patch", text),
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
    commits = f"; its commits as text in {results / f'{session}.patch'}" if text is not None else ""
    commits += f" ({escaped} control characters escaped)" if escaped else ""
    return f"{results / f'{session}.tar'} (apply with engineer --apply {session}){commits}"


# a terminal's control characters (tab and newline aside), C1 controls and the bidirectional overrides, in UTF-8
CONTROLS = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]")


def shown(text: bytes) -> tuple[bytes, int]:
    """The agent's text (its commits) fit to read in a terminal: each control character escaped (``\\x1b``,
    ``\\u202e``: a hidden line or a rewritten one shows as what it is); and how many there were."""
    return CONTROLS.subn(lambda m: b"\\x%02x" % m[0][0] if len(m[0]) == 1 else b"\\u%04x" % ord(m[0].decode()), text)


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
    ``start``: by the folder's listing at the session's start, ``<session>.start.json``, the host's own;
    without: ``folder`` is a scratch folder of the host's, holding the files at the start)."""
    limits = limits or Limits()
    plan = archive_plan(archive, folder, limits, listing(archive.with_suffix(".start.json")) if start else None,
                        own=not start)
    end = staging.write(archive.name, plan, folder, limits)
    return f"unpacked {len(plan.entries)} new or changed entries from {archive.name} into {folder}{end}"


@dataclass(frozen=True)
class Pushed:
    """A pull request's commit, as pushed: the line to say, the commit, its parent (``""``: a root commit) and
    its diff against it (what the pull request shows; cut at ``DIFF_BYTES``)."""

    line: str
    commit: str
    base: str
    diff: str


DIFF_BYTES = 2 * MiB  # the most of a pull request's diff its record keeps


def push(folder: Path, session: str, branch: str, remote: str, message: str, start: str | None = None,
         mine: str = "") -> Pushed:
    """The session's files (its kept archive) committed by the host on ``start`` (the user's ``HEAD`` when the
    session began, so the pull request shows only the session's change however the user's branch moved since;
    ``""``: the repository had no commit, so a root commit; None: the user's ``HEAD`` now) as the user's own
    ``git add -A`` would take them (the tree's ignore files, the repository's ``info/exclude``, the user's
    excludes file), in a scratch repository that only reads the user's objects; pushed to ``remote`` as
    ``branch``, a new branch or the one this session pushed there (``mine``: the commit it pushed), never the
    remote's default branch nor anyone else's."""
    archive, limits = kept(folder, session)
    bounds = Bounds.of(limits)
    if git(folder, "rev-parse", "--show-prefix", bounds=bounds).stdout.strip():
        raise ResultError(f"{folder} is a folder inside a repository, not its top: its files would replace the "
                          "whole repository's; nothing pushed (pull requests are made from a repository's top)")
    base = hostgit.head(folder, bounds) if start is None else start
    if base is None:
        raise ResultError(f"{folder}: git cannot read its HEAD; nothing pushed")
    if base:
        git(folder, "rev-parse", "--verify", "-q", f"{base}^{{commit}}", bounds=bounds)
    common = Path(folder, git(folder, "rev-parse", "--git-common-dir", bounds=bounds).stdout.decode().strip())
    with tempfile.TemporaryDirectory(prefix="toolkit-push-") as scratch:
        files = Path(scratch, "files")
        expect = claim(folder, remote, branch, mine, bounds)
        git(Path(scratch), "init", "--quiet", str(files), bounds=bounds)
        (files / ".git" / "objects" / "info" / "alternates").write_text(f"{common.resolve() / 'objects'}\n")
        ignore_as_the_user(folder, files, bounds)
        if base:
            git(files, "read-tree", base, bounds=bounds)  # tracked files stay tracked, ignored or not
            git(files, "checkout-index", "--all", bounds=bounds)  # the archive holds only the session's change
        unpack_to_commit(archive, folder, files, limits)
        gitlinks = [line.split(b"\t", 1)[1].decode() for line in
                    git(files, "ls-files", "-s", "-z", bounds=bounds).stdout.split(b"\0") if line.startswith(b"160000")]
        git(files, "add", "--all", "--", ".", *(f":(exclude,literal){p}" for p in gitlinks), bounds=bounds)
        tree = git(files, "write-tree", bounds=bounds).stdout.decode().strip()
        commit = git(files, "commit-tree", tree, *(["-p", base] if base else []), "-m", message,
                     bounds=bounds).stdout.decode().strip()
        diff = diff_of(files, commit, Path(scratch, "diff"), bounds)
        git(files, "push", "--quiet", "--no-verify", f"--force-with-lease=refs/heads/{branch}:{expect}", remote,
            f"{commit}:refs/heads/{branch}", bounds=bounds)
    return Pushed(f"pushed {branch} to {remote}", commit, base, diff)


def claim(folder: Path, remote: str, branch: str, mine: str, bounds: Bounds = Bounds()) -> str:
    """What ``remote``'s ``branch`` must be for the push to go (``""``: absent; else ``mine``, the session's
    own commit there); ``ResultError`` for a name git refuses, the remote's default branch (an empty remote's
    too: the name its ``HEAD`` gives) or a branch of the remote's that is not this session's."""
    refused = f"the pull request's branch '{printable(branch)}'"
    if branch.startswith("-") or git(folder, "check-ref-format", f"refs/heads/{branch}", check=False,
                                     bounds=bounds).returncode != 0:
        raise ResultError(f"{refused} is not a name git takes for a branch; nothing pushed")
    said = git(folder, "ls-remote", "--symref", remote, "HEAD", f"refs/heads/{branch}", bounds=bounds).stdout
    lines = [line.split("\t") for line in said.decode(errors="replace").splitlines()]
    default = next((ref.removeprefix("ref: ") for ref, name in lines if ref.startswith("ref: ") and name == "HEAD"),
                   None)
    if default is None and not lines:  # an empty remote: ls-remote does not say where its HEAD points
        with tempfile.TemporaryDirectory(prefix="toolkit-remote-") as scratch:
            git(Path(scratch), "clone", "--quiet", "--bare", remote, "empty.git", bounds=bounds)
            default = git(Path(scratch, "empty.git"), "symbolic-ref", "-q", "HEAD", check=False,
                          bounds=bounds).stdout.decode().strip()
    if default == f"refs/heads/{branch}":
        raise ResultError(f"{refused} is the default branch of {remote}; nothing pushed (name a new branch)")
    there = next((ref for ref, name in lines if name == f"refs/heads/{branch}"), "")
    if there and there != mine:
        raise ResultError(f"{refused} is already on {remote} and is not this session's; nothing pushed (name a "
                          "new branch)")
    return there


def ignore_as_the_user(folder: Path, files: Path, bounds: Bounds) -> None:
    """The scratch repository ``files`` ignores what the user's repository ``folder`` does beyond the tree's own
    ``.gitignore`` files: its ``info/exclude`` and the excludes file of the user's settings
    (``core.excludesFile``, else ``$XDG_CONFIG_HOME/git/ignore`` or ``~/.config/git/ignore``), as their git reads
    them (the scratch repository reads no setting of the user's otherwise)."""
    exclude = Path(folder, git(folder, "rev-parse", "--git-path", "info/exclude", bounds=bounds).stdout.decode()
                   .strip())
    if exclude.is_file():
        (files / ".git" / "info").mkdir(exist_ok=True)
        shutil.copyfile(exclude, files / ".git" / "info" / "exclude")
    named = git(folder, "config", "--path", "--get", "core.excludesFile", check=False, bounds=bounds,
                user_config=True).stdout.decode().strip()
    if not named:
        home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.environ.get("HOME", "/nonexistent"), ".config")
        named = os.path.join(home, "git", "ignore")
    git(files, "config", "core.excludesFile", str(Path(folder, named)), bounds=bounds)


def unpack_to_commit(archive: Path, folder: Path, files: Path, limits: Limits) -> None:
    """The archive's files written into the scratch repository ``files`` (by ``--apply``'s rules); a link out of
    the folder that the user's folder has as it is (a venv's ``bin/python -> /usr/bin/python3``) is the user's
    own, made as it is rather than refused (``--apply`` leaves it alone, as unchanged)."""
    as_it_began(folder, files, listing(archive.with_suffix(".start.json")))
    plan = archive_plan(archive, files, limits, None, own=True)
    own = [e for e in plan.entries if e.kind == "l" and same(folder, e, archive, 0)]
    plan.entries = [e for e in plan.entries if e not in own]
    staging.write(archive.name, plan, files, limits)
    shutil.rmtree(files / ".agent")
    for e in own:
        parts = e.path.split("/")
        at = staging.walk(files, parts[:-1])
        try:
            os.symlink(e.target, parts[-1], dir_fd=at)
        finally:
            os.close(at)


def as_it_began(folder: Path, files: Path, start: dict | None) -> None:
    """The scratch folder ``files`` made as the session's copy was at its start, since the archive holds only
    the change: the user's files and links that are still as the start listing has them copied in (over the
    start commit's), each reached without following a link; one the user changed since is the start commit's
    (or absent, if untracked)."""
    for rel, entry in (start or {}).items():
        if not (isinstance(entry, list) and len(entry) >= 3 and entry[0] in "fl") or not as_listed(folder, rel, entry):
            continue
        parts = rel.split("/")
        try:
            at = staging.walk(files, parts[:-1], made=[])
        except OSError:
            continue
        try:
            os.unlink(parts[-1], dir_fd=at)
        except FileNotFoundError:
            pass
        except OSError:
            os.close(at)
            continue
        try:
            if entry[0] == "l":
                os.symlink(os.readlink(folder / rel), parts[-1], dir_fd=at)
            else:
                with open(folder / rel, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as src, \
                        open(parts[-1], "xb", opener=lambda p, f: os.open(p, f, entry[3] if len(entry) > 3 else 0o644,
                                                                           dir_fd=at)) as dst:
                    shutil.copyfileobj(src, dst)
        except OSError:
            pass
        finally:
            os.close(at)


def diff_of(files: Path, commit: str, path: Path, bounds: Bounds) -> str:
    """The commit's diff against its parent (or, a root commit, against nothing), as its record keeps it."""
    with open(path, "wb") as out:
        git(files, "diff-tree", "-p", "--root", "--no-commit-id", "--no-color", "--no-ext-diff", "--no-textconv",
            commit, bounds=bounds, stdout=out)
    with open(path, "rb") as f:
        diff = f.read(DIFF_BYTES + 1)
    cut = f"\n[the diff is cut at {DIFF_BYTES} bytes: the whole is the pushed commit]\n" if len(diff) > DIFF_BYTES \
        else ""
    return diff[:DIFF_BYTES].decode(errors="replace") + cut
