"""Child processes whose life follows the toolkit's process, not the thread that started them.

Linux's parent-death signal (``PR_SET_PDEATHSIG``) fires when the *thread* that forked the child ends, not
the process: a server or a sandbox's namespace holder started from a short-lived thread (``run_sync``
inside Jupyter runs a game in one; a front end may make a session in a worker) would be killed when that
thread returns. So ``popen`` forks every such child from one thread that lives as long as the process (or
from the main thread, which does).
"""

from __future__ import annotations

import ctypes
import queue
import subprocess
import threading
from typing import Any

try:  # resolved here, not between fork and exec (where loading a library could deadlock)
    _prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
except (OSError, AttributeError):
    _prctl = None

PR_SET_PDEATHSIG = 1
_requests: "queue.Queue[tuple[list, dict, queue.Queue]]" = queue.Queue()
_spawner: threading.Thread | None = None
_lock = threading.Lock()


def _die_with(signal: int):
    def set_signal() -> None:  # in the child, between fork and exec
        if _prctl is not None:
            _prctl(PR_SET_PDEATHSIG, signal)
    return set_signal


def _serve() -> None:
    while True:
        cmd, kwargs, reply = _requests.get()
        try:
            reply.put(subprocess.Popen(cmd, **kwargs))
        except Exception as exc:  # handed back to the caller
            reply.put(exc)


def popen(cmd: list[str], death_signal: int | None = None, **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen(cmd, **kwargs)`` forked from a thread that lives as long as the process; with
    ``death_signal`` the child gets that signal when this process ends (even by kill -9). A child that sets
    its own parent-death signal after it starts (e.g. ``holder.py``) needs only the thread."""
    if death_signal is not None:
        kwargs["preexec_fn"] = _die_with(death_signal)
    if threading.current_thread() is threading.main_thread():
        return subprocess.Popen(cmd, **kwargs)
    global _spawner
    with _lock:
        if _spawner is None or not _spawner.is_alive():
            _spawner = threading.Thread(target=_serve, name="process-lifetime-spawner", daemon=True)
            _spawner.start()
    reply: queue.Queue = queue.Queue()
    _requests.put((cmd, kwargs, reply))
    result = reply.get()
    if isinstance(result, Exception):
        raise result
    return result
