"""A result written into the user's folder all or nothing: a ``Plan`` (the entries to write, each a file, a
link or a folder, and what to delete) is checked whole first, then every file and link is written to a
staging folder on the same file system (``.agent/staging-…``), then moved into place; a refusal, or a full
disk while staging or moving (the move is undone), writes nothing in the folder (the staging folder goes).

The rules, one set for a git result and an archive:

- names: relative, no ``.``/``..``/empty part, no ``.git`` part, not under ``.agent``; every folder on the way
  is a folder (in the result and in the user's folder), never a link, and is reached one part at a time
  without following links;
- kinds: files (mode 644 or 755: no set-id or other bits), links, folders; a hard link arrives as a file of its
  own (its bytes counted again); anything else refuses the whole result;
- links: relative, and any ``..`` first, never above the folder (``link -> ../../x`` from ``a/b/`` is refused,
  ``-> /elsewhere`` too): followed from where they are, they stay in the folder;
- sizes, in bytes (a sparse file counts its length): each file at most ``file_size_mb``, all of them at most
  ``disk_mb``, at most ``inodes`` entries, and no more than the folder's file system has free (``RESERVE``
  left over: ``room``, also before a result is kept at a session's end);
- names that fold together (``README`` and ``readme``, or one Unicode form and another): a file system that
  folds case (macOS, Windows, exFAT) holds one of them, so two such names written, or one written and the
  other deleted (a change of case, on such a system the file just written), or a name below one that folds
  onto a file or link, refuse the whole.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import time
import unicodedata
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from toolkit.agent.environments.hostgit import INTAKE_S, MiB, ResultError
from toolkit.core.printable import printable

IGNORED = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
RESERVE = MiB  # left free on the user's file system after the toolkit writes a result there
RESERVE_INODES = 8  # and inodes (a folder the move makes needs one: run out, the move would stop half-way)


@dataclass
class Entry:
    path: str  # relative, "/"-separated
    kind: str  # "f", "l" or "d"
    size: int = 0
    mode: int = 0o644
    target: str = ""  # a link's
    write: Callable[[Path], None] | None = None  # a file's: writes its bytes to the path given
    offset: int = 0  # an archive's file: where its bytes start
    mtime: int = 0  # an archive's file: its modification time, whole seconds


@dataclass
class Plan:
    entries: list[Entry] = field(default_factory=list)
    delete: Callable[[Path], str] | None = None  # after the move: deletes what the session deleted; the line's end
    changed: int = 0  # how many files it changes (the line says so)
    gone: list[str] = field(default_factory=list)  # what ``delete`` may delete
    deadline: float | None = None  # ``time.monotonic()`` past which checking it is refused (the intake's clock)

    def on_time(self, what: str) -> None:
        """Every loop over the entries asks: past the intake's wall clock, one line (so the host's own time on
        a result, CPU included, is bounded by ``INTAKE_S`` whatever its shape)."""
        in_time(what, self.deadline)


def in_time(what: str, deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise ResultError(f"{what}: checking it ran past the intake's wall clock ({INTAKE_S} s); refused")


def folders_above(path: str, seen: set[str]) -> Iterator[str]:
    """The folders above ``path`` not yet in ``seen`` (added to it), deepest first: each folder of a result is
    checked once, so a tree 900 folders deep costs its size, not its depth squared."""
    folder = path.rpartition("/")[0]
    while folder and folder not in seen:
        seen.add(folder)
        yield folder
        folder = folder.rpartition("/")[0]


def name(path: str) -> str:
    """A name from the sandbox, fit for one line (newlines and controls escaped)."""
    return printable(path)


def refuse(what: str, path: str, why: str) -> ResultError:
    return ResultError(f"{what}: '{name(path)}' {why}; not applied, nothing changed")


def check_name(what: str, path: str) -> list[str]:
    parts = path.split("/")
    if path.startswith("/") or "\0" in path or any(p in ("", ".", "..") for p in parts):
        raise refuse(what, path, "is not a plain relative name")
    if len(os.fsencode(path)) > 4095 or any(len(p) > 63 and len(os.fsencode(p)) > 255 for p in parts):
        raise refuse(what, path, "is longer than a name may be (255 bytes a part, 4095 in all)")
    if any(same_as(p) in (".git", "git~1") for p in parts) or same_as(parts[0]) == ".agent":
        raise refuse(what, path, "is refused (a .git or .agent path, in any case or form)")
    return parts


def same_as(part: str) -> str:
    """What a file system that folds names takes ``part`` for (git's own rule, as in its ``verify_path``):
    case and Unicode form folded, the code points HFS+ ignores dropped, NTFS's trailing dots and spaces too."""
    if part.isascii():  # the same, quicker (a deep path's every part is asked)
        return part.lower().rstrip(". ")
    return IGNORED.sub("", fold(part)).rstrip(". ")


def check_link(what: str, path: str, target: str) -> None:
    """A link stays in the folder: relative, its ``..`` parts first and no more than its depth."""
    parts = [p for p in target.split("/") if p not in ("", ".")]
    ups = next((i for i, p in enumerate(parts) if p != ".."), len(parts))
    if target.startswith("/") or ".." in parts[ups:] or ups > path.count("/") or "\0" in target:
        raise refuse(what, path, f"is a link out of the folder (-> '{name(target)}')")


def check_entries(what: str, plan: Plan, limits, links: bool = True) -> None:
    """The plan's names, links (with ``links``), kinds and sizes against the rules above; ``ResultError``."""
    kinds: dict[str, str] = {}
    for e in plan.entries:  # two entries on one name: the move would write the first, then fail on the second
        if e.path in kinds:
            raise refuse(what, e.path, "is in the result more than once")
        kinds[e.path] = e.kind
    if len(plan.entries) > limits.inodes:
        raise ResultError(f"{what}: {len(plan.entries)} entries, more than the session's inodes "
                          f"({limits.inodes}); not applied, nothing changed")
    total, seen = 0, set()
    for e in plan.entries:
        plan.on_time(what)
        check_name(what, e.path)
        if e.kind == "l":
            if links:
                check_link(what, e.path, e.target)
        elif e.kind == "f":
            if e.mode not in (0o644, 0o755):
                raise refuse(what, e.path, f"has mode {e.mode:o} (only 644 and 755 are applied)")
            if e.size > limits.file_size_mb * MiB:
                raise refuse(what, e.path, f"is {e.size} bytes, larger than limits.file_size_mb")
            total += e.size
        elif e.kind != "d":
            raise refuse(what, e.path, "is not a file, a link or a folder")
        for folder in folders_above(e.path, seen):
            if kinds.get(folder, "d") != "d":
                raise refuse(what, e.path, f"is below '{name(folder)}', which is not a folder in the result")
    if total > limits.disk_mb * MiB:
        raise ResultError(f"{what}: {total} bytes of files, more than the session's disk_mb ({limits.disk_mb} MiB, "
                          "counted in bytes: a sparse file counts its length); not applied, nothing changed")


def fold(path: str) -> str:
    return unicodedata.normalize("NFC", path.casefold())


def check_folding(what: str, plan: Plan) -> None:
    """Names written (or written and deleted) that a case-folding file system takes for one; ``ResultError``."""
    kinds: dict[str, tuple[str, str]] = {}
    for e in plan.entries:
        other, _ = kinds.setdefault(fold(e.path), (e.path, e.kind))
        if other != e.path:
            raise refuse(what, e.path, f"and '{name(other)}' differ only in case or Unicode form (one file where "
                         "case folds, as on macOS, Windows or exFAT)")
    seen: set[str] = set()
    for e in plan.entries:
        plan.on_time(what)
        for folder in folders_above(fold(e.path), seen):
            above, kind = kinds.get(folder, ("", "d"))
            if kind != "d":
                raise refuse(what, e.path, f"is below a name that folds onto '{name(above)}', which is not a "
                             "folder in the result")
    for path in plan.gone:
        plan.on_time(what)
        other, _ = kinds.get(fold(path), (path, ""))
        if other != path:
            raise refuse(what, other, f"is written and '{name(path)}' deleted: they differ only in case or "
                         "Unicode form (where case folds, the delete would take the file just written)")


def room(what: str, need: int, where: Path, end: str = "not applied, nothing changed", inodes: int = 1) -> None:
    """Refuse (one line) writing ``need`` bytes in ``inodes`` new entries on ``where``'s file system unless
    ``RESERVE`` bytes and ``RESERVE_INODES`` inodes are left free (a file system of no fixed count: bytes only)."""
    free, vfs = shutil.disk_usage(where).free, os.statvfs(where)
    if need + RESERVE > free:
        raise ResultError(f"{what}: {need} bytes to write and {free} bytes free on {where}'s file system (the "
                          f"toolkit leaves {RESERVE} free); {end}")
    if vfs.f_files and inodes + RESERVE_INODES > vfs.f_favail:
        raise ResultError(f"{what}: {inodes} entries to make and {vfs.f_favail} inodes free on {where}'s file "
                          f"system (the toolkit leaves {RESERVE_INODES} free); {end}")


def check(what: str, plan: Plan, folder: Path, limits) -> None:
    """The whole plan against the rules above and the user's folder as it is now; ``ResultError`` (one line).
    Each folder above an entry is looked at once."""
    check_entries(what, plan, limits)
    check_folding(what, plan)
    seen: set[str] = set()
    present: dict[str, bool] = {}  # a folder above an entry: whether the user's folder has it
    nearest: dict[str, str] = {}  # such a folder -> the nearest one at or above it the user's folder has
    writable: dict[str, bool] = {}
    for e in plan.entries:
        plan.on_time(what)
        for here in folders_above(e.path, seen):
            has = kind_in(what, e.path, folder, here)
            if has == "o":
                raise refuse(what, e.path, f"needs '{name(here)}' to be a folder, and in your folder it is not")
            present[here] = has == "d"
        has = kind_in(what, e.path, folder, e.path)
        if e.kind == "d" and has == "o":
            raise refuse(what, e.path, f"needs '{name(e.path)}' to be a folder, and in your folder it is not")
        if e.kind != "d" and has == "d":
            raise refuse(what, e.path, "is a folder in your folder")
        parent = reach(e.path.rpartition("/")[0], present, nearest)
        if parent not in writable:  # a rename there would fail half-way through the move
            writable[parent] = os.access(folder / parent, os.W_OK | os.X_OK)
        if not writable[parent]:
            raise refuse(what, e.path, f"is in '{name(str(folder / parent))}', which you cannot write")
    files = sum(e.size for e in plan.entries if e.kind == "f")
    room(what, files + 4096 * len(plan.entries), folder, inodes=len(plan.entries))  # a block an entry at most


def kind_in(what: str, path: str, folder: Path, here: str) -> str | None:
    """What the user's folder has at ``here`` (for the entry ``path``): ``d`` a folder, ``o`` anything else,
    None nothing (a file above it is found when that one is looked at)."""
    try:
        st = os.lstat(folder / here)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:  # e.g. a name longer than the folder's file system allows
        raise refuse(what, path, f"cannot be written in your folder ({exc.strerror})") from None
    return "d" if stat.S_ISDIR(st.st_mode) else "o"


def reach(here: str, present: dict[str, bool], nearest: dict[str, str]) -> str:
    """The nearest folder at or above ``here`` that the user's folder has (``""``: the top), each folder
    walked up from once."""
    chain = []
    while here and not present.get(here) and here not in nearest:
        chain.append(here)
        here = here.rpartition("/")[0]
    found = nearest.get(here, here)
    for f in chain:
        nearest[f] = found
    return found


def walk(folder: Path, parts: list[str], made: list[str] | None = None, start: tuple[int, int] | None = None) -> int:
    """A descriptor of ``folder/parts…``, reached one part at a time without following links (with ``made``:
    making what is missing, and listing there what it made); ``start``: a descriptor of ``folder/parts[:n]``
    and ``n``, to go on from (it stays open)."""
    fd, done = (os.dup(start[0]), start[1]) if start else (os.open(folder, os.O_RDONLY | os.O_DIRECTORY), 0)
    try:
        for n in range(done, len(parts)):
            if made is not None:
                try:
                    os.mkdir(parts[n], 0o755, dir_fd=fd)
                    made.append("/".join(parts[:n + 1]))
                except FileExistsError:
                    pass
            inner = os.open(parts[n], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        return fd
    except BaseException:
        os.close(fd)
        raise


def write(what: str, plan: Plan, folder: Path, limits) -> str:
    """Check, stage, move into place, then delete; returns the line's end (``Plan.delete``'s)."""
    check(what, plan, folder, limits)
    (folder / ".agent").mkdir(exist_ok=True)
    staging = folder / ".agent" / f"staging-{uuid.uuid4().hex}"
    staging.mkdir(mode=0o700)
    try:
        if os.stat(staging).st_dev != os.stat(folder).st_dev:  # renames would fail half-way through the move
            raise ResultError(f"{what}: {folder / '.agent'} is not on the folder's file system; not applied, "
                              "nothing changed")
        try:
            for i, e in enumerate(plan.entries):
                if e.kind == "f":
                    e.write(staging / str(i))
                    if os.lstat(staging / str(i)).st_size != e.size:
                        raise refuse(what, e.path, "did not come out at the size it declared")
                    os.chmod(staging / str(i), e.mode)
                elif e.kind == "l":
                    os.symlink(e.target, staging / str(i))
        except OSError as exc:
            raise ResultError(f"{what}: {exc.strerror or exc} while staging the result; not applied, nothing "
                              "changed") from None
        move(what, plan, folder, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return plan.delete(folder) if plan.delete else ""


def move(what: str, plan: Plan, folder: Path, staging: Path) -> None:
    """Every staged entry renamed into place (folders made first, each reached without following links), the
    user's file it replaces set aside in the staging folder. Should a step fail (another program took the room
    the checks saw), every step is taken back: the user's files return, the folders made go."""
    src, made, moved = os.open(staging, os.O_RDONLY | os.O_DIRECTORY), [], []
    last: tuple[list[str], int] | None = None  # the folder last reached: an entry below it goes on from there
    try:  # folders first, then files by folder: a deep tree is walked down once, not once an entry
        for i, e in sorted(enumerate(plan.entries), key=lambda x: (x[1].kind != "d", x[1].path.split("/")[
                :None if x[1].kind == "d" else -1])):
            parts = e.path.split("/")
            want = parts if e.kind == "d" else parts[:-1]
            on = last is not None and 0 < len(last[0]) <= len(want) and want[:len(last[0])] == last[0]
            fd = walk(folder, want, made, start=(last[1], len(last[0])) if on else None)
            if last is not None:
                os.close(last[1])
            last = (want, fd)
            if e.kind != "d":
                try:
                    os.rename(parts[-1], f"old-{i}", src_dir_fd=fd, dst_dir_fd=src)
                    moved.append((parts, i, True))
                except FileNotFoundError:
                    moved.append((parts, i, False))
                os.replace(str(i), parts[-1], src_dir_fd=src, dst_dir_fd=fd)
    except OSError as exc:
        try:
            undo(folder, src, made, moved)
        except OSError as again:
            raise ResultError(f"{what}: {exc.strerror or exc} while moving the result into place, and "
                              f"{again.strerror or again} while undoing it: your folder holds part of it") from None
        raise ResultError(f"{what}: {exc.strerror or exc} while moving the result into place (another program "
                          "took the room the checks saw); undone, nothing changed") from None
    finally:
        os.close(src)
        if last is not None:
            os.close(last[1])


def undo(folder: Path, src: int, made: list[str], moved: list[tuple[list[str], int, bool]]) -> None:
    """``move``'s steps taken back, the last first."""
    for parts, i, kept in reversed(moved):
        fd = walk(folder, parts[:-1])
        try:
            if kept:
                os.replace(f"old-{i}", parts[-1], src_dir_fd=src, dst_dir_fd=fd)
            else:
                os.unlink(parts[-1], dir_fd=fd)
        except FileNotFoundError:  # the step failed before its name was there
            pass
        finally:
            os.close(fd)
    for path in reversed(made):
        os.rmdir(folder / path)
