"""File operations on the host that the sandbox cannot redirect: every path is resolved by the kernel
*beneath* the workspace's folder descriptor (``openat2`` with ``RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS``),
so a symlink or ``..`` that leads out fails, and a folder swapped for a symlink between a check and a use
(``renameat2(RENAME_EXCHANGE)`` in a loop) cannot send a read or a write elsewhere: there is no check
separate from the use. Only regular files are read or replaced (a FIFO, socket or device is refused
without opening it for reading: ``O_PATH`` + ``fstat`` first, then ``O_NONBLOCK``), and a read is size-checked
before it starts and never returns more than its cap. Writes are atomic: a fresh ``O_EXCL`` temporary file
in the parent's descriptor, then ``renameat`` within that same descriptor.

Where ``openat2`` is missing (Linux < 5.6), the same walk is done one component at a time with ``O_NOFOLLOW``
(every symlink refused, inner ones too).
"""

from __future__ import annotations

import ctypes
import errno
import os
import secrets
import stat
from pathlib import Path, PurePosixPath

SYS_OPENAT2 = 437  # the same number on every architecture (the unified syscall table)
RESOLVE_NO_XDEV, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS, RESOLVE_BENEATH = 0x01, 0x02, 0x04, 0x08
_libc = ctypes.CDLL(None, use_errno=True)


class OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


class Refused(OSError):
    """A path the host will not follow (out of the tree, through a link, or not a regular file)."""


def _openat2_works() -> bool:
    how = OpenHow(os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, 0, RESOLVE_BENEATH)
    fd = _libc.syscall(SYS_OPENAT2, ctypes.c_int(-100), b".", ctypes.byref(how), ctypes.c_size_t(24))
    if fd >= 0:
        os.close(fd)
        return True
    return False


HAVE_OPENAT2 = _openat2_works()


def openat2(dir_fd: int, path: str, flags: int, mode: int = 0, resolve: int = 0) -> int:
    flags |= os.O_CLOEXEC | (0 if flags & os.O_PATH else os.O_NOCTTY)  # openat2 takes nothing else with O_PATH
    creating = flags & os.O_CREAT or flags & os.O_TMPFILE == os.O_TMPFILE
    how = OpenHow(flags, mode if creating else 0, resolve)
    while True:
        fd = _libc.syscall(SYS_OPENAT2, ctypes.c_int(dir_fd), os.fsencode(path), ctypes.byref(how),
                           ctypes.c_size_t(ctypes.sizeof(how)))
        if fd >= 0:
            return fd
        err = ctypes.get_errno()
        if err == errno.EAGAIN:  # a rename raced the lookup: the kernel asks for a retry
            continue
        if err == errno.EXDEV:
            raise Refused(errno.EXDEV, "leads out of the workspace (a symlink or ..)", path)
        if err == errno.ELOOP:
            raise Refused(errno.ELOOP, "is or passes through a symlink", path)
        raise OSError(err, os.strerror(err), path)


def _parts(rel: str | os.PathLike) -> list[str]:
    parts = [p for p in PurePosixPath(rel).parts if p not in ("", ".")]
    if PurePosixPath(rel).is_absolute() or ".." in parts:
        raise Refused(errno.EXDEV, "leads out of the workspace (a symlink or ..)", str(rel))
    return parts


class Tree:
    """One host folder whose contents the sandbox can change; every operation is relative to it."""

    def __init__(self, root: str | os.PathLike, max_read_bytes: int = 10 * 2**20):
        self.root = Path(root)
        self.max_read_bytes = max_read_bytes

    # ------------------------------------------------------------------ opening
    def open(self, rel: str | os.PathLike, flags: int, mode: int = 0o644, follow: bool = True) -> int:
        """A descriptor for ``rel`` resolved beneath the root (inner symlinks followed when ``follow`` and
        openat2 is there; never a link out)."""
        parts = _parts(rel)
        root = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            if HAVE_OPENAT2:
                resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | (0 if follow else RESOLVE_NO_SYMLINKS)
                return openat2(root, "/".join(parts) or ".", flags, mode, resolve)
            return self._walk(root, parts, flags, mode)
        finally:
            os.close(root)

    @staticmethod
    def _walk(root: int, parts: list[str], flags: int, mode: int) -> int:
        fd = os.dup(root)
        try:
            for name in parts[:-1]:
                nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd = nxt
            if not parts:
                return os.dup(fd)
            return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY, mode, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Refused(errno.ELOOP, "is or passes through a symlink", "/".join(parts)) from None
            raise
        finally:
            os.close(fd)

    def lstat(self, rel: str | os.PathLike) -> os.stat_result | None:
        """What ``rel`` is (inner links followed), None when it does not exist; nothing is opened for reading."""
        try:
            fd = self.open(rel, os.O_PATH)
        except FileNotFoundError:
            return None
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)

    def is_file(self, rel: str | os.PathLike) -> bool:
        try:
            st = self.lstat(rel)
        except OSError:
            return False
        return st is not None and stat.S_ISREG(st.st_mode)

    def is_dir(self, rel: str | os.PathLike) -> bool:
        try:
            st = self.lstat(rel)
        except OSError:
            return False
        return st is not None and stat.S_ISDIR(st.st_mode)

    # ------------------------------------------------------------------ reading
    def read_bytes(self, rel: str | os.PathLike, cap: int | None = None) -> bytes:
        """A regular file's bytes, at most ``cap`` (default: the tree's ``max_read_bytes``); a larger file
        is refused before anything is read, a FIFO or device before it is opened for reading."""
        cap = self.max_read_bytes if cap is None else cap
        fd = self.open(rel, os.O_RDONLY | os.O_NONBLOCK)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise Refused(errno.EINVAL, "is not a regular file", str(rel))
            if st.st_size > cap:
                raise Refused(errno.EFBIG, f"is too large ({st.st_size} bytes; the limit is {cap})", str(rel))
            chunks, left = [], cap + 1
            while left > 0:
                chunk = os.read(fd, min(left, 2**20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            data = b"".join(chunks)
            if len(data) > cap:  # it grew while being read
                raise Refused(errno.EFBIG, f"is too large (more than {cap} bytes)", str(rel))
            return data
        finally:
            os.close(fd)

    def read_text(self, rel: str | os.PathLike, errors: str = "strict", cap: int | None = None) -> str:
        return self.read_bytes(rel, cap).decode("utf-8", errors=errors)

    # ------------------------------------------------------------------ writing
    def real_rel(self, rel: str | os.PathLike) -> str:
        """``rel`` with inner symlinks resolved (beneath the root), so a write through an inner link
        replaces its target and keeps the link; ``rel`` itself when it does not exist yet."""
        parts = _parts(rel)
        try:
            fd = self.open(rel, os.O_PATH)
        except FileNotFoundError:  # not there yet: its deepest existing folder resolved, the rest as given
            if len(parts) <= 1:
                return "/".join(parts)
            parent = self.real_rel("/".join(parts[:-1]))
            return parts[-1] if parent == "." else f"{parent}/{parts[-1]}"
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)
        root = os.path.realpath(self.root)
        if real != root and not real.startswith(root + "/"):
            raise Refused(errno.EXDEV, "leads out of the workspace", str(rel))
        return os.path.relpath(real, root)

    def dir_fd(self, rel: str | os.PathLike, create: bool = False) -> int:
        """A descriptor for folder ``rel`` (created, one component at a time beneath the root, when asked)."""
        parts = _parts(rel)
        fd = self.open(".", os.O_RDONLY | os.O_DIRECTORY)
        try:
            for name in parts:
                if create:
                    try:
                        os.mkdir(name, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                nxt = self._sub(fd, name)
                os.close(fd)
                fd = nxt
            return fd
        except BaseException:
            os.close(fd)
            raise

    @staticmethod
    def _sub(fd: int, name: str) -> int:
        if HAVE_OPENAT2:
            return openat2(fd, name, os.O_RDONLY | os.O_DIRECTORY, 0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
        try:
            return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Refused(errno.ELOOP, "is or passes through a symlink", name) from None
            raise

    def real_dir(self, rel: str | os.PathLike) -> int:
        """A descriptor for folder ``rel`` that is a real folder: a symlink or file the agent put in its
        place is removed first (the toolkit's own folders, such as ``.agent``)."""
        parts = _parts(rel)
        fd = self.open(".", os.O_RDONLY | os.O_DIRECTORY)
        try:
            for name in parts:
                try:
                    nxt = self._sub(fd, name)
                except FileNotFoundError:
                    os.mkdir(name, 0o755, dir_fd=fd)
                    nxt = self._sub(fd, name)
                except (Refused, NotADirectoryError):
                    os.unlink(name, dir_fd=fd)
                    os.mkdir(name, 0o755, dir_fd=fd)
                    nxt = self._sub(fd, name)
                os.close(fd)
                fd = nxt
            return fd
        except BaseException:
            os.close(fd)
            raise

    def write_bytes(self, rel: str | os.PathLike, data: bytes, mode: int | None = None, parents: bool = False,
                    exclusive: bool = False, agent_dir: bool = False) -> None:
        """Replace (or create) a regular file atomically: a fresh temporary file in the parent's descriptor,
        renamed over the name within that descriptor. An existing non-regular file at the name is refused
        (``agent_dir``: the name is replaced whatever it is, and the parents are made real folders)."""
        real = rel if agent_dir else self.real_rel(rel)
        parts = _parts(real)
        if not parts:
            raise Refused(errno.EISDIR, "is the workspace folder", str(rel))
        parent = "/".join(parts[:-1])
        fd = self.real_dir(parent) if agent_dir else self.dir_fd(parent, create=parents)
        name = parts[-1]
        try:
            try:
                old = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                old = None
            if old is not None and exclusive:
                raise FileExistsError(errno.EEXIST, "exists", str(rel))
            if old is not None and not agent_dir and not stat.S_ISREG(old.st_mode):
                raise Refused(errno.EINVAL, "is not a regular file", str(rel))
            tmp = f".{name[:100]}.{secrets.token_hex(6)}.tmp"
            out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd)
            try:
                with os.fdopen(out, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fchmod(handle.fileno(), mode if mode is not None else
                              (stat.S_IMODE(old.st_mode) if old is not None and stat.S_ISREG(old.st_mode) else 0o644))
                    os.fsync(handle.fileno())
                os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                try:
                    os.unlink(tmp, dir_fd=fd)
                except OSError:
                    pass
                raise
        finally:
            os.close(fd)

    def remove_tree(self, rel: str | os.PathLike) -> None:
        """Remove ``rel`` (a folder and everything below, or a link or file) without following any link."""
        parts = _parts(rel)
        try:
            fd = self.dir_fd("/".join(parts[:-1]))
        except (FileNotFoundError, NotADirectoryError, Refused):  # no such folder of ours: nothing to remove
            return
        try:
            try:
                st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return
            if stat.S_ISDIR(st.st_mode):
                import shutil

                shutil.rmtree(parts[-1], dir_fd=fd)  # descriptor-based: a link inside is removed, not followed
            else:
                os.unlink(parts[-1], dir_fd=fd)
        finally:
            os.close(fd)
