"""The file tools' hands inside the environment: ``python3 -I -S fileop.py OP ROOT ARGS…``, run by the
session's environment (as mini-swe-agent runs every action through ``env.execute``), so the host never
opens, walks or writes a file in the sandbox's space: it sends a request and gets data back on a pipe.
Standard library only: it runs as a script.

Every path is relative to ROOT and refused when it leads out (``..``, absolute, a link resolving outside);
only regular files are read or written (a FIFO, socket or device is refused, never opened for reading),
read with ``O_NONBLOCK`` so a file under a write lease answers at once rather than stalling, and at most
``MAX`` bytes. Writes are atomic (a fresh temporary file, then rename) and keep the old mode; the old text
goes to ``.agent/backups/`` first.

OPs (exit 0 with the answer on stdout, or exit 3 with one line on stderr):
  kind REL                  -> "file" | "dir" | "other" | "missing"
  read REL MAX              -> the bytes
  write REL BACKUP(0|1)     <- the bytes on stdin
  walk REL                  -> JSON list of [path, kind], sorted, links not followed, .git and .agent skipped
  count REL TERM MAX        -> JSON {"hits": [[path, n]…], "large": [path…], "skipped": [[path, why]…]}
"""

import errno
import json
import os
import stat
import sys
import time


class Refused(Exception):
    pass


def resolve(root: str, rel: str) -> str:
    if not rel or os.path.isabs(rel):
        raise Refused(f"{rel}: absolute paths are refused; use a path relative to the workspace")
    path = os.path.realpath(os.path.join(root, rel))
    if path != root and not path.startswith(root + os.sep):
        raise Refused(f"{rel}: outside the workspace (.. or a symlink leading out) is refused")
    return path


def kind(path: str) -> str:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "missing"
    except NotADirectoryError:
        return "missing"
    return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"


def read(path: str, rel: str, limit: int) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise Refused(f"{rel}: no such file") from None
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise Refused(f"{rel}: busy (another process holds a lease on it); try again later") from None
        raise Refused(f"{rel}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise Refused(f"{rel} is a folder")
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{rel} is not a regular file (a FIFO, socket or device is not opened)")
        if st.st_size > limit:
            raise Refused(f"{rel} is larger than {limit} bytes; look at parts of it with the terminal (head, sed -n)")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise Refused(f"{rel} is larger than {limit} bytes; look at parts of it with the terminal (head, sed -n)")
    return data


def write(root: str, path: str, rel: str, data: bytes, backup: bool) -> None:
    k = kind(path)
    if k not in ("file", "missing"):
        raise Refused(f"{rel} is not a regular file")
    mode = 0o644
    if k == "file":
        mode = stat.S_IMODE(os.stat(path).st_mode) & 0o777
        if backup:
            old = read(path, rel, 1 << 30)
            folder = own_folder(root, ".agent", "backups")
            name = os.path.join(folder, f"{rel.replace('/', '__')}.{time.time_ns()}")
            with open(name, "xb") as f:
                f.write(old)
    parent = os.path.dirname(path)
    try:
        os.makedirs(parent, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise Refused(f"{rel}: cannot be written (a part of its path is a file)") from None
    tmp = os.path.join(parent, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def own_folder(root: str, *names: str) -> str:
    """``root/names…`` as real folders: a link or file in the way is removed first, never followed."""
    path = root
    for name in names:
        path = os.path.join(path, name)
        if os.path.lexists(path) and (os.path.islink(path) or not os.path.isdir(path)):
            os.unlink(path)
        os.makedirs(path, exist_ok=True)
    return path


def walk(root: str, folder: str) -> list:
    found = []
    for top, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in (".git", ".agent"))
        for name in dirs + files:
            path = os.path.join(top, name)
            rel = os.path.relpath(path, root)
            found.append([rel, "link" if os.path.islink(path) else kind(path)])
    return sorted(found)


def answer(op: str, root: str, args: list, data: bytes = b"") -> bytes:
    """One operation's answer (raises ``Refused`` with the line to show)."""
    root = os.path.realpath(root)
    if op == "kind":
        try:
            path = resolve(root, args[0])
        except Refused:
            if os.path.isabs(args[0]):
                raise
            return b"outside\n"
        return kind(path).encode() + b"\n"
    if op == "read":
        return read(resolve(root, args[0]), args[0], int(args[1]))
    if op == "write":
        write(root, resolve(root, args[0]), args[0], data, args[1] == "1")
        return b""
    if op in ("walk", "count"):
        folder = resolve(root, args[0])
        if kind(folder) != "dir":
            raise Refused(f"{args[0]} is not a folder")
        if op == "walk":
            return json.dumps(walk(root, folder)).encode()
        hits, large, skipped, term, limit = [], [], [], args[1].encode(), int(args[2])
        for rel, k in walk(root, folder):
            if k != "file":
                continue
            try:
                text = read(os.path.join(root, rel), rel, limit)
                text.decode("utf-8")
            except Refused as exc:
                if "larger than" in str(exc):
                    large.append(rel)
                else:  # busy (a lease), unreadable: said, not silently passed over
                    skipped.append([rel, str(exc)[len(rel) + 2:].split(";")[0]])
                continue
            except UnicodeDecodeError:
                continue
            if text.count(term):
                hits.append([rel, text.count(term)])
        return json.dumps({"hits": hits, "large": large, "skipped": skipped}).encode()
    raise Refused(f"unknown operation {op}")


def call(argv: list, data: bytes = b"") -> tuple:
    """``(exit code, stdout bytes, stderr text)`` of one operation, as the script would give them."""
    try:
        return 0, answer(argv[0], argv[1], argv[2:], data), ""
    except Refused as exc:
        return 3, b"", str(exc)
    except OSError as exc:
        return 3, b"", f"{exc.filename or ''}: {exc.strerror}"


def main() -> int:
    data = sys.stdin.buffer.read() if sys.argv[1] == "write" else b""
    code, out, err = call(sys.argv[1:], data)
    sys.stdout.buffer.write(out)
    if err:
        print(err, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
