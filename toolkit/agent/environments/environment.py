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
actually ran (after ``-C``, ``-c`` and aliases), not the text the model typed; the repository's refs confirm
it (any process of the shell can write the trace).
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
import time
import uuid
import weakref
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolkit.agent.environments import collect, fileop, holder, kinds, result, subids, syscall_filter
from toolkit.agent.environments.cgroup import Cgroup
from toolkit.agent.environments.limits import Limits
from toolkit.core import spawn
from toolkit.core.printable import printable, show
from toolkit.core.secrets import redact

PASSED_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ")
GIT_SAFETY = {  # as GIT_CONFIG_* (command-line level: above any repository or global config)
    **collect.GIT_SAFETY, "color.ui": "false", "safe.directory": "*",
    "gc.autoDetach": "false", "maintenance.autoDetach": "false"}  # nothing git starts outlives its command
NO_PUSH = "/dev/null/pushes-go-only-to-the-workspace-or-configured-remotes"
PUSH_PREFIXES = ("/", "file://", "..", "~", "http://", "https://", "ssh://", "git://", "git@")
EVAL_GIT_COMMANDS = frozenset({"commit", "push", "pull"})
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
MASKED_FILES = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers")
MASKED_DIRS = ("/etc/ssh", "/etc/sudoers.d", "/etc/ssl/private")
KERNEL_INTERFACES = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")  # read-only inside
SANDBOX_UID = SANDBOX_GID = 1000  # the sandbox's user as it sees itself (outside: see BubblewrapEnvironment.outer_uid)
HOST_UIDS = (0x100000, 0x200000)  # as root, each session's user is an unused uid drawn from this range
TRACE_FD = 9  # the git trace2 stream: a pipe the host owns (git takes a single digit here)
RUN_DIR_BYTES = 16 * 2**20  # bubblewrap's /run (a tmpfs)
RUN_OUTPUT_BYTES = 2**20  # the most the host reads of a one-off program's stdout (and of its stderr)
HERE = Path(__file__).resolve().parent
# the agent's global git settings (its home is in its copy): a local remote owned by another user is fine
# (git drops GIT_CONFIG_* for the programs of a local transport, so safe.directory must be here too)
HOME_GITCONFIG = "[safe]\n\tdirectory = *\n"
HELPERS = ("static_server.py", "fileop.py", "collect.py")


class EnvironmentConfig(BaseModel):
    """A role's ``environment:`` block (every field optional)."""

    model_config = ConfigDict(extra="forbid")

    kind: str = "auto"  # auto or a kind of kinds.KINDS (bubblewrap, local, docker, podman, or one registered there)
    network: bool = False  # bubblewrap: outbound only, through slirp4netns (default: its own loopback only)
    pass_env: list[str] = Field(default_factory=list)  # names passed from the parent (values still redacted)
    read_only: list[str] = Field(default_factory=list)  # extra host folders visible read-only
    writable: list[str] = Field(default_factory=list)  # local: writable; bubblewrap: read-only (the host pushes)
    image: str = "python:3.11-slim"  # containers only
    seccomp: bool = True  # bubblewrap: the system-call filter (syscall_filter.py); off lets strace/gdb run
    limits: Limits = Field(default_factory=Limits)

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        if problem := kinds.unknown(kind):
            raise ValueError(problem)
        return kind


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


def _state(pid: int) -> str:
    """A process's state letter (R, S, D, T, Z, …); "X" when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "X"


def _kill(pids: list[int], sig: int = signal.SIGKILL) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


class Environment:
    """The protocol and what every environment shares; subclasses say how a command line is wrapped and
    where the private copy lives (``prepare``).

    ``source`` is the user's folder: the host reads it once, to copy it, and never mounts it writable.
    ``root`` is where the session's commands see the workspace (the private copy). ``private=False`` (only
    for ``local``, for a tool used on its own, e.g. in a test) works in the folder itself."""

    name = "base"
    confined = False

    def __init__(self, workspace: str | os.PathLike, config: EnvironmentConfig | None = None,
                 allowed_remotes: list[str | os.PathLike] = (), private: bool = True):
        self.source = Path(workspace).resolve()
        self.source.mkdir(parents=True, exist_ok=True)
        self.config = config or EnvironmentConfig()
        remotes = [str(r) for r in allowed_remotes]
        self.remote_urls = [r for r in remotes if "://" in r and not r.startswith("file://")]  # e.g. https://…
        self.remotes = [Path(r.removeprefix("file://")).resolve() for r in remotes if r not in self.remote_urls]
        self.writable = [Path(p).resolve() for p in self.config.writable]  # local only: bubblewrap shows them read-only
        # the session's own folder: the toolkit's helpers and settings, never writable from inside a sandbox
        self.session_dir = Path(tempfile.mkdtemp(prefix="toolkit-env-")).resolve()
        os.chmod(self.session_dir, 0o711)  # the sandbox's user may pass through to its mounts, not list it
        weakref.finalize(self, shutil.rmtree, str(self.session_dir), True)  # also when never stopped
        self.trace = TraceReader()
        weakref.finalize(self, self.trace.close)
        for helper in HELPERS:
            shutil.copy(HERE / helper, self.session_dir / helper)
            os.chmod(self.session_dir / helper, 0o644)
        (self.session_dir / "gitignore").write_text(".agent/\n")
        os.chmod(self.session_dir / "gitignore", 0o644)
        self.session_id = uuid.uuid4().hex
        self.private = private
        self.is_git = private and (self.source / ".git").exists()
        # a plain folder's files as they were when the session began (applying deletes what the session
        # deleted, if the user has not changed it since): the host reads the user's own folder, once
        self.start_files = result.manifest(self.source) if private and not self.is_git else None
        self.root = self.source
        self.proc: asyncio.subprocess.Process | None = None
        self._lock: asyncio.Lock | None = None
        self.deadline: float | None = None  # time.perf_counter() past which every command is cut short
        self.cgroups: list[Cgroup] = []
        self.memory_cgroup = False
        self.start_commit = ""
        self.refs = ""  # collect.py's digest of the repository's refs, as eval mode last saw it
        try:  # an environment that could not be made leaves nothing behind (cgroups, namespaces, copy)
            if self.uses_cgroup:
                self.make_cgroups()
            self.prepare()
            if self.is_git:
                out = self.run(["python3", "-I", "-S", str(self.session_dir / "collect.py"), "snapshot",
                                str(self.root)], timeout=120)
                found = re.fullmatch(r"([0-9a-f]{40})\n([0-9a-f]{64})\n?", out.stdout)
                self.start_commit, self.refs = found.groups() if found else ("", "")
        except BaseException:
            self.discard()
            raise

    uses_cgroup = True  # the session's processes in cgroups of their own, where they can be made

    def make_cgroups(self) -> None:
        """The session's pids and memory cgroups; where one cannot be made, a warning line says what bounds
        instead (``RLIMIT_NPROC``, ``RLIMIT_AS``)."""
        limits = self.config.limits
        for controller, bound, instead in (("pids", limits.processes, "RLIMIT_NPROC, which does not bind root"),
                                           ("memory", limits.memory_mb * 2**20, "RLIMIT_AS of each process")):
            made = Cgroup.make(self.session_id, bound, controller)
            if isinstance(made, Cgroup):
                self.cgroups.append(made)
                weakref.finalize(self, made.remove)
            elif self.confined:
                _warn_once(f"warning: limits.{'processes' if controller == 'pids' else 'memory_mb'} is not a "
                           f"session-wide bound ({made}); {instead} instead")  # one line each
        self.memory_cgroup = any(c.path.name and (c.path / "memory.limit_in_bytes").exists()
                                 or (c.path / "memory.max").exists() for c in self.cgroups)

    def prepare(self) -> None:
        """Make the private copy and set ``root`` (``local``: a copy in the session's folder)."""
        if not self.private:
            return
        copy = self.session_dir / "ws"
        copy.mkdir()
        holder.copy(str(self.source), str(copy), os.getuid(), os.getgid())
        self.root = copy
        self.home.mkdir(parents=True)
        (self.home / ".gitconfig").write_text(HOME_GITCONFIG)

    @property
    def home(self) -> Path:
        return self.root / ".agent" / "home"

    def host_cwd(self) -> Path:
        """The folder the host starts a command in (bubblewrap: its own; the command's is set inside)."""
        return self.root

    def exceeded(self) -> str | None:
        """Why the session must end (a bound it passed), or None. The bounds are the kernel's now (tmpfs,
        cgroups, rlimits): a command past one fails inside and the session goes on."""
        return None

    def end_processes(self) -> None:
        for cgroup in self.cgroups:
            cgroup.kill()
        if self.proc is not None and self.proc.returncode is None:
            _kill([self.proc.pid, *descendants(self.proc.pid)])
        self.kill_strays()

    def enter_cgroup(self, argv: list[str]) -> list[str]:
        for cgroup in self.cgroups:
            argv = cgroup.enter(argv)
        return argv

    def remaining(self, timeout: float) -> float:
        """``timeout`` cut to what is left of the session's wall clock (at least a moment, so the command
        starts and is killed rather than never tried)."""
        if self.deadline is None:
            return timeout
        return max(0.05, min(timeout, self.deadline - time.perf_counter()))

    # ------------------------------------------------------------------ what every command gets
    def env(self, trace_git: bool = True) -> dict[str, str]:
        """The allow-list environment (never the parent's)."""
        path = os.pathsep.join(dict.fromkeys([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin",
                                              "/usr/local/sbin", "/usr/sbin", "/sbin"]))
        env = {"PATH": path, "HOME": str(self.home), "TERM": "dumb", "NO_COLOR": "1", "PAGER": "cat",
               "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "PYTHONDONTWRITEBYTECODE": "1",
               "TMPDIR": self.tmpdir(), "LANG": "C.UTF-8", "TOOLKIT_SESSION": self.session_id,
               "GIT_AUTHOR_NAME": "Agent", "GIT_AUTHOR_EMAIL": "agent@example.invalid",
               "GIT_COMMITTER_NAME": "Agent", "GIT_COMMITTER_EMAIL": "agent@example.invalid"}
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
        allowed places, rewritten to themselves, win). A guard-rail for ``local``; under bubblewrap the
        remotes are read-only and a pull request is pushed by the host (``result.push``)."""
        keys = [f"url.{NO_PUSH}/{i}.pushInsteadOf" for i in range(len(PUSH_PREFIXES))]
        rules = dict(zip(keys, PUSH_PREFIXES))  # one key per prefix (a key holds one value here)
        for place in [str(self.root), *map(str, self.remotes), *map(str, self.writable)]:
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
        script = self.config.limits.ulimit(processes, address_space=not self.memory_cgroup) + " || exit 126"
        if persistent:
            script += f"; exec {TRACE_FD}>&{self.trace.write_fd} {self.trace.write_fd}>&-"
        return ["/bin/bash", "--noprofile", "--norc", "-c", script + '; exec "$@"', "limits", *argv]

    def describe(self) -> str:
        return self.name

    # ------------------------------------------------------------------ one-off programs
    def run(self, argv: list[str], timeout: float = 60, input: str | bytes | None = None,
            trace_git: bool = False, binary: bool = False, max_output: int = RUN_OUTPUT_BYTES,
            stdout_file=None) -> subprocess.CompletedProcess:
        """Run a program to completion in the environment (cwd: the workspace) within ``timeout`` (and the
        session's wall clock). Its output goes to unlinked files the host made, bounded by the program's
        own ``RLIMIT_FSIZE``; the host reads at most ``max_output`` bytes of stdout and ``RUN_OUTPUT_BYTES``
        of stderr (text, or stdout as bytes with ``binary``). ``stdout_file``: an open file of the host's
        that takes stdout whole (the session's result)."""
        stdin = subprocess.PIPE if input is not None else subprocess.DEVNULL
        data = input.encode() if isinstance(input, str) else input
        timeout = self.remaining(timeout)
        with tempfile.TemporaryFile(dir=self.session_dir) as out, tempfile.TemporaryFile(dir=self.session_dir) as err:
            fds: list[int] = []
            try:
                proc = subprocess.Popen(self.wrap(list(argv), fds=fds), cwd=self.host_cwd(), env=self.env(trace_git),
                                        start_new_session=True, stdout=stdout_file or out, stderr=err, stdin=stdin,
                                        pass_fds=fds)
            finally:
                _close(fds)
            code, note = None, ""
            try:
                proc.communicate(data, timeout=timeout)
                code = proc.returncode
            except subprocess.TimeoutExpired:
                proc.terminate()  # the wrapper (subreaper, bwrap) takes its whole tree down with it
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    _kill([proc.pid, *descendants(proc.pid)])
                    proc.wait()
                code, note = 124, f"timed out after {timeout:g}s"
            stdout = _head(out, max_output, binary)
            return subprocess.CompletedProcess(argv, code, stdout, _head(err) + note)

    def helper(self, name: str, *args: str, input: bytes | None = None, timeout: float = 60,
               max_output: int = RUN_OUTPUT_BYTES, binary: bool = False) -> subprocess.CompletedProcess:
        """One of the toolkit's helper scripts (``fileop.py``, ``collect.py``), run in the environment on
        the workspace; it reads only from its arguments and stdin, answers on stdout."""
        return self.run(["python3", "-I", "-S", str(self.session_dir / name), args[0], str(self.root), *args[1:]],
                        timeout=timeout, input=input, binary=binary, max_output=max_output)

    # ------------------------------------------------------------------ the persistent shell
    async def start(self) -> None:
        if self.proc is None or self.proc.returncode is not None:
            fds: list[int] = []
            try:
                self.proc = await asyncio.create_subprocess_exec(
                    *self.wrap(["bash", "--noprofile", "--norc"], persistent=True, fds=fds),
                    stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                    cwd=self.host_cwd(), env=self.env(), start_new_session=True, limit=2**20,
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
        """Run a command line in the persistent bash (cd and variables persist). At the timeout (or the
        session's wall clock) everything the command started is killed and the shell stays; output is
        capped (head + tail)."""
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            return await self._run_in_shell(command, self.remaining(timeout), max_output_chars)

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
                    out.add(buf + decoder.decode(b"", final=True))
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
        except ShellExited as exc:  # e.g. the command ran `exit`: what it printed is kept
            await self.stop_shell()
            shown = out.text().rstrip("\n")
            raise type(exc)(f"{shown}\n[{exc}]" if shown else str(exc)) from None

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
        # server) stays. First stopped, all of them: a fork bomb refills every slot of its pids bound that a kill
        # frees (killing as they come did not converge at load 45 in 5 s: 44 survivors kept the bound full and the
        # Deployer's server could not start a thread), while a stopped process keeps its slot and cannot fork.
        # Once a listing finds every one stopped, they are killed, then waited for until reaped (a dead process
        # counts in the bound until reaped). Bounded by time: 30 s.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            victims = [p for p in descendants(self.proc.pid) if p not in chain and _stat(p)[1] == session]
            if not victims:
                return
            states = {p: _state(p) for p in reversed(victims)}
            running = [p for p, state in states.items() if state not in "TtZX"]
            alive = [p for p, state in states.items() if state not in "ZX"]
            if running:
                _kill(running, signal.SIGSTOP)
            elif alive:
                _kill(alive)
            else:
                time.sleep(0.01)  # dead, not yet reaped

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
    async def serve(self, folder: str) -> str:
        """Start the static server on ``folder`` (relative to the workspace) inside the environment; return
        its URL (127.0.0.1 as seen from the environment's network: the host's for ``local``, the sandbox's
        own loopback otherwise).
        The port comes back as the command's output (the shell's pipe, within the command's deadline) and
        only a number is taken from it: no file is read, nothing else of what the sandbox prints is used."""
        script = self.session_dir / "static_server.py"  # read-only inside the sandbox
        result = await self.execute(f"( cd / && python3 -I {_q(script)} {_q(self.root / folder)} {_q(self.root)} "
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
        """Whether the last command ran a git commit, pull or push: git's trace names one (any process of
        the shell can write that pipe, so it is only a claim) *and* the repository shows it (its refs, HEAD
        or FETCH_HEAD changed since the last time this said yes; ``collect.py refs``, a digest parsed as
        data). A forged trace line alone ends nothing; a git command that changed nothing (a push that
        failed) neither. The workspace need not have been a repository at the start (``git init`` then a
        commit): where there is no repository the digest fails, and nothing ends."""
        if not EVAL_GIT_COMMANDS.intersection(self.git_commands()):
            return False
        out = self.helper("collect.py", "refs", timeout=60)
        now = out.stdout.strip() if out.returncode == 0 and re.fullmatch(r"[0-9a-f]{64}\n?", out.stdout) else ""
        changed, self.refs = bool(now) and now != self.refs, now or self.refs
        return changed

    # ------------------------------------------------------------------ the end
    def collect(self, folder: Path) -> Path | None:
        """The session's result, made inside the environment and written by it to a file of the host's in
        ``folder`` (a folder the sandbox cannot see): ``result.bundle`` (a git workspace: its branches, the
        start and the end of the working tree) or ``result.tar`` (a plain folder). None when working in
        place. Its size is bounded by the command's ``RLIMIT_FSIZE`` (``limits.file_size_mb``)."""
        if not self.private:
            return None
        kind = "bundle" if self.is_git else "tar"
        path = Path(folder) / f"result.{kind}"
        with open(path, "xb") as f:
            out = self.run(["python3", "-I", "-S", str(self.session_dir / "collect.py"), kind, str(self.root),
                            self.start_commit], timeout=300, stdout_file=f)
        if out.returncode != 0:
            said = " ".join(out.stderr.split())[-300:]  # the sandbox's words, on one line
            raise ResultUnavailable(f"the session's result could not be made ({kind}): "
                                    f"{printable(redact(said)) or out.returncode}")
        return path

    async def stop(self) -> None:
        await self.stop_shell()
        self.end_processes()
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

    def discard(self) -> None:
        """The synchronous end: kill whatever is left of the session, remove its private folder."""
        if self.proc is not None and self.proc.returncode is None:
            _kill([self.proc.pid, *descendants(self.proc.pid)])
        self.trace.close()
        for cgroup in self.cgroups:
            cgroup.remove()
        self.release()
        shutil.rmtree(self.session_dir, ignore_errors=True)

    def release(self) -> None:
        """Let go of what ``prepare`` made (bubblewrap: the namespaces and the private copy with them)."""


class ShellExited(Exception):
    pass


class ResultUnavailable(RuntimeError):
    """The session's result could not be made (one line: why)."""


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


def _head(file, limit: int = RUN_OUTPUT_BYTES, binary: bool = False) -> str | bytes:
    """The first ``limit`` bytes of a program's output file, with a note when there was more (as bytes:
    ``b""`` past the limit, so a caller cannot take a part for the whole)."""
    size = file.seek(0, os.SEEK_END)
    file.seek(0)
    data = file.read(limit)
    if binary:
        return data if size <= limit else b""
    text = data.decode("utf-8", errors="replace")
    if size > limit:
        text += f"\n[… output truncated: {size - limit} of {size} bytes not read …]\n"
    return text


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def _q(path: os.PathLike | str) -> str:
    return shlex.quote(str(path))


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


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """None when bubblewrap works here, else why not (one line)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bwrap is not installed (Debian: apt-get install bubblewrap)"
    for tool in ("nsenter", "setpriv"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: apt-get install util-linux)"
    try:
        out = subprocess.run([exe, "--ro-bind", "/", "/", "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID),
                              "--gid", str(SANDBOX_GID), "--die-with-parent", "--cap-drop", "ALL", "true"],
                             capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap does not run: {exc}"
    if out.returncode != 0:
        return f"bwrap cannot create namespaces here: {out.stderr.strip().splitlines()[-1:] or out.returncode}"
    return None


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
        weakref.finalize(self, _end_process, self.holder)
        line = _readline(self.holder.stdout, 300)
        if line == b"map\n":  # its user namespace, made and waiting for the subordinate ids
            problem = self.ids.map(self.holder.pid)
            if problem:
                self.ids, self.outer_uid, self.outer_gid = None, os.geteuid(), os.getegid()
                self.own_user_warning(problem)
            self.holder.stdin.write(b"self\n" if problem else b"go\n")
            self.holder.stdin.flush()
            line = _readline(self.holder.stdout, 300)
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
            _close([ready_w, exit_r])
        weakref.finalize(self, _end_process, self.slirp)
        weakref.finalize(self, self.slirp_exit.close)
        with os.fdopen(ready_r, "rb") as ready:
            ok = _readline(ready, 30, size=1) == b"1"
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
                _end_process(proc)

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
        _warn_once(f"warning: bubblewrap's sandbox user is your own uid {os.geteuid()} ({why}): files it makes "
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
        fd = syscall_filter.fd()
        if fd is None:
            _warn_once(f"warning: bubblewrap without a system-call filter: {syscall_filter.program()}")
            return []
        fds.append(fd)
        return ["--seccomp", str(fd)]

    def kill_strays(self) -> list[int]:
        return []  # the PID namespace: nothing of a command outlives its bwrap

    def describe(self) -> str:
        return f"bubblewrap (network: {'outbound only, slirp4netns' if self.config.network else 'none'})"


def scrubbed() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def _readline(stream, timeout: float, size: int = 4096) -> bytes:
    """A line (or ``size`` bytes) from a child's pipe within ``timeout``; b"" when none came."""
    ready, _, _ = select.select([stream], [], [], timeout)
    if not ready:
        return b""
    return stream.readline(size) if size > 1 else stream.read(size)


def _end_process(proc: subprocess.Popen) -> None:
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


class ContainerEnvironment(Environment):
    """docker / podman: the workspace mounted into a container (``--network none`` unless ``network``).
    Not exercised by the tests here (no daemon on this machine); ``problem()`` says why in one line."""

    uses_cgroup = False  # the engine's own

    def __init__(self, *args, engine: str = "docker", **kwargs):
        self.name = engine  # the registered kind's (kinds.py: docker, podman)
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
        mounts += [x for p in self.remotes for x in ("-v", f"{p}:{p}:ro")]
        mounts += ["-v", f"{self.session_dir}:{self.session_dir}:ro"]
        mounts += [x for p in self.config.read_only for x in ("-v", f"{p}:{p}:ro")]
        names = [x for k in self.env() for x in ("-e", k)]  # values come from the process environment
        network = [] if self.config.network else ["--network", "none"]
        name = ["--name", self.container] if persistent else []
        return [self.name, "run", "--rm", "-i", *name, *network, *mounts, *names, "-w", str(self.root),
                self.config.image, *self.bounded(argv)]  # no trace pipe into a container: eval mode sees no git

    def tmpdir(self) -> str:
        return "/tmp"

    def prepare(self) -> None:
        super().prepare()  # a copy on the host's disk, mounted into the container

    async def stop(self) -> None:
        subprocess.run([self.name, "rm", "-f", self.container], capture_output=True, timeout=30)
        await super().stop()


def make_environment(kind: str | None, workspace: str | os.PathLike, config: EnvironmentConfig | None = None,
                     allowed_remotes: list[str | os.PathLike] = ()) -> Environment:
    """The environment ``kind`` (None: the config's, whose default is ``auto``) for a workspace."""
    config = config or EnvironmentConfig()
    kind = kind or config.kind
    if problem := kinds.unknown(kind):
        raise EnvironmentUnavailable(problem)
    if kind == kinds.AUTO:
        problem = bwrap_problem()
        if problem is None:
            kind = "bubblewrap"
        else:
            _warn_once(f"warning: commands run UNCONFINED on this host (environment 'local'): {problem}")
            kind = "local"
    return kinds.get(kind).build(workspace, config, allowed_remotes)


@functools.lru_cache(maxsize=None)
def _warn_once(message: str) -> None:
    show(message, file=sys.stderr)  # it may quote a program's output
