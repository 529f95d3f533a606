"""The user's folder as the host lists it (``manifest``: at a session's start, so that applying deletes
only what the session deleted and the user has not changed since), the deletions made from that listing, and
the folders git would take for a repository (``refuse_repositories``: a result changing a file in one is
refused whole: git's discovery reads such a folder's ``config`` and runs its hooks, fsmonitor or pager at the
user's next git command there)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from toolkit.agent.environments.hostgit import ResultError
from toolkit.agent.environments.staging import folders_above, in_time, walk
from toolkit.core.printable import printable


def manifest(folder: Path) -> dict[str, list]:
    """A folder's entries (``.agent`` at the top and ``.git`` at any depth left out - a nested repository's or a
    submodule's git is the user's, never listed, so never deleted; FIFOs, sockets and devices too, as the copy
    leaves them out) as ``{relative path: [kind, size, mtime_ns, mode]}``, kind ``f``, ``l`` or ``d``, mode the
    permission bits; at any size (the session's result is made against it: only what changed comes back)."""
    found: dict[str, list] = {}
    for top, dirs, files in os.walk(folder, followlinks=False):
        left_out = (".agent", ".git") if top == str(folder) else (".git",)
        dirs[:] = [d for d in dirs if d not in left_out]
        files = [f for f in files if f not in left_out]
        for name in dirs + files:
            path = os.path.join(top, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            kind = "l" if stat.S_ISLNK(st.st_mode) else "d" if stat.S_ISDIR(st.st_mode) else \
                "f" if stat.S_ISREG(st.st_mode) else None
            if kind:
                found[os.path.relpath(path, folder)] = [kind, st.st_size, st.st_mtime_ns, st.st_mode & 0o777]
    return found


def repositories(paths: list[str], top: bool) -> set[str]:
    """The folders of a list of files that git could take for a repository: those holding a ``HEAD``
    (``""`` is the top, counted with ``top``: a git workspace's own top has its ``.git``, which git finds
    first)."""
    return {os.path.dirname(p) for p in paths if os.path.basename(p) == "HEAD" and (top or os.path.dirname(p))}


def refuse_repositories(base: Path, changed: list[str], paths: list[str], top: bool, what: str,
                        deadline: float | None = None) -> None:
    """One line (``ResultError``) when a changed path is in (or below) a folder that holds a ``HEAD`` in the
    result (``paths``: ``repositories``) or already in the user's folder ``base`` (e.g. one git ignores).
    Each folder is looked at once, within the intake's ``deadline``."""
    found, seen = repositories(paths, top), set()
    for path in filter(None, changed):
        in_time(what, deadline)
        for folder in [*folders_above(path, seen), *([""] if top and "" not in seen else [])]:
            seen.add(folder)
            if folder in found or os.path.lexists(os.path.join(base, folder, "HEAD")):
                where = f"{printable(folder)}/" if folder else "the top"
                raise ResultError(f"{what}: '{printable(path)}' is in {where}, which git "
                                  f"would take for a repository (it holds a HEAD), so its settings would run at "
                                  f"your next git command there; not applied, nothing changed")


def deletions(folder: Path, start: dict | None, gone: set[str]) -> str:
    """Delete ``gone`` (what the session deleted) where the start listing (``<session>.start.json``, the
    host's) has it as it still is; returns the apply line's ending. No listing: ``folder`` is a scratch folder
    of the host's own, everything in ``gone`` is deleted."""
    deleted, kept = 0, []
    for rel in sorted(gone, key=lambda r: -r.count(os.sep)):  # children before their folder
        entry = None if start is None else start.get(rel)
        if remove(folder, rel, entry[:3] if isinstance(entry, list) and len(entry) >= 3 else
                  None if start is None else ["?", 0, 0]):
            deleted += 1
        elif isinstance(entry, list) and entry[:1] != ["d"]:
            kept.append(rel)
    note = f"; deleted {deleted} entr{'y' if deleted == 1 else 'ies'} the session deleted"
    if kept:
        shown = ", ".join(printable(k) for k in kept[:3]) + (", …" if len(kept) > 3 else "")
        note += (f"; kept {len(kept)} the session deleted that changed since it began or are not found "
                 f"as they were ({shown})")
    return note


def remove(folder: Path, rel: str, entry: list | None) -> bool:
    """Remove ``rel`` below ``folder`` if it is still what the listing says (``entry``; None: whatever it is;
    a folder: if empty), reaching it one component at a time without following links; False when not removed."""
    parts = rel.split(os.sep)
    if os.path.isabs(rel) or any(p in ("", ".", "..", ".git") for p in parts) or parts[0] == ".agent":
        return False
    kind, size, mtime = entry or ("*", None, None)
    try:
        fd = walk(folder, parts[:-1])
    except OSError:
        return False
    try:
        st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        if kind in ("d", "*") and stat.S_ISDIR(st.st_mode):
            os.rmdir(parts[-1], dir_fd=fd)  # only when empty
            return True
        same = (kind == "f" and stat.S_ISREG(st.st_mode) or kind == "l" and stat.S_ISLNK(st.st_mode)) \
            and (st.st_size, st.st_mtime_ns) == (size, mtime) or entry is None and not stat.S_ISDIR(st.st_mode)
        if same:
            os.unlink(parts[-1], dir_fd=fd)
        return same
    except OSError:
        return False
    finally:
        os.close(fd)
