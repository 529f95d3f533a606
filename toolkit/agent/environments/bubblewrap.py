"""``bubblewrap``: the sandbox (Debian's bwrap) in the session's own namespaces."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import weakref
from pathlib import Path

from toolkit.agent.environments import subids, syscall_filter
from toolkit.agent.environments.config import (HERE, HOME_GITCONFIG, HOST_UIDS, KERNEL_INTERFACES, MASKED_DIRS,
                                               MASKED_FILES, RUN_DIR_BYTES, SYSTEM_DIRS, EnvironmentUnavailable)
from toolkit.agent.environments.procs import end_process, close_all, readline, scrubbed, warn_once
from toolkit.agent.environments.protocol import Environment
from toolkit.agent.environments.selfcheck import SANDBOX_GID, SANDBOX_UID, bwrap_problem
from toolkit.core import spawn


def unused_uid() -> int:
    """A uid (and gid) no account or process on this machine has, for one session's sandbox user."""
    import pwd
    import random

    rng = random.SystemRandom()
    while True:
        uid = rng.randrange(*HOST_UIDS)
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid


class BubblewrapEnvironment(Environment):
    """The sandbox: every command in bubblewrap, inside the session's own mount and network namespaces
    (``holder.py``) where the private copy is a tmpfs of ``disk_mb`` and ``inodes``, ``nosuid,nodev``.
    The sandbox's user is not the caller (``outer_uid``, ``outer_gid``: its ids on the host): as root an
    unused uid, as another user one of its subordinate ids (``subids.py``), so nothing it makes is the
    caller's and a file only the caller (or root) may read stays unreadable. A caller that is not root and
    has no subordinate ids gets one warning line, and the sandbox's user is then the caller."""

    name = "bubblewrap"
    confined = True

    def __init__(self, *args, **kwargs):
        problem = bwrap_problem()
        if problem:
            raise EnvironmentUnavailable(f"bubblewrap: {problem}; use --env local (unconfined)")
        self.exe = shutil.which("bwrap")
        self.ids: subids.SubIds | None = None  # the caller's subordinate ids for this session (not root)
        if os.geteuid() == 0:
            self.outer_uid = self.outer_gid = unused_uid()
        else:
            self.ids, why = subids.find()
            if self.ids is None:
                self.own_user_warning(why)
            self.outer_uid, self.outer_gid = (self.ids.uid, self.ids.gid) if self.ids else (os.geteuid(), os.getegid())
        self.holder: subprocess.Popen | None = None
        self.slirp: subprocess.Popen | None = None
        self.slirp_exit = None  # the write end of slirp4netns's --exit-fd pipe (a file)
        super().__init__(*args, **kwargs)

    def reach(self) -> list[str]:
        """Host folders the sandbox sees read-only, besides the system's: the toolkit's Python, the role's
        ``read_only`` and ``writable`` folders and the allowed git remotes (pushed to by the host)."""
        found = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                 str(Path(sys.executable).resolve().parents[1]), *self.config.read_only,
                 *map(str, self.remotes), *map(str, self.writable)}
        return sorted(p for p in {os.path.realpath(p) for p in found}
                      if os.path.isdir(p) and not any(p == d or p.startswith(d + "/") for d in SYSTEM_DIRS))

    def prepare(self) -> None:
        copy, mnt = self.session_dir / "ws", self.session_dir / "mnt"
        copy.mkdir()
        mnt.mkdir()
        os.chmod(mnt, 0o711)
        self.reached = self.reach()
        for i in range(len(self.reached)):
            (mnt / str(i)).mkdir(mode=0o755)
        limits = self.config.limits
        inner = (subids.INNER, subids.INNER) if self.ids else (self.outer_uid, self.outer_gid)
        spec = {"ws": str(copy), "mnt": str(mnt), "size": limits.disk_mb * 2**20, "inodes": limits.inodes,
                "uid": inner[0], "gid": inner[1], "map": self.ids is not None, "reach": self.reached,
                "source": str(self.source)}
        # forked from a thread that lives as long as the process: the holder's parent-death signal (it ends
        # when the toolkit's process does, even by kill -9) must not fire when a short-lived thread ends
        self.holder = spawn.popen([sys.executable, "-I", "-S", str(HERE / "holder.py"), json.dumps(spec)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  start_new_session=True, env=scrubbed())
        weakref.finalize(self, end_process, self.holder)
        line = readline(self.holder.stdout, 300)
        if line == b"map\n":  # its user namespace, made and waiting for the subordinate ids
            problem = self.ids.map(self.holder.pid)
            if problem:
                self.ids, self.outer_uid, self.outer_gid = None, os.geteuid(), os.getegid()
                self.own_user_warning(problem)
            self.holder.stdin.write(b"self\n" if problem else b"go\n")
            self.holder.stdin.flush()
            line = readline(self.holder.stdout, 300)
        if line != b"ready\n":
            err = self.holder.stderr.read(2000) if self.holder.poll() is not None else b""
            self.release()
            raise EnvironmentUnavailable(f"bubblewrap: the session's namespaces could not be made: "
                                         f"{(line + err).decode(errors='replace').strip()[-300:] or 'no answer'}")
        if self.config.network:
            self.start_slirp()
        # the private copy appears at the workspace's own path; the agent's home is made in it
        self.run(["bash", "-c", 'mkdir -p "$0" && printf "$1" > "$0/.gitconfig"', str(self.home), HOME_GITCONFIG],
                 timeout=30)

    def start_slirp(self) -> None:
        """Outbound network for ``network: true``: slirp4netns attached to the session's network namespace
        (its own sandbox and seccomp on; the host's loopback not reachable: ``--disable-host-loopback``)."""
        exe = shutil.which("slirp4netns")
        if exe is None:
            self.release()
            raise EnvironmentUnavailable("bubblewrap: network: true needs slirp4netns (Debian: apt-get install "
                                         "slirp4netns); use network: false")
        ready_r, ready_w = os.pipe()
        exit_r, exit_w = os.pipe()
        self.slirp_exit = open(exit_w, "wb")  # slirp4netns ends when this closes (release, or the finalizer)
        pid = self.holder.pid
        # as root its own sandbox too (as another user slirp4netns cannot make one inside the session's)
        userns = ["--enable-sandbox"] if os.geteuid() == 0 else [f"--userns-path=/proc/{pid}/ns/user"]
        try:
            self.slirp = subprocess.Popen([exe, "--configure", "--mtu=65520", "--disable-host-loopback",
                                           "--enable-seccomp", f"--ready-fd={ready_w}",
                                           f"--exit-fd={exit_r}", *userns, "--netns-type=path",
                                           f"/proc/{pid}/ns/net", "tap0"], pass_fds=(ready_w, exit_r),
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, start_new_session=True, env=scrubbed())
        finally:
            close_all([ready_w, exit_r])
        weakref.finalize(self, end_process, self.slirp)
        weakref.finalize(self, self.slirp_exit.close)
        with os.fdopen(ready_r, "rb") as ready:
            ok = readline(ready, 30, size=1) == b"1"
        if not ok:
            err = self.slirp.stderr.read(500) if self.slirp.poll() is not None else b""
            self.release()
            raise EnvironmentUnavailable(f"bubblewrap: slirp4netns did not start: {err.decode(errors='replace')}")
        (self.session_dir / "resolv.conf").write_text("nameserver 10.0.2.3\n")
        os.chmod(self.session_dir / "resolv.conf", 0o644)

    def release(self) -> None:
        if self.slirp_exit is not None:
            self.slirp_exit.close()
        for proc in (self.slirp, self.holder):
            if proc is not None:
                end_process(proc)

    def enter(self) -> list[str]:
        """The session's namespaces (``nsenter``) and, when not the caller, its own user (``setpriv``)."""
        pid = str(self.holder.pid)
        if os.geteuid() == 0:
            return ["nsenter", f"--target={pid}", "--mount", "--net", "--", "setpriv", f"--reuid={self.outer_uid}",
                    f"--regid={self.outer_gid}", "--clear-groups", "--"]
        user = ["setpriv", f"--reuid={subids.INNER}", f"--regid={subids.INNER}", "--clear-groups", "--"] \
            if self.ids else []
        return ["nsenter", f"--target={pid}", "--user", "--mount", "--net", "--preserve-credentials", "--", *user]

    @staticmethod
    def own_user_warning(why: str) -> None:
        warn_once(f"warning: bubblewrap's sandbox user is your own uid {os.geteuid()} ({why}): files it makes "
                   "are yours and it can read your files among the folders it sees (docs/environments.md)")

    def bwrap_args(self) -> list[str]:
        args = ["--die-with-parent", "--new-session", "--unshare-all", "--share-net", "--unshare-user",
                "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--cap-drop", "ALL", "--hostname", "sandbox"]
        for d in SYSTEM_DIRS:
            if os.path.islink(d):
                args += ["--symlink", os.readlink(d), d]
            elif os.path.isdir(d):
                args += ["--ro-bind", d, d]
        args += [x for f in MASKED_FILES if os.path.isfile(f) for x in ("--ro-bind", "/dev/null", f)]
        args += [x for d in MASKED_DIRS if os.path.isdir(d) for x in ("--tmpfs", d, "--remount-ro", d)]
        if self.config.network:
            args += ["--ro-bind", str(self.session_dir / "resolv.conf"), "/etc/resolv.conf"]
        tmp = str(self.config.limits.tmp_mb * 2**20)  # memory-backed scratch, each with a size; /dev itself read-only
        args += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev", "--size", tmp, "--tmpfs", "/dev/shm",
                 "--size", tmp, "--tmpfs", "/tmp", "--size", str(RUN_DIR_BYTES), "--tmpfs", "/run"]
        args += [x for p in KERNEL_INTERFACES if os.path.exists(p) for x in ("--ro-bind", p, p)]
        for i, p in enumerate(self.reached):  # bound by the holder: reachable whatever their parents' modes
            args += ["--ro-bind", str(self.session_dir / "mnt" / str(i)), p]
        args += ["--bind", str(self.session_dir / "ws"), str(self.root)]  # the private copy, at the folder's path
        args += ["--ro-bind", str(self.session_dir), str(self.session_dir)]  # the toolkit's helpers: read-only
        # bubblewrap's own root (a tmpfs with no size: half the host's memory, counted nowhere without a memory
        # cgroup) read-only once every mount point is made in it
        return args + ["--remount-ro", "/", "--chdir", str(self.root)]

    def tmpdir(self) -> str:
        return "/tmp"  # the sandbox's own (a tmpfs that ends with it)

    def host_cwd(self) -> Path:
        return self.session_dir

    def wrap(self, argv: list[str], persistent: bool = False, fds: list[int] | None = None) -> list[str]:
        return self.enter_cgroup([*self.enter(), self.exe, *self.bwrap_args(), *self.filter_args(fds), "--",
                                  *self.bounded(argv, persistent)])

    def filter_args(self, fds: list[int] | None) -> list[str]:
        """``--seccomp FD`` with a fresh descriptor holding the filter (``syscall_filter.py``), appended to
        ``fds``; none when the role turns it off, and a one-line warning when libseccomp is missing."""
        if not self.config.seccomp or fds is None:
            return []
        fd = syscall_filter.fd(unbounded_memory=not self.memory_cgroup)
        if fd is None:
            warn_once(f"warning: bubblewrap without a system-call filter: {syscall_filter.program()}")
            return []
        fds.append(fd)
        return ["--seccomp", str(fd)]

    def kill_strays(self) -> list[int]:
        return []  # the PID namespace: nothing of a command outlives its bwrap

    def describe(self) -> str:
        return f"bubblewrap (network: {'outbound only, slirp4netns' if self.config.network else 'none'})"
