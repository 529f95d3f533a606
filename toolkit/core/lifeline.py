"""A process that works for another (a sweep's cell kernel, started by the cell's worker) sends no paid request
once that process is gone: a ``kill -9`` of a sweep ends its workers at once (their parent-death signal), but a
cell's kernel, a grandchild in a session of its own, learns of it only from ipykernel's parent poller, a second or
more later, and until then its games go on starting calls that nobody records and a resumed study pays again.

The process that starts such a child puts its own pid in the child's environment (``ENV``); the child takes it out
of its environment at once (``adopt``, run when this module is imported: the kernel imports it first thing), so
that its own children do not inherit it, and before each request (``check``, from the model wrapper) it compares
it with its parent's pid: another parent (its parent died and it was re-parented) ends the process at once, with a
line on stderr, as the kill would have ended it. A parent-death signal set in the child cannot do this: it fires
when the *thread* that started the child ends, and Jupyter starts kernels from threads (``toolkit.core.spawn``).
"""

from __future__ import annotations

import os

ENV = "TOOLKIT_PARENT_PID"
_parent: int | None = None


def adopt() -> None:
    """Take the parent's pid out of the environment (once: a later call finds none and keeps the first)."""
    global _parent
    raw = os.environ.pop(ENV, None)
    if raw and raw.isdigit():
        _parent = int(raw)


def check() -> None:
    """End this process (exit code 70) if the process it works for is gone; nothing else."""
    if _parent is not None and os.getppid() != _parent:
        # to the process's own stderr (a kernel's sys.stderr goes to the notebook, which nobody saves now)
        os.write(2, f"toolkit: the process this one worked for (pid {_parent}) is gone: stopping before another "
                    "request is sent\n".encode())
        os._exit(70)


adopt()
