"""Disk use of the workspace: how much a session has added, measured from the host without following
anything the sandbox made, and a watcher that ends the session when it passes ``limits.disk_mb``.

``RLIMIT_FSIZE`` bounds one file, not a thousand of them; bubblewrap's own scratch folders are tmpfs with
a size (``limits.tmp_mb``). The workspace lives on the host's disk, so the host measures it: blocks
allocated (``st_blocks``: a sparse file counts what it holds), each inode once, walked descriptor by
descriptor (``openat`` of one name with ``O_NOFOLLOW | O_DIRECTORY``, ``fstatat`` without following), so
a link or a folder swapped mid-walk cannot send the walk elsewhere. A tree nested deeper than
``MAX_DEPTH`` cannot be measured, which is itself over the bound.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
from pathlib import Path
from typing import Callable

MAX_DEPTH = 256
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class Unmeasurable(Exception):
    pass


def used_bytes(root: str | os.PathLike) -> int:
    """Bytes allocated on disk below ``root`` (``root`` itself is trusted: the host chose it)."""
    total, seen = 0, set()
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    stack = [(top, os.scandir(top))]
    try:
        while stack:
            fd, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                entries.close()
                os.close(fd)
                stack.pop()
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512
            if stat.S_ISDIR(st.st_mode):
                if len(stack) >= MAX_DEPTH:
                    raise Unmeasurable(f"folders nested deeper than {MAX_DEPTH}")
                try:
                    child = os.open(entry.name, DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):  # gone, or swapped for a link
                        continue
                    raise
                stack.append((child, os.scandir(child)))
    finally:
        for fd, entries in stack:
            entries.close()
            os.close(fd)
    return total


class DiskBound:
    """How much ``roots`` have grown since the first measurement; past ``limit_bytes`` (0: no bound)
    ``check`` says why in one line and keeps saying it. ``watch`` checks in a thread (the first pass is
    the baseline; then every second, or 20 times as long as a walk takes) and calls ``on_exceeded(reason)``
    once. ``check(cheap=True)`` (after each command) measures only when a walk takes under ``CHEAP_S``."""

    CHEAP_S = 0.05

    def __init__(self, roots: list[Path], limit_bytes: int):
        self.roots = roots
        self.limit = limit_bytes
        self.baseline: int | None = None
        self.last_walk_s = 0.0
        self.exceeded: str | None = None
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.thread: threading.Thread | None = None

    def used(self) -> int:
        started = time.perf_counter()
        try:
            return sum(used_bytes(r) for r in self.roots if os.path.isdir(r))
        finally:
            self.last_walk_s = time.perf_counter() - started

    def check(self, cheap: bool = False) -> str | None:
        if not self.limit or self.exceeded:
            return self.exceeded
        if cheap and (self.baseline is None or self.last_walk_s > self.CHEAP_S):
            return None
        if not self.lock.acquire(blocking=not cheap):
            return self.exceeded  # the watcher is measuring now
        try:
            try:
                used = self.used()
            except (Unmeasurable, OSError) as exc:
                self.exceeded = f"the workspace could not be measured ({exc}), over limits.disk_mb"
                return self.exceeded
            if self.baseline is None:
                self.baseline = used
            elif used - self.baseline > self.limit:
                self.exceeded = (f"the workspace grew by {(used - self.baseline) / 2**20:.0f} MB, over "
                                 f"limits.disk_mb = {self.limit // 2**20}")
            return self.exceeded
        finally:
            self.lock.release()

    def watch(self, on_exceeded: Callable[[str], None]) -> None:
        if not self.limit or self.thread is not None:
            return

        def run() -> None:
            interval = 0.0
            while not self.closed.wait(interval):
                reason = self.check()
                if reason:
                    on_exceeded(reason)
                    return
                interval = max(1.0, 20 * self.last_walk_s)

        self.thread = threading.Thread(target=run, name="disk-bound", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.closed.set()
