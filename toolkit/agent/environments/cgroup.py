"""The session's cgroups: a pids cgroup (the process bound that holds when the toolkit runs as root) and a
memory cgroup (the memory bound of the session as a whole: heap, ``MAP_SHARED`` memory, memfd, tmpfs pages
it writes, ``/dev/shm``), one per controller in cgroup v1, one folder with both in v2.

``RLIMIT_NPROC`` does not apply to a process whose real user outside every user namespace is root, so
under root the sandbox's ``ulimit -u`` bounds nothing. A pids cgroup does: the session's cgroup
(``toolkit-<pid>-<session>`` below the toolkit's own) has ``pids.max = limits.processes``, every process
of the session starts in it (a ``sh`` that writes its own PID to ``cgroup.procs``, then becomes the
command) and forks beyond the bound fail with EAGAIN. At the end every process left in it is killed and
it is removed; an empty one whose toolkit process is gone (killed) is removed by the next one made.

Where it is made: the cgroup v1 ``pids`` hierarchy, or cgroup v2 where the toolkit's cgroup offers the
``pids`` controller to its children (``cgroup.subtree_control``). Creating one needs write access there
(root, or a delegated cgroup); elsewhere ``make`` says why not in one line and ``RLIMIT_NPROC`` (which does
hold for a user that is not root) is the bound. Only v1 is exercised by the tests here (this machine has
no v2 pids controller).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from toolkit.agent.environments.procs import kill_all


def hierarchy(mountinfo: str, cgroups: str, controller: str = "pids") -> tuple[Path, str] | None:
    """The folder of this process's cgroup for ``controller`` and the hierarchy's version ("v1" or "v2"),
    from the text of ``/proc/self/mountinfo`` and ``/proc/self/cgroup``; None when there is no such
    controller."""
    own = {}
    for line in cgroups.splitlines():
        number, controllers, path = line.split(":", 2)
        own["v2" if number == "0" and not controllers else "v1" if controller in controllers.split(",") else ""] = path
    found = {}
    for line in mountinfo.splitlines():
        fields, _, fs = line.partition(" - ")
        fields, fs = fields.split(), fs.split()
        if len(fields) < 5 or len(fs) < 3:
            continue
        root, point = fields[3], fields[4]
        version = "v2" if fs[0] == "cgroup2" else "v1" if fs[0] == "cgroup" and controller in fs[2].split(",") else ""
        if version in own and version not in found:
            path = own[version]
            if root != "/" and (path == root or path.startswith(root + "/")):
                path = path[len(root):]
            found[version] = Path(point.replace("\\040", " ")) / path.lstrip("/")
    if "v1" in found:
        return found["v1"], "v1"
    if "v2" in found and controller in _read(found["v2"] / "cgroup.controllers").split():
        return found["v2"], "v2"
    return None


# what each controller's bound is written to: v1 file, v2 file(s)
BOUND_FILES = {"pids": {"v1": ["pids.max"], "v2": ["pids.max"]},
               "memory": {"v1": ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes?"],
                          "v2": ["memory.max", "memory.swap.max=0?"]}}


@dataclass
class Cgroup:
    path: Path
    version: str

    @classmethod
    def make(cls, name: str, bound: int, controller: str = "pids") -> Cgroup | str:
        """A new cgroup ``toolkit-<our pid>-<name>`` of ``controller`` bounded to ``bound`` (processes and
        threads for pids, bytes for memory; swap too where the kernel counts it), or why there is none.
        Empty ones left by a toolkit process that is gone (killed before it could remove its own) are
        removed first."""
        try:
            found = hierarchy(_read(Path("/proc/self/mountinfo")), _read(Path("/proc/self/cgroup")), controller)
        except OSError as exc:
            return f"no {controller} cgroup: {exc}"
        if found is None:
            return f"no {controller} cgroup controller on this machine"
        parent, version = found
        path = parent / f"toolkit-{os.getpid()}-{name}"
        try:
            if version == "v2" and controller not in _read(parent / "cgroup.subtree_control").split():
                (parent / "cgroup.subtree_control").write_text(f"+{controller}")
            _remove_stale(parent)
            path.mkdir(exist_ok=version == "v2")  # v2: one folder for both controllers
        except OSError as exc:
            return f"no {controller} cgroup can be made in {parent}: {exc.strerror or exc}"
        for file in BOUND_FILES[controller][version]:
            optional, (file, _, value) = file.endswith("?"), file.rstrip("?").partition("=")
            try:
                (path / file).write_text(value or str(bound))
            except OSError as exc:
                if optional:
                    continue
                path.rmdir()
                return f"no {controller} cgroup: {file} not writable ({exc.strerror or exc})"
        return cls(path, version)

    def enter(self, argv: list[str]) -> list[str]:
        """``argv`` started inside the cgroup: a ``sh`` moves itself in, then becomes ``argv``. If the move
        fails the command does not run (exit 126)."""
        return ["/bin/sh", "-c", 'echo $$ > "$0" || exit 126; exec "$@"', str(self.path / "cgroup.procs"), *argv]

    def oom_kills(self) -> int:
        """How many processes the memory bound has killed so far (0 where the kernel does not say)."""
        for file in ("memory.events", "memory.oom_control"):
            try:
                fields = dict(line.split() for line in _read(self.path / file).splitlines())
                return int(fields.get("oom_kill", 0))
            except (OSError, ValueError):
                continue
        return 0

    def pids(self) -> list[int]:
        try:
            return [int(x) for x in _read(self.path / "cgroup.procs").split()]
        except (OSError, ValueError):
            return []

    def current(self) -> int:
        """How many processes and threads are in the cgroup now."""
        try:
            return int(_read(self.path / "pids.current"))
        except (OSError, ValueError):
            return 0

    def refused(self) -> int:
        """How many forks the bound has refused so far (``pids.events``: ``max N``)."""
        try:
            return int(dict(line.split() for line in _read(self.path / "pids.events").splitlines()).get("max", 0))
        except (OSError, ValueError):
            return 0

    def kill(self, passes: int = 100) -> None:
        """Kill every process in the cgroup (again while a fork races the kill)."""
        if (self.path / "cgroup.kill").exists():  # v2: the kernel kills them all at once
            try:
                (self.path / "cgroup.kill").write_text("1")
            except OSError:
                pass
        for _ in range(passes):
            pids = self.pids()
            if not pids:
                return
            kill_all(pids)
            time.sleep(0.01)

    def remove(self) -> None:
        """Kill what is left and remove the cgroup (a killed process leaves it a moment later)."""
        if not self.path.exists():
            return
        self.kill()
        for _ in range(200):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.01)


def _remove_stale(parent: Path) -> None:
    for path in parent.glob("toolkit-*-*"):
        creator = path.name.split("-")[1]
        if creator.isdigit() and not os.path.exists(f"/proc/{creator}"):
            try:
                path.rmdir()  # fails while a process is still in it: then it is not stale
            except OSError:
                pass


def _read(path: Path) -> str:
    with open(path) as f:
        return f.read(2**20)
