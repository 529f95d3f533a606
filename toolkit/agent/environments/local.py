"""``local``: unconfined, the host as the current user."""

from __future__ import annotations

import functools
import subprocess
import sys

from toolkit.agent.environments import fileop
from toolkit.agent.environments.config import HERE, RUN_OUTPUT_BYTES
from toolkit.agent.environments.protocol import Environment


class LocalEnvironment(Environment):
    """Unconfined: the host, as the current user. The session works in a private copy (the user's folder
    changes only when its result is applied), the environment is an allow-list and the session's processes
    are kept in one tree (child subreaper) that ends with the session. A command can still read and write
    anything the user can. Where it can be arranged the toolkit's own process is out of its reach: the
    toolkit makes itself non-dumpable (``PR_SET_DUMPABLE`` 0), so a command of the same user that is not
    root cannot read its ``/proc/<pid>/environ`` or memory (root can; so can anything the user runs that
    reads the user's files, e.g. a ``.env``)."""

    name = "local"
    confined = False

    def __init__(self, *args, **kwargs):
        _not_dumpable()
        super().__init__(*args, **kwargs)

    def wrap(self, argv: list[str], persistent: bool = False, fds: list[int] | None = None) -> list[str]:
        return self.enter_cgroup([sys.executable, "-I", "-S", str(HERE / "subreaper.py"),  # -S: a faster start
                                  *self.bounded(argv, persistent, processes=False)])

    def helper(self, name: str, *args: str, input: bytes | None = None, timeout: float = 60,
               max_output: int = RUN_OUTPUT_BYTES, binary: bool = False) -> subprocess.CompletedProcess:
        """The file tools' operations in this process: the host *is* the environment here (the same code
        as the script, without a process per call); the rest as everywhere."""
        if name != "fileop.py":
            return super().helper(name, *args, input=input, timeout=timeout, max_output=max_output, binary=binary)
        code, out, err = fileop.call([args[0], str(self.root), *args[1:]], input or b"")
        if len(out) > max_output:
            out, err, code = b"", f"the answer is larger than {max_output} bytes", 3
        return subprocess.CompletedProcess(args, code, out if binary else out.decode("utf-8", errors="replace"), err)


@functools.lru_cache(maxsize=1)
def _not_dumpable() -> None:
    """This process's memory and ``/proc/<pid>/environ`` out of reach of its own user's other processes
    (not of root's): no core dumps and no debugger attaching to the toolkit from then on."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
