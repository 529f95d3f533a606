"""Where the agent's commands run: one small protocol, several execution environments.

An ``Environment`` owns one persistent bash per session (``execute(command, timeout) -> ExecResult``),
one-off programs (``run(argv)``, used by the Git tool and the task checks), the Deployer's web server
(``serve(folder)``) and the session's end (``stop()``). All of them get an environment built from an
allow-list (PATH, HOME inside the workspace, LANG/LC_*/TZ, TERM=dumb, NO_COLOR=1, git's safety settings
and what the role declares in ``pass_env``), never the parent's, so colour is off and no secret is inherited.

- ``local`` is **unconfined**: commands run on the host as the current user and can read and write
  anything the user can, use the network and read other processes' ``/proc/<pid>/environ``. What it does
  guarantee: the allow-list environment, git hooks off, pushes elsewhere than the workspace and the
  configured remotes rewritten to nowhere (a guard-rail a command can override), and process bookkeeping
  (a child subreaper, see ``subreaper.py``): every process of the session, daemonised or not, ends with it.
- ``bubblewrap`` (Debian's ``bwrap``): the system folders read-only (``/usr``, ``/etc`` without
  shadow files and ssh host keys, and the toolkit's Python), the workspace and the folders named in
  ``writable`` (e.g. a git remote) writable, nothing else of the host visible (no ``/home``, ``/root``,
  ``/work``, ``/tmp``); a private ``/tmp`` and ``/proc``; new PID, IPC, UTS, cgroup and network namespaces
  (loopback only unless ``network: true``); all capabilities dropped; ``--die-with-parent``. The PID
  namespace ends every process with the session.
- ``docker`` / ``podman``: the same shape in a container (``--network none``, the workspace mounted);
  only where a daemon answers, otherwise a one-line error says so.

``make_environment("auto", …)`` picks bubblewrap when ``bwrap`` works here, else ``local`` with a one-line
warning. Eval mode's git detection reads the git trace (``GIT_TRACE2_EVENT``), which names the command git
actually ran (after ``-C``, ``-c`` and aliases), not the text the model typed.
"""

from __future__ import annotations

import asyncio
import codecs
import functools
import json
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
import weakref
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit.agent.environments import syscall_filter
from toolkit.agent.environments.beneath import Tree
from toolkit.agent.environments.disk_use import DiskBound
from toolkit.agent.environments.pids_cgroup import PidsCgroup
from toolkit.core.secrets import redact

KINDS = ("auto", "bubblewrap", "local", "docker", "podman")
PASSED_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ")
GIT_SAFETY = {  # as GIT_CONFIG_* (command-line level: above any repository or global config)
    "core.hooksPath": "/dev/null", "core.fsmonitor": "false", "protocol.ext.allow": "never",
    "color.ui": "false", "core.pager": "cat", "credential.helper": "", "safe.directory": "*",
    "gc.autoDetach": "false", "maintenance.autoDetach": "false"}  # nothing git starts outlives its command
NO_PUSH = "/dev/null/pushes-go-only-to-the-workspace-or-configured-remotes"
PUSH_PREFIXES = ("/", "file://", "..", "~", "http://", "https://", "ssh://", "git://", "git@")
EVAL_GIT_COMMANDS = frozenset({"commit", "push", "pull"})
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
MASKED_FILES = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers")
MASKED_DIRS = ("/etc/ssh", "/etc/sudoers.d", "/etc/ssl/private")
KERNEL_INTERFACES = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")  # read-only inside
SANDBOX_UID = SANDBOX_GID = 1000  # the sandbox's user: not root (a user namespace maps it to the caller)
TRACE_FD = 9  # the git trace2 stream: a pipe the host owns (git takes a single digit here)
RUN_DIR_BYTES = 16 * 2**20  # bubblewrap's /run (a tmpfs)
RUN_OUTPUT_BYTES = 2**20  # the most the host reads of a one-off program's stdout (and of its stderr)
HERE = Path(__file__).resolve().parent


class Limits(BaseModel):
    """Bounds on a session (docs/environments.md, "Bounds and their settings"). rlimits are set inside
    the environment before the command runs. ``processes`` is the session's pids cgroup where one can be
    made (``pids_cgroup.py``, both kinds), else ``RLIMIT_NPROC`` under bubblewrap (which the kernel does not
    apply when the toolkit runs as root: then a warning says so). ``disk_mb`` bounds how much the
    workspace grows (``disk_use.py``: the session ends with the reason); ``tmp_mb`` sizes bubblewrap's
    memory-backed scratch folders."""

    model_config = ConfigDict(extra="forbid")

    memory_mb: int = Field(4096, ge=16)  # RLIMIT_DATA of each process: heap and private writable mappings
    processes: int = Field(1024, ge=8)  # pids cgroup (threads count too), else RLIMIT_NPROC (bubblewrap only)
    cpu_s: int = Field(3600, ge=1)  # RLIMIT_CPU of each process, seconds
    file_size_mb: int = Field(2048, ge=1)  # RLIMIT_FSIZE: the largest file a process may write
    open_files: int = Field(1024, ge=16)  # RLIMIT_NOFILE
    disk_mb: int = Field(4096, ge=0)  # how much the workspace may grow in a session (0: no bound)
    tmp_mb: int = Field(1024, ge=1)  # bubblewrap: the size of /tmp and of /dev/shm (tmpfs, so memory), each

    def ulimit(self, processes: bool = True) -> str:
        nproc = f" -u {self.processes}" if processes else ""
        return (f"ulimit -S -H -d {self.memory_mb * 1024}{nproc} -t {self.cpu_s} -f {self.file_size_mb * 1024} "
                f"-n {self.open_files}")


class EnvironmentConfig(BaseModel):
    """A role's ``environment:`` block (every field optional)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["auto", "bubblewrap", "local", "docker", "podman"] = "auto"
    network: bool = False  # bubblewrap/containers: share the host's network (default: loopback only)
    pass_env: list[str] = Field(default_factory=list)  # names passed from the parent (values still redacted)
    read_only: list[str] = Field(default_factory=list)  # extra host folders visible read-only
    writable: list[str] = Field(default_factory=list)  # extra host folders writable (e.g. a git remote)
    image: str = "python:3.11-slim"  # containers only
    seccomp: bool = True  # bubblewrap: the system-call filter (syscall_filter.py); off lets strace/gdb run
    limits: Limits = Field(default_factory=Limits)


class EnvironmentUnavailable(ValueError):
    """The chosen environment cannot run here (one line: why, and what to choose instead)."""


@dataclass
class ExecResult:
    output: str
    exit_code: int | None
    timed_out: bool = False


class CappedOutput:
    """Keeps the first and last ``cap/2`` characters of a stream, never the whole of it."""

    def __init__(self, cap: int):
        self.half = cap // 2
        self.head = ""
        self.tail: deque[str] = deque()
        self.tail_chars = 0
        self.total = 0

    def add(self, text: str) -> None:
        self.total += len(text)
        if len(self.head) < self.half:
            room = self.half - len(self.head)
            self.head += text[:room]
            text = text[room:]
        if text:
            self.tail.append(text)
            self.tail_chars += len(text)
            while self.tail_chars - len(self.tail[0]) >= self.half:
                self.tail_chars -= len(self.tail.popleft())

    def text(self) -> str:
        tail = "".join(self.tail)
        if len(self.head) + len(tail) < self.total or len(tail) > self.half:
            tail = tail[-self.half:]
            hidden = self.total - len(self.head) - len(tail)
            return f"{self.head}\n[… output truncated: {hidden} of {self.total} characters not shown …]\n{tail}"
        return self.head + tail


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc), parents before children."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], deque([pid])
    while todo:
        for child in children.get(todo.popleft(), []):
            out.append(child)
            todo.append(child)
    return out


def _stat(pid: int) -> tuple[int, int]:
    """A process's parent and session ids (0, 0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[1]), int(fields[3])
    except (OSError, IndexError, ValueError):
        return 0, 0


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class Environment:
    """The protocol and what every environment shares; subclasses say how a command line is wrapped."""

    name = "base"
    confined = False

    def __init__(self, workspace: str | os.PathLike, config: EnvironmentConfig | None = None,
                 allowed_remotes: list[str | os.PathLike] = ()):
        self.root = Path(workspace).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.config = config or EnvironmentConfig()
        remotes = [str(r) for r in allowed_remotes]
        self.remote_urls = [r for r in remotes if "://" in r and not r.startswith("file://")]  # e.g. https://…
        self.writable = [Path(r.removeprefix("file://")).resolve() for r in [*remotes, *self.config.writable]
                         if r not in self.remote_urls]
        # the session's own folder: the toolkit's helpers and settings, never writable from inside a sandbox
        self.session_dir = Path(tempfile.mkdtemp(prefix="toolkit-env-")).resolve()
        weakref.finalize(self, shutil.rmtree, str(self.session_dir), True)  # also when never stopped
        self.trace = TraceReader()
        weakref.finalize(self, self.trace.close)
        for helper in ("static_server.py", "disarm.py"):
            shutil.copy(HERE / helper, self.session_dir / helper)
        self.session_id = uuid.uuid4().hex
        self.planted: list[str] = []
        (self.session_dir / "gitignore").write_text(".agent/\n")
        self.home = self.root / ".agent" / "home"
        tree = Tree(self.root)  # the home is the agent's: made fresh for every session, never followed
        tree.remove_tree(".agent/home")
        tree.write_bytes(".agent/home/.gitconfig", b"[user]\n\tname = Agent\n\temail = agent@example.invalid\n",
                         agent_dir=True)  # the global level: a repository's own identity wins
        self.proc: asyncio.subprocess.Process | None = None
        self._lock: asyncio.Lock | None = None
        self.cgroup: PidsCgroup | None = None
        if self.uses_cgroup:
            made = PidsCgroup.make(self.session_id, self.config.limits.processes)
            if isinstance(made, PidsCgroup):
                self.cgroup = made
                weakref.finalize(self, made.remove)
            elif os.geteuid() == 0 and self.confined:
                _warn_once(f"warning: limits.processes is not enforced ({made}; RLIMIT_NPROC does not bind root)")
        self.disk = DiskBound([self.root, *self.scratch_on_disk()], self.config.limits.disk_mb * 2**20)
        weakref.finalize(self, self.disk.close)
        self.disk.watch(self._over_disk)

    uses_cgroup = True  # the session's processes in a pids cgroup of their own, where one can be made

    def scratch_on_disk(self) -> list[Path]:
        """Folders besides the workspace where the session's commands write to the host's disk."""
        return []

    def exceeded(self) -> str | None:
        """Why the session must end (a bound it passed), or None."""
        return self.disk.exceeded

    def _over_disk(self, reason: str) -> None:
        """The watcher's end of the session: every process of it killed (the shell restarts refused)."""
        print(f"warning: the session ends: {reason}", file=sys.stderr)
        self.end_processes()

    def end_processes(self) -> None:
        if self.cgroup is not None:
            self.cgroup.kill()
        if self.proc is not None and self.proc.returncode is None:
            _kill([self.proc.pid, *descendants(self.proc.pid)])
        self.kill_strays()

    def enter_cgroup(self, argv: list[str]) -> list[str]:
        return self.cgroup.enter(argv) if self.cgroup is not None else argv

    # ------------------------------------------------------------------ what every command gets
    def env(self, trace_git: bool = True) -> dict[str, str]:
        """The allow-list environment (never the parent's)."""
        path = os.pathsep.join(dict.fromkeys([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin",
                                              "/usr/local/sbin", "/usr/sbin", "/sbin"]))
        env = {"PATH": path, "HOME": str(self.home), "TERM": "dumb", "NO_COLOR": "1", "PAGER": "cat",
               "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "PYTHONDONTWRITEBYTECODE": "1",
               "TMPDIR": self.tmpdir(), "LANG": "C.UTF-8", "TOOLKIT_SESSION": self.session_id}
        env.update({k: os.environ[k] for k in PASSED_ENV if k in os.environ})
        env.update({k: os.environ[k] for k in self.config.pass_env if k in os.environ})
        settings = {**GIT_SAFETY, "core.excludesFile": str(self.session_dir / "gitignore"),  # .agent/ stays out
                    **self.push_rules()}
        env["GIT_CONFIG_COUNT"] = str(len(settings))
        for i, (key, value) in enumerate(settings.items()):
            env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
        if trace_git:
            env["GIT_TRACE2_EVENT"] = str(TRACE_FD)
        return env

    def push_rules(self) -> dict[str, str]:
        """``url.<base>.pushInsteadOf`` settings that send a push to any other place than the workspace or
        the configured remotes to a path that does not exist (git uses the longest matching prefix, so the
        allowed places, rewritten to themselves, win). A guard-rail for ``local``; bubblewrap's mounts
        enforce the same."""
        keys = [f"url.{NO_PUSH}/{i}.pushInsteadOf" for i in range(len(PUSH_PREFIXES))]
        rules = dict(zip(keys, PUSH_PREFIXES))  # one key per prefix (a key holds one value here)
        for place in [str(self.root), *map(str, self.writable)]:
            for url in (place, f"file://{place}"):
                rules[f"url.{url}.pushInsteadOf"] = url
        rules.update({f"url.{url}.pushInsteadOf": url for url in self.remote_urls})
        return rules

    def tmpdir(self) -> str:
        folder = self.session_dir / "tmp"
        folder.mkdir(exist_ok=True)
        return str(folder)

    def wrap(self, argv: list[str], persistent: bool = False, fds: list[int] | None = None) -> list[str]:
        """The command line that runs ``argv`` in the environment; descriptors it needs in the child are
        appended to ``fds`` (the caller passes them and closes them once the child has started)."""
        raise NotImplementedError

    def bounded(self, argv: list[str], persistent: bool = False, processes: bool = True) -> list[str]:
        """``argv`` behind a bash that sets the session's limits (and, for the persistent shell, moves the
        trace pipe to ``TRACE_FD``) and then becomes it."""
        script = self.config.limits.ulimit(processes) + " || exit 126"
        if persistent:
            script += f"; exec {TRACE_FD}>&{self.trace.write_fd} {self.trace.write_fd}>&-"
        return ["/bin/bash", "--noprofile", "--norc", "-c", script + '; exec "$@"', "limits", *argv]

    def describe(self) -> str:
        return self.name

    # ------------------------------------------------------------------ one-off programs
    def run(self, argv: list[str], timeout: float = 60, input: str | None = None,
            trace_git: bool = False) -> subprocess.CompletedProcess:
        """Run a program to completion in the environment (cwd: the workspace); text output, at most
        ``RUN_OUTPUT_BYTES`` of each stream (the rest is counted, not read), within ``timeout``."""
        stdin = subprocess.PIPE if input is not None else subprocess.DEVNULL
        with tempfile.TemporaryFile(dir=self.session_dir) as out, tempfile.TemporaryFile(dir=self.session_dir) as err:
            fds: list[int] = []
            try:
                proc = subprocess.Popen(self.wrap(list(argv), fds=fds), cwd=self.root, env=self.env(trace_git),
                                        start_new_session=True, stdout=out, stderr=err, stdin=stdin, pass_fds=fds)
            finally:
                _close(fds)
            code, note = None, ""
            try:
                proc.communicate(input.encode() if input is not None else None, timeout=timeout)
                code = proc.returncode
            except subprocess.TimeoutExpired:
                proc.terminate()  # the wrapper (subreaper, bwrap) takes its whole tree down with it
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    _kill([proc.pid, *descendants(proc.pid)])
                    proc.wait()
                code, note = 124, f"timed out after {timeout:g}s"
            return subprocess.CompletedProcess(argv, code, _head(out), _head(err) + note)

    # ------------------------------------------------------------------ the persistent shell
    async def start(self) -> None:
        if self.proc is None or self.proc.returncode is not None:
            fds: list[int] = []
            try:
                self.proc = await asyncio.create_subprocess_exec(
                    *self.wrap(["bash", "--noprofile", "--norc"], persistent=True, fds=fds),
                    stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                    cwd=self.root, env=self.env(), start_new_session=True, limit=2**20,
                    pass_fds=(self.trace.write_fd, *fds))
            finally:
                _close(fds)

    def shell_pid(self) -> int | None:
        """The host PID of the persistent bash (below the wrapper: subreaper, bwrap's init, …)."""
        if self.proc is None:
            return None
        for pid in [self.proc.pid, *descendants(self.proc.pid)]:
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "bash":
                    return pid
            except OSError:
                continue
        return None

    async def execute(self, command: str, timeout: float = 60, max_output_chars: int = 10_000) -> ExecResult:
        """Run a command line in the persistent bash (cd and variables persist). At the timeout everything
        the command started is killed and the shell stays; output is capped (head + tail)."""
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            return await self._execute(command, timeout, max_output_chars)

    async def _execute(self, command: str, timeout: float, max_output_chars: int) -> ExecResult:
        if self.exceeded():
            raise BoundExceeded(f"the session ends: {self.exceeded()}")
        try:
            result = await self._run_in_shell(command, timeout, max_output_chars)
        except ShellExited:
            if self.exceeded():
                raise BoundExceeded(f"the session ends: {self.exceeded()}") from None
            raise
        reason = self.disk.check(cheap=True)
        if reason:
            self.end_processes()
            raise BoundExceeded(f"the session ends: {reason}")
        return result

    async def _run_in_shell(self, command: str, timeout: float, max_output_chars: int) -> ExecResult:
        await self.start()
        proc = self.proc
        marker = f"__DONE_{uuid.uuid4().hex}__"
        proc.stdin.write(f"{command}\nprintf '\\n{marker} %s\\n' \"$?\"\n".encode())
        await proc.stdin.drain()
        out = CappedOutput(max_output_chars)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

        async def read() -> int:
            buf = ""
            while True:
                chunk = await proc.stdout.read(65536)
                if not chunk:
                    raise ShellExited("the shell exited; it restarts on the next command")
                buf += decoder.decode(chunk)
                at = buf.find(marker)
                if at >= 0:
                    rest = buf[at + len(marker):]
                    if "\n" in rest.lstrip(" "):
                        before = buf[:at]
                        out.add(before[:-1] if before.endswith("\n") else before)  # the protocol's own newline
                        return int(rest.split()[0])
                    continue
                keep = len(marker) + 16  # a marker may be split across reads
                if len(buf) > keep:
                    out.add(buf[:-keep])
                    buf = buf[-keep:]

        try:
            code = await asyncio.wait_for(read(), timeout)
            return ExecResult(out.text().rstrip("\n"), code)
        except asyncio.TimeoutError:
            self.kill_command()
            code = None
            try:
                code = await asyncio.wait_for(read(), 5)
            except (asyncio.TimeoutError, ShellExited):
                await self.stop_shell()
            return ExecResult(out.text().rstrip("\n"), code, timed_out=True)
        except ShellExited:
            await self.stop_shell()
            raise

    def kill_command(self) -> None:
        """Kill what the current command started, keep the shell."""
        shell = self.shell_pid()
        if shell is None or self.proc is None:
            return
        chain, pid = {shell}, shell  # the wrapper's processes down to the shell stay
        while pid not in (self.proc.pid, 0, 1):
            pid = _stat(pid)[0]
            chain.add(pid)
        session = _stat(shell)[1]  # the command's processes, orphans too; a daemon (setsid: the Deployer's
        for _ in range(100):  # server) stays. Again while a fork races the kill.
            victims = [p for p in descendants(self.proc.pid) if p not in chain and _stat(p)[1] == session]
            if not victims:
                return
            _kill(list(reversed(victims)))

    async def stop_shell(self) -> None:
        """End the shell and every process of the session (the wrapper's whole tree)."""
        if self.proc is not None and self.proc.returncode is None:
            _kill([self.proc.pid, *descendants(self.proc.pid)])
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            await self.proc.wait()
        self.proc = None

    # ------------------------------------------------------------------ the Deployer's server
    async def serve(self, folder: Path) -> str:
        """Start the static server on ``folder`` inside the environment; return its URL (127.0.0.1 as seen
        from the environment's network: the host's for ``local``, the sandbox's own loopback otherwise).
        The port comes back as the command's output (the shell's pipe, within the command's deadline) and
        only a number is taken from it: no file is read, nothing else of what the sandbox prints is used."""
        script = self.session_dir / "static_server.py"  # read-only inside the sandbox
        result = await self.execute(f"( cd / && python3 -I {_q(script)} {_q(folder)} {_q(self.root)} "
                                    f"</dev/null 2>/dev/null )", timeout=10, max_output_chars=200)
        last = (result.output.strip().splitlines() or [""])[-1]
        if result.exit_code != 0 or not re.fullmatch(r"[0-9]{1,5}", last) or not 0 < int(last) < 65536:
            raise EnvironmentUnavailable(f"the web server did not start in {self.name}: "
                                         f"{redact(result.output[-200:])}")
        return f"http://127.0.0.1:{int(last)}/"

    # ------------------------------------------------------------------ eval mode's git trace
    def git_commands(self) -> list[str]:
        """The git commands run in the shell since the last call, as git resolved them (aliases,
        ``-C``, ``-c`` included), from the trace2 event stream (a pipe the host owns and drains)."""
        return self.trace.take()

    def ran_eval_git(self) -> bool:
        return bool(EVAL_GIT_COMMANDS.intersection(self.git_commands()))

    # ------------------------------------------------------------------ the end
    async def stop(self) -> None:
        self.disk.close()
        await self.stop_shell()
        self.kill_strays()
        if self.cgroup is not None:
            self.cgroup.kill()
        self.disarm()
        self.discard()

    def kill_strays(self) -> list[int]:
        """Kill every process still carrying this session's ``TOOLKIT_SESSION`` mark (one that left the
        process tree, e.g. after its subreaper was killed under ``local``); returns their PIDs."""
        mark = f"TOOLKIT_SESSION={self.session_id}".encode()
        killed = []
        for _ in range(3):  # a fork racing the kill shows up on the next pass
            found = []
            for entry in os.listdir("/proc"):
                if entry.isdigit() and int(entry) != os.getpid():
                    try:
                        with open(f"/proc/{entry}/environ", "rb") as f:
                            if mark in f.read(2**20).split(b"\0"):
                                found.append(int(entry))
                    except OSError:
                        continue
            if not found:
                break
            _kill(found)
            killed += found
        return killed

    def disarm(self) -> list[str]:
        """Remove what the agent planted in the workspace's git repositories for later (``disarm.py``, run
        inside the environment); say so in one line on stderr and keep the list in ``.agent/planted.json``."""
        out = self.run(["python3", "-I", str(self.session_dir / "disarm.py"), str(self.root)], timeout=60)
        try:
            self.planted = [str(x) for x in json.loads(out.stdout.strip().splitlines()[-1])]
        except (ValueError, IndexError):
            self.planted = [f"(the check did not finish: {redact((out.stderr or out.stdout)[-200:].strip())})"]
        if self.planted:
            print(f"warning: removed what the agent planted in git to run later (hooks moved to .agent/planted/): "
                  f"{redact(', '.join(self.planted))[:500]}", file=sys.stderr)
            Tree(self.root).write_bytes(".agent/planted.json", json.dumps(self.planted, indent=1).encode(),
                                        agent_dir=True)
        return self.planted

    def discard(self) -> None:
        """The synchronous end: kill whatever is left of the session, remove its private folder."""
        if self.proc is not None and self.proc.returncode is None:
            _kill([self.proc.pid, *descendants(self.proc.pid)])
        self.trace.close()
        self.disk.close()
        if self.cgroup is not None:
            self.cgroup.remove()
        shutil.rmtree(self.session_dir, ignore_errors=True)


class ShellExited(Exception):
    pass


class BoundExceeded(ShellExited):
    """The session passed one of its bounds (``Environment.exceeded()`` says which); it ends."""


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


def _head(file) -> str:
    """The first ``RUN_OUTPUT_BYTES`` of a program's output file, with a note when there was more."""
    size = file.seek(0, os.SEEK_END)
    file.seek(0)
    text = file.read(RUN_OUTPUT_BYTES).decode("utf-8", errors="replace")
    if size > RUN_OUTPUT_BYTES:
        text += f"\n[… output truncated: {size - RUN_OUTPUT_BYTES} of {size} bytes not read …]\n"
    return text


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def _q(path: os.PathLike | str) -> str:
    return shlex.quote(str(path))


class LocalEnvironment(Environment):
    """Unconfined: the host, as the current user. Only the environment is an allow-list and the session's
    processes are kept in one tree (child subreaper) that ends with the session."""

    name = "local"
    confined = False

    def scratch_on_disk(self) -> list[Path]:
        return [Path(self.tmpdir())]  # TMPDIR: the session's folder

    def wrap(self, argv: list[str], persistent: bool = False, fds: list[int] | None = None) -> list[str]:
        return self.enter_cgroup([sys.executable, "-I", "-S", str(HERE / "subreaper.py"),  # -S: a faster start
                                  *self.bounded(argv, persistent, processes=False)])


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """None when bubblewrap works here, else why not (one line)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bwrap is not installed (Debian: apt-get install bubblewrap)"
    try:
        out = subprocess.run([exe, "--ro-bind", "/", "/", "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID),
                              "--gid", str(SANDBOX_GID), "--die-with-parent", "--cap-drop", "ALL", "true"],
                             capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap does not run: {exc}"
    if out.returncode != 0:
        return f"bwrap cannot create namespaces here: {out.stderr.strip().splitlines()[-1:] or out.returncode}"
    return None


class BubblewrapEnvironment(Environment):
    name = "bubblewrap"
    confined = True

    def __init__(self, *args, **kwargs):
        problem = bwrap_problem()
        if problem:
            raise EnvironmentUnavailable(f"bubblewrap: {problem}; use --env local (unconfined)")
        super().__init__(*args, **kwargs)
        self.exe = shutil.which("bwrap")

    def bwrap_args(self) -> list[str]:
        args = ["--die-with-parent", "--new-session", "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID),
                "--gid", str(SANDBOX_GID), "--cap-drop", "ALL", "--hostname", "sandbox"]
        if self.config.network:
            args.append("--share-net")
        for d in SYSTEM_DIRS:
            if os.path.islink(d):
                args += ["--symlink", os.readlink(d), d]
            elif os.path.isdir(d):
                args += ["--ro-bind", d, d]
        args += [x for f in MASKED_FILES if os.path.isfile(f) for x in ("--ro-bind", "/dev/null", f)]
        args += [x for d in MASKED_DIRS if os.path.isdir(d) for x in ("--tmpfs", d)]
        tmp = str(self.config.limits.tmp_mb * 2**20)  # memory-backed scratch, each with a size; /dev itself read-only
        args += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev", "--size", tmp, "--tmpfs", "/dev/shm",
                 "--size", tmp, "--tmpfs", "/tmp", "--size", str(RUN_DIR_BYTES), "--tmpfs", "/run"]
        args += [x for p in KERNEL_INTERFACES if os.path.exists(p) for x in ("--ro-bind", p, p)]
        python = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  str(Path(sys.executable).resolve().parents[1]), *self.config.read_only}
        for p in sorted(python):
            if os.path.exists(p) and not any(p == d or p.startswith(d + "/") for d in SYSTEM_DIRS):
                args += ["--ro-bind", p, p]
        for p in [self.root, *self.writable]:
            if p.exists():
                args += ["--bind", str(p), str(p)]
        args += ["--ro-bind", str(self.session_dir), str(self.session_dir)]  # the toolkit's helpers: read-only
        return args + ["--chdir", str(self.root)]

    def tmpdir(self) -> str:
        return "/tmp"  # the sandbox's own (a tmpfs that ends with it)

    def scratch_on_disk(self) -> list[Path]:
        return []  # /tmp, /dev/shm and /run: tmpfs with a size

    def wrap(self, argv: list[str], persistent: bool = False, fds: list[int] | None = None) -> list[str]:
        return self.enter_cgroup([self.exe, *self.bwrap_args(), *self.filter_args(fds), "--",
                                  *self.bounded(argv, persistent)])

    def filter_args(self, fds: list[int] | None) -> list[str]:
        """``--seccomp FD`` with a fresh descriptor holding the filter (``syscall_filter.py``), appended to
        ``fds``; none when the role turns it off, and a one-line warning when libseccomp is missing."""
        if not self.config.seccomp or fds is None:
            return []
        fd = syscall_filter.fd()
        if fd is None:
            _warn_once(f"warning: bubblewrap without a system-call filter: {syscall_filter.program()}")
            return []
        fds.append(fd)
        return ["--seccomp", str(fd)]

    def describe(self) -> str:
        return f"bubblewrap (network: {'host' if self.config.network else 'loopback only'})"


class ContainerEnvironment(Environment):
    """docker / podman: the workspace mounted into a container (``--network none`` unless ``network``).
    Not exercised by the tests here (no daemon on this machine); ``problem()`` says why in one line."""

    uses_cgroup = False  # the engine's own

    def __init__(self, *args, engine: str = "docker", **kwargs):
        self.name = engine
        self.confined = True
        problem = self.problem(engine)
        if problem:
            raise EnvironmentUnavailable(f"{engine}: {problem}; use --env bubblewrap or --env local")
        super().__init__(*args, **kwargs)
        self.container = f"toolkit-{uuid.uuid4().hex[:10]}"

    @staticmethod
    def problem(engine: str) -> str | None:
        exe = shutil.which(engine)
        if exe is None:
            return f"{engine} is not installed"
        try:
            out = subprocess.run([exe, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                                 timeout=10)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"no daemon answers ({exc})"
        if out.returncode != 0:
            return "no daemon answers (" + (out.stderr.strip().splitlines() or ["docker info failed"])[-1] + ")"
        return None

    def wrap(self, argv: list[str], persistent: bool = False, fds: list[int] | None = None) -> list[str]:
        mounts = [x for p in [self.root, *self.writable] for x in ("-v", f"{p}:{p}")]
        mounts += ["-v", f"{self.session_dir}:{self.session_dir}:ro"]
        mounts += [x for p in self.config.read_only for x in ("-v", f"{p}:{p}:ro")]
        names = [x for k in self.env() for x in ("-e", k)]  # values come from the process environment
        network = [] if self.config.network else ["--network", "none"]
        name = ["--name", self.container] if persistent else []
        return [self.name, "run", "--rm", "-i", *name, *network, *mounts, *names, "-w", str(self.root),
                self.config.image, *self.bounded(argv)]  # no trace pipe into a container: eval mode sees no git

    def tmpdir(self) -> str:
        return "/tmp"

    async def stop(self) -> None:
        subprocess.run([self.name, "rm", "-f", self.container], capture_output=True, timeout=30)
        await super().stop()


def make_environment(kind: str | None, workspace: str | os.PathLike, config: EnvironmentConfig | None = None,
                     allowed_remotes: list[str | os.PathLike] = ()) -> Environment:
    """The environment ``kind`` (None: the config's, whose default is ``auto``) for a workspace."""
    config = config or EnvironmentConfig()
    kind = kind or config.kind
    if kind not in KINDS:
        raise EnvironmentUnavailable(f"unknown environment {kind!r}; choose one of {', '.join(KINDS)}")
    if kind == "auto":
        problem = bwrap_problem()
        if problem is None:
            kind = "bubblewrap"
        else:
            _warn_once(f"warning: commands run UNCONFINED on this host (environment 'local'): {problem}")
            kind = "local"
    if kind == "bubblewrap":
        return BubblewrapEnvironment(workspace, config, allowed_remotes)
    if kind == "local":
        return LocalEnvironment(workspace, config, allowed_remotes)
    return ContainerEnvironment(workspace, config, allowed_remotes, engine=kind)


@functools.lru_cache(maxsize=None)
def _warn_once(message: str) -> None:
    print(message, file=sys.stderr)
