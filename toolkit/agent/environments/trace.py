"""Eval mode's git trace: git's trace2 event stream read from a pipe the host owns."""

from __future__ import annotations

import json
import os
import select
import threading
from collections import deque


class TraceReader:
    """The git trace2 event stream as a pipe: the host keeps the write end (handed to each new shell as
    ``TRACE_FD``) and a thread drains the read end, so git never blocks on it and nothing in a folder the
    sandbox can write is read. Keeps the names of ``cmd_name`` events (at most ``keep``); a line longer
    than ``max_line`` bytes is dropped."""

    def __init__(self, keep: int = 10_000, max_line: int = 2**20):
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        self.names: deque[str] = deque(maxlen=keep)
        self.max_line = max_line
        self.buf = b""
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.thread = threading.Thread(target=self._run, name="git-trace", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.closed.is_set():
            try:
                ready, _, _ = select.select([self.read_fd], [], [], 0.2)
            except (OSError, ValueError):
                return
            if ready:
                with self.lock:
                    self._drain()

    def _drain(self) -> None:
        if self.closed.is_set():
            return
        while True:
            try:
                chunk = os.read(self.read_fd, 65536)
            except BlockingIOError:
                return
            if not chunk:
                return
            self.buf += chunk
            *lines, self.buf = self.buf.split(b"\n")
            if len(self.buf) > self.max_line:
                self.buf = b""
            for line in lines:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict) and event.get("event") == "cmd_name":
                    self.names.append(str(event.get("name", "")))

    def take(self) -> list[str]:
        with self.lock:
            self._drain()
            names = list(self.names)
            self.names.clear()
        return names

    def close(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        try:
            os.close(self.write_fd)  # the last writer gone: the reader's select wakes at once
        except OSError:
            pass
        self.thread.join(timeout=1)
        with self.lock:
            for fd in (self.read_fd,):
                try:
                    os.close(fd)
                except OSError:
                    pass
