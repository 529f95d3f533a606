"""A session's result (the tar archive ``collect.py`` made in the sandbox) read as data into a
``staging.Plan``: its headers only, never ``tarfile``'s extraction (each file's bytes are copied from its
place in the archive when staged). Regular files, links and folders; a hard link becomes a file of its own;
anything else (devices, FIFOs, sparse members) refuses the whole. Entries the user's folder already has as
they are (same bytes and mode, same link) are left out; what the session deleted is deleted after the move.
"""

from __future__ import annotations

import os
import re
import tarfile
from pathlib import Path

from toolkit.agent.environments import staging
from toolkit.agent.environments.collect import DELETED
from toolkit.agent.environments.hostgit import INTAKE_S, Bounds, ResultError
from toolkit.agent.environments.manifest import deletions, manifest, refuse_repositories

HEADER = 2**16  # the most an extended header (a long name or link target, pax records) may hold
EXTENDED = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
            tarfile.SOLARIS_XHDTYPE)
PAX = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)
SPARSE = re.compile(rb"(?:^|\n)\d+ GNU\.sparse\.")  # a pax record GNU tar's sparse formats (0.0, 0.1, 1.0) use


class Member(tarfile.TarInfo):
    """``tarfile``'s member, but refused before ``tarfile`` acts on it: a negative size (Python before 3.11.13
    then steps back and reads the same members for ever, holding each: 13 MB a second), an extended header over
    ``HEADER`` bytes (read whole into memory: a 256 MiB long name took 800 MB of the host's at the session's
    end), a sparse member: old GNU (its map blocks, any number) or pax (a ``GNU.sparse.*`` record: ``tarfile``
    parses its map with ``int()``, a bare ``ValueError``, and reads a 1.0 map from the data, a list item a line,
    without bound)."""

    def _proc_member(self, tar):
        if self.size < 0 or self.type in EXTENDED and self.size > HEADER or self.type == tarfile.GNUTYPE_SPARSE:
            raise tarfile.HeaderError(f"a negative, sparse or extended header of {self.size} bytes at {self.offset}")
        if self.type in PAX:  # its records (at most HEADER bytes) read ahead, before tarfile acts on them
            at = tar.fileobj.tell()
            records = tar.fileobj.read(self.size)
            tar.fileobj.seek(at)
            if SPARSE.search(records):
                raise tarfile.HeaderError(f"a sparse member (pax GNU.sparse records) at {self.offset}")
        return super()._proc_member(tar)


def copier(archive: Path, offset: int, size: int):
    def write(path: Path) -> None:
        with open(archive, "rb") as src, open(path, "xb") as dst:
            src.seek(offset)
            left = size
            while left:
                piece = src.read(min(left, 2**20))
                if not piece:
                    raise OSError("the archive ends inside a file")
                dst.write(piece)
                left -= len(piece)
    return write


def same(folder: Path, e: staging.Entry, archive: Path, offset: int) -> bool:
    """Whether the user's folder has ``e`` already, as it is (then it is not written)."""
    path = folder / e.path
    try:
        st = os.lstat(path)
        if e.kind == "d":
            return os.path.isdir(path) and not os.path.islink(path)
        if e.kind == "l":
            return os.path.islink(path) and os.readlink(path) == e.target
        if not (os.path.isfile(path) and not os.path.islink(path)) or st.st_size != e.size \
                or (st.st_mode & 0o777) != e.mode:
            return False
        with open(archive, "rb") as a, open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as b:
            a.seek(offset)
            return all(a.read(len(piece)) == piece for piece in iter(lambda: b.read(2**20), b""))
    except OSError:
        return False


def as_listed(folder: Path, path: str, entry) -> bool:
    """Whether the user's ``path`` is still what the start listing has (not there, if it has nothing)."""
    try:
        st = os.lstat(folder / path)
    except OSError:
        return entry is None
    return isinstance(entry, list) and len(entry) >= 3 and (st.st_size, st.st_mtime_ns) == (entry[1], entry[2])


def changed(e: staging.Entry, start: dict | None, folder: Path, archive: Path) -> bool:
    """Whether to write ``e``: not already in the user's folder as it is, and made or changed by the session.
    A file the start listing has with the archive's size and whole seconds of mtime counts as changed only
    while the user's own is still as the listing has it (then its bytes decide: a same-size edit within the
    second is applied); once the user changed or removed it, the session's unchanged copy is not written."""
    if same(folder, e, archive, e.offset):
        return False
    entry = (start or {}).get(e.path)
    if not (isinstance(entry, list) and len(entry) >= 3 and entry[0] == e.kind == "f"
            and (entry[1], int(entry[2]) // 10**9) == (e.size, e.mtime)):
        return True
    return as_listed(folder, e.path, entry)  # removed or changed by the user since: not written


def archive_plan(archive: Path, folder: Path, limits, start: dict | None, dry: bool = False,
                 own: bool = False) -> staging.Plan:
    """The archive's entries as a plan (``dry``: only checked, at the session's end). ``start``: the host's
    listing of the folder at the session's start (None: none kept); ``own``: ``folder`` is a scratch folder of
    the host's, with nothing of the user's to keep."""
    what, names, files, bounds, listed = archive.name, set(), {}, Bounds.of(limits), None
    plan = staging.Plan(deadline=bounds.deadline)
    try:
        with tarfile.open(archive, mode="r:", tarinfo=Member) as tar:
            for m in tar:
                if len(names) >= limits.inodes:
                    raise ResultError(f"{what}: more entries than the session's inodes ({limits.inodes}); refused")
                if bounds.left() <= 0:
                    raise ResultError(f"{what}: reading it ran past the intake's wall clock ({INTAKE_S} s); refused")
                if m.size < 0:  # a pax record's: tarfile has stepped back already
                    raise ResultError(f"{what}: a member of negative size; refused")
                if m.name == DELETED and m.isreg() and listed is None:  # what the session deleted: read below
                    listed = (m.offset_data, m.size)
                    continue
                rel = m.name.rstrip("/")
                staging.check_name(what, rel)
                names.add(rel)
                if m.islnk() and m.linkname in files:  # a hard link: a file of its own, with the first one's bytes
                    first = files[m.linkname]
                    e = staging.Entry(rel, "f", first.size, first.mode, offset=first.offset,
                                      mtime=int(m.mtime))
                elif m.isreg() and not m.issparse():
                    e = files[m.name] = staging.Entry(rel, "f", m.size, 0o755 if m.mode & 0o100 else 0o644,
                                                      offset=m.offset_data, mtime=int(m.mtime))
                elif m.issym():
                    e = staging.Entry(rel, "l", target=m.linkname)
                elif m.isdir():
                    e = staging.Entry(rel, "d")
                else:
                    raise staging.refuse(what, rel, "is not a file, a link or a folder")
                plan.entries.append(e)
            tar.fileobj.seek(tar.offset)  # tarfile ends quietly at a damaged header: the rest would count as deleted
            if tar.fileobj.read(1024) != bytes(1024):
                raise ResultError(f"{what}: damaged after {len(names)} entries (no end of archive there); refused")
    except ResultError:
        raise
    except Exception as exc:  # hostile data: tarfile's TarError and OSError, but a ValueError too (pax records)
        why = " ".join(str(exc).split())[:300]
        raise ResultError(f"{what}: not a readable archive ({why}); refused") from None
    # names, kinds and sizes of every entry; a link only where one is written (``staging.check`` on the changed
    # entries): the user's own links out of the folder (a data folder, a venv's bin/python) come back unchanged
    # in every archive and are not written
    staging.check_entries(what, plan, limits, links=False)
    if dry:
        return plan
    plan.entries = [e for e in plan.entries if plan.on_time(what) or changed(e, start, folder, archive)]
    for e in plan.entries:
        if e.kind == "f":
            e.write = copier(archive, e.offset, e.size)
    written = [e.path for e in plan.entries if e.kind != "d"]
    refuse_repositories(folder, written, list(names), top=not (folder / ".git").exists(), what=what,
                        deadline=plan.deadline)
    for path in () if own else written:  # the user's edit since the start is never overwritten
        plan.on_time(what)
        if start is None and os.path.lexists(folder / path):
            raise staging.refuse(what, path, "is in your folder and no listing of it at the session's start was "
                                 "kept to tell your edit from the session's")
        if start is not None and not as_listed(folder, path, start.get(path)):
            raise staging.refuse(what, path, "changed in your folder since the session began")
    # what the session deleted: named by the archive (made against the start listing), or, an archive of the
    # whole folder (kept before the archive held only the change), what the listing has and the archive has not
    gone = deleted(archive, listed, plan, what) if listed else set(manifest(folder) if own else start or ())
    plan.changed, plan.gone = len(written), sorted(gone - names if own or start is None else gone & set(start) - names)
    if own or start is not None:
        plan.delete = lambda at: deletions(at, None if own else start, set(plan.gone))
    else:
        plan.delete = lambda at: "; deletions not applied (no listing of the folder at the session's start)"
    return plan


def deleted(archive: Path, listed: tuple[int, int], plan: staging.Plan, what: str) -> set[str]:
    """The names of the archive's ``DELETED`` member (NUL-separated), each checked as a name."""
    offset, size = listed
    names, rest = set(), b""
    with open(archive, "rb") as f:
        f.seek(offset)
        while size > 0:
            plan.on_time(what)
            piece = f.read(min(size, 2**20))
            if not piece:
                raise ResultError(f"{what}: the archive ends inside its list of deleted entries; refused")
            size -= len(piece)
            *whole, rest = (rest + piece).split(b"\0")
            names.update(whole)
    names.add(rest)
    out = {os.fsdecode(n) for n in names if n}
    for name in out:
        staging.check_name(what, name)
    return out
