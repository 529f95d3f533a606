"""Process bookkeeping for the ``local`` environment: ``python subreaper.py CMD ARGS…`` runs CMD as the
child of a Linux *child subreaper* (prctl PR_SET_CHILD_SUBREAPER), so every process CMD starts, even one
that daemonises (``setsid -f``, double fork), is re-parented to this process instead of PID 1 and stays in
its tree. When CMD exits, when this process gets SIGTERM/SIGHUP, or when its own parent dies
(PR_SET_PDEATHSIG), every process in the tree is killed. Standard library only: it runs as a script
(``python -I``), not as part of the toolkit.
"""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (from /proc), parents before children."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_tree_and_exit(code: int) -> None:
    for _ in range(5):  # a fork racing the kill shows up on the next pass
        pids = descendants(os.getpid())
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
    os._exit(code)


def main() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("subreaper: prctl(PR_SET_CHILD_SUBREAPER) failed")
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    parent = os.getppid()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, lambda *_: kill_tree_and_exit(143))
    if parent == 1:  # the parent died before PDEATHSIG was armed
        sys.exit(1)
    pid = os.fork()
    if pid == 0:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        try:
            os.execvp(sys.argv[1], sys.argv[1:])
        finally:
            os._exit(127)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # only the child holds the caller's pipes, so they close when it is gone
        os.dup2(devnull, fd)
    while True:
        try:
            done, status = os.wait()  # reaps the child and every orphan re-parented here
        except ChildProcessError:
            os._exit(0)
        if done == pid:
            kill_tree_and_exit(os.waitstatus_to_exitcode(status) & 0xFF)


if __name__ == "__main__":
    main()
