"""Process helpers of the host's: a process tree from ``/proc``, kills, pipes read with a deadline, a child's
end, the scrubbed environment of the toolkit's own helpers, a warning printed once."""

from __future__ import annotations

import functools
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

from toolkit.agent.environments.subreaper import descendants  # noqa: F401  (the script's own walk of /proc)
from toolkit.core.printable import show


def parent_and_session(pid: int) -> tuple[int, int]:
    """A process's parent and session ids (0, 0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[1]), int(fields[3])
    except (OSError, IndexError, ValueError):
        return 0, 0


def state_of(pid: int) -> str:
    """A process's state letter (R, S, D, T, Z, …); "X" when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "X"


def kill_all(pids: list[int], sig: int = signal.SIGKILL) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def scrubbed() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def readline(stream, timeout: float, size: int = 4096) -> bytes:
    """A line (or ``size`` bytes) from a child's pipe within ``timeout``; b"" when none came."""
    ready, _, _ = select.select([stream], [], [], timeout)
    if not ready:
        return b""
    return stream.readline(size) if size > 1 else stream.read(size)


def end_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            proc.stdin and proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@functools.lru_cache(maxsize=None)
def warn_once(message: str) -> None:
    show(message, file=sys.stderr)  # it may quote a program's output
