"""What comes back from a session, handled on the host as data: never a folder the sandbox wrote.

The environment makes the result inside the sandbox (``collect.py``) and writes it to a file of the
host's; here it is taken in:

- a **git bundle** (a git workspace) is fetched into the user's repository as ``refs/agent/<session>/…``
  (``result``: the working tree at the end, ``start``: at the start, ``heads/<branch>``: the agent's
  branches), by the host's git, in the user's repository, with its system and global configuration off and
  hooks, fsmonitor and external protocols disabled on the command line, and every object checked
  (``transfer.fsckObjects``). Nothing the sandbox wrote is read as configuration; the working tree is
  untouched.
- a **tar archive** (a plain folder) is kept as ``.agent/results/<session>.tar``, beside
  ``<session>.start.json``: the folder's files when the session began (the host's own listing, ``manifest``).

``apply`` merges it when the user asks (``engineer --apply SESSION``): the diff from ``start`` to
``result`` applied with ``git apply`` (which refuses paths in ``.git`` and writes through no link), or the
archive unpacked with Python's ``data`` filter (no links out, no devices or FIFOs, no set-id bits), no
``.git`` or ``.agent`` part in any name, at most ``MAX_MEMBERS`` members and ``MAX_BYTES`` bytes; then what
the session deleted is deleted: a file or link of the start listing that is not in the archive and that the
user has not changed since (same size and modification time), an emptied folder likewise, each reached
from the folder one component at a time without following a link (nothing outside it is touched).
Either way a result that adds or changes a file inside a folder git would take for a repository (one that
holds a ``HEAD``: git's discovery reads such a folder's ``config`` and runs its hooks, fsmonitor or pager
at the user's next git command there) is refused whole, in one line, before anything is written.
``push`` sends a fetched branch to an allowed remote (a pull request), from the user's repository.
"""

from __future__ import annotations

import json
import os
import re
import stat
import shutil
import subprocess
import tarfile
from pathlib import Path

from toolkit.agent.environments.collect import GIT_SAFETY, flags
from toolkit.core.secrets import redact

SAFE = flags({**GIT_SAFETY, "transfer.fsckObjects": "true", "fetch.fsckObjects": "true", "core.sshCommand": "ssh"})
MAX_MEMBERS = 100_000
MAX_BYTES = 4 * 2**30


class ResultError(ValueError):
    """The result cannot be taken in or applied (one line: why)."""


def git(repo: Path, *args: str, input: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """The host's git in the user's repository: no system or global configuration, no hooks."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent", "GIT_TERMINAL_PROMPT": "0",
           "GIT_AUTHOR_NAME": "toolkit", "GIT_AUTHOR_EMAIL": "toolkit@example.invalid",
           "GIT_COMMITTER_NAME": "toolkit", "GIT_COMMITTER_EMAIL": "toolkit@example.invalid"}
    out = subprocess.run(["git", *SAFE, "-C", str(repo), *args], input=input, capture_output=True, env=env,
                         timeout=600)
    if check and out.returncode != 0:
        raise ResultError(f"git {args[0]}: {redact(out.stderr.decode(errors='replace').strip()[-300:])}")
    return out


def is_git(folder: Path) -> bool:
    return (Path(folder) / ".git").exists()


def manifest(folder: Path) -> dict[str, list] | None:
    """A plain folder's entries (``.agent`` left out; FIFOs, sockets and devices too, as the copy leaves
    them out) as ``{relative path: [kind, size, mtime_ns]}``, kind ``f``, ``l`` or ``d``; None past
    ``MAX_MEMBERS`` (deletions are then not applied, and ``apply`` says so)."""
    found: dict[str, list] = {}
    for top, dirs, files in os.walk(folder, followlinks=False):
        if top == str(folder):
            dirs[:] = [d for d in dirs if d != ".agent"]
            files = [f for f in files if f != ".agent"]
        for name in dirs + files:
            path = os.path.join(top, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            kind = "l" if stat.S_ISLNK(st.st_mode) else "d" if stat.S_ISDIR(st.st_mode) else \
                "f" if stat.S_ISREG(st.st_mode) else None
            if kind:
                found[os.path.relpath(path, folder)] = [kind, st.st_size, st.st_mtime_ns]
            if len(found) > MAX_MEMBERS:
                return None
    return found


def take(folder: Path, session: str, made: Path, start: str = "", files: dict | None = None) -> str:
    """Take a result file in; returns one line saying where it is. ``files``: a plain folder's ``manifest``
    at the session's start."""
    folder = Path(folder)
    if made.suffix == ".bundle":
        prefix = f"refs/agent/{session}"
        git(folder, "fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head",
            "--force", str(made), f"refs/toolkit/result:{prefix}/result", f"refs/toolkit/start:{prefix}/start",
            f"refs/heads/*:{prefix}/heads/*")
        if start and git(folder, "rev-parse", f"{prefix}/start").stdout.decode().strip() != start:
            raise ResultError("the result's start is not the working tree the session began with; not taken")
        changed = git(folder, "diff", "--name-only", f"{prefix}/start", f"{prefix}/result").stdout.decode()
        n = len(changed.splitlines())
        return f"{prefix}/result ({n} file{'s' if n != 1 else ''} changed; apply with engineer --apply {session})"
    target = folder / ".agent" / "results" / f"{session}.tar"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(made, target)
    if files is not None:
        target.with_suffix(".start.json").write_text(json.dumps(files))
    return f"{target} (apply with engineer --apply {session})"


def apply(folder: Path, session: str) -> str:
    """Merge a session's result into the user's folder; returns one line saying what changed."""
    folder = Path(folder)
    if not re.fullmatch(r"[A-Za-z0-9._-]+", session):
        raise ResultError(f"--apply {session}: not a session id")
    archive = folder / ".agent" / "results" / f"{session}.tar"
    if is_git(folder) and git(folder, "rev-parse", "--verify", "-q", f"refs/agent/{session}/result",
                              check=False).returncode == 0:
        prefix = f"refs/agent/{session}"
        patch = git(folder, "diff", "--binary", "--no-ext-diff", "--no-textconv", f"{prefix}/start",
                    f"{prefix}/result").stdout
        if not patch.strip():
            return "nothing to apply: the session changed no file"
        tree = git(folder, "ls-tree", "-r", "-z", "--name-only", f"{prefix}/result").stdout.decode(errors="replace")
        changed = git(folder, "diff", "-z", "--name-only", "--no-renames", f"{prefix}/start", f"{prefix}/result")
        refuse_repositories(folder, changed.stdout.decode(errors="replace").split("\0"), tree.split("\0"),
                            top=False, what=f"{prefix}/result")
        git(folder, "apply", "--whitespace=nowarn", "-", input=patch)
        n = len(git(folder, "apply", "--numstat", "-", input=patch).stdout.splitlines())
        return f"applied {n} changed file{'s' if n != 1 else ''} from {prefix}/result to the working tree"
    if archive.is_file():
        return unpack(archive, folder)
    raise ResultError(f"--apply {session}: no result of that session in {folder}")


def repositories(paths: list[str], top: bool) -> set[str]:
    """The folders of a list of files that git could take for a repository: those holding a ``HEAD``
    (``""`` is the top, counted with ``top``: a git workspace's own top has its ``.git``, which git finds
    first)."""
    return {os.path.dirname(p) for p in paths if os.path.basename(p) == "HEAD" and (top or os.path.dirname(p))}


def refuse_repositories(base: Path, changed: list[str], paths: list[str], top: bool, what: str) -> None:
    """One line (``ResultError``) when a changed path is in (or below) a folder that holds a ``HEAD`` in the
    result (``paths``: ``repositories``) or already in the user's folder ``base`` (e.g. one git ignores)."""
    found = repositories(paths, top)
    for path in filter(None, changed):
        parts = path.split("/")
        for folder in ("/".join(parts[:i]) for i in range(0 if top else 1, len(parts))):
            if folder in found or os.path.lexists(base / folder / "HEAD"):
                raise ResultError(f"{what}: {path!r} is in {folder or 'the top'}{'/' if folder else ''}, which git "
                                  f"would take for a repository (it holds a HEAD), so its settings would run at "
                                  f"your next git command there; not applied, nothing changed")


def start_listing(archive: Path) -> dict | None:
    """The folder's listing at the session's start (``<session>.start.json``, the host's own), or None."""
    listing = archive.with_suffix(".start.json")
    try:
        start = json.loads(listing.read_text()) if listing.is_file() else None
    except (OSError, ValueError):
        start = None
    return start if isinstance(start, dict) and len(start) <= MAX_MEMBERS else None


def _changed(member: tarfile.TarInfo, start: dict | None) -> bool:
    """Whether an archive member is new or differs from the start listing (size, whole seconds of mtime)."""
    entry = (start or {}).get(os.path.normpath(member.name))
    if not isinstance(entry, list) or len(entry) != 3:
        return True
    kind = "d" if member.isdir() else "l" if member.issym() else "f"
    return entry[0] != kind or kind == "f" and (entry[1] != member.size or int(entry[2]) // 10**9 != int(member.mtime))


def unpack(archive: Path, folder: Path) -> str:
    """A plain folder's result unpacked as data, then what the session deleted deleted (``_deletions``)."""
    names = set()
    start = start_listing(archive)
    with tarfile.open(archive, mode="r:") as tar:
        members, total = [], 0
        for member in tar:
            parts = Path(member.name).parts
            if ".git" in parts or (parts and parts[0] == ".agent"):
                raise ResultError(f"{archive.name}: {member.name!r} is refused (a .git or .agent path)")
            total += max(member.size, 0)
            members.append(member)
            names.add(os.path.normpath(member.name))
            if len(members) > MAX_MEMBERS or total > MAX_BYTES:
                raise ResultError(f"{archive.name}: more than {MAX_MEMBERS} members or {MAX_BYTES} bytes; refused")
        files = [m for m in members if not m.isdir()]
        refuse_repositories(folder, [os.path.normpath(m.name) for m in files if _changed(m, start)],
                            [os.path.normpath(m.name) for m in files], top=True, what=archive.name)
        try:
            tar.extractall(folder, members=members, filter="data")
        except (tarfile.FilterError, OSError) as exc:
            raise ResultError(f"{archive.name}: {exc}") from None
    return f"unpacked {len(members)} entries from {archive.name} into {folder}" + _deletions(folder, start, names)


def _deletions(folder: Path, start: dict | None, names: set[str]) -> str:
    """Delete what the start listing (``<session>.start.json``, the host's) has and the archive has not;
    returns the apply line's ending."""
    if start is None:
        return "; deletions not applied (no listing of the folder at the session's start)"
    deleted, kept = 0, []
    for rel in sorted(set(start) - names, key=lambda r: -r.count(os.sep)):  # children before their folder
        entry = start[rel]
        if _remove(folder, rel, entry if isinstance(entry, list) and len(entry) == 3 else ["?", 0, 0]):
            deleted += 1
        elif entry[0] != "d":
            kept.append(rel)
    note = f"; deleted {deleted} entr{'y' if deleted == 1 else 'ies'} the session deleted"
    if kept:
        shown = ", ".join(kept[:3]) + (", …" if len(kept) > 3 else "")
        note += (f"; kept {len(kept)} the session deleted that changed since it began or are not found "
                 f"as they were ({shown})")
    return note


def _remove(folder: Path, rel: str, entry: list) -> bool:
    """Remove ``rel`` below ``folder`` if it is still what the listing says (a folder: if empty), reaching
    it one component at a time without following links; False when not removed."""
    parts = rel.split(os.sep)
    if os.path.isabs(rel) or any(p in ("", ".", "..") for p in parts) or parts[0] in (".git", ".agent"):
        return False
    kind, size, mtime = entry
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        if kind == "d" and stat.S_ISDIR(st.st_mode):
            os.rmdir(parts[-1], dir_fd=fd)  # only when empty
            return True
        same = (kind == "f" and stat.S_ISREG(st.st_mode) or kind == "l" and stat.S_ISLNK(st.st_mode)) \
            and (st.st_size, st.st_mtime_ns) == (size, mtime)
        if same:
            os.unlink(parts[-1], dir_fd=fd)
        return same
    except OSError:
        return False
    finally:
        os.close(fd)


def push(folder: Path, session: str, branch: str, remote: str) -> str:
    """Push the fetched ``heads/<branch>`` of a session to ``remote`` (an allowed URL or path)."""
    git(folder, "push", "--quiet", "--no-verify", remote, f"refs/agent/{session}/heads/{branch}:refs/heads/{branch}")
    return f"pushed {branch} to {remote}"
