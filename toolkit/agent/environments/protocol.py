"""The protocol every environment follows: one persistent bash per session (``execute``, ``shell.Shell``), one-off
programs and the result (``run``, ``helper``, ``collect``: ``programs.Programs``), the Deployer's server
(``serve``) and the session's end (``stop``). Every command gets an allow-list environment (PATH, HOME inside the
copy, LANG/LC_*/TZ, TERM=dumb, NO_COLOR=1, git's safety settings, what the role passes in ``pass_env``), never
the parent's. Eval mode's git detection reads git's trace2 events (what git actually ran), confirmed by the
repository's refs (``collect.py refs``). What each kind confines: docs/environments.md."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
import uuid
import weakref
from pathlib import Path

from toolkit.agent.environments import holder, hostgit
from toolkit.agent.environments.cgroup import Cgroup
from toolkit.agent.environments.manifest import manifest
from toolkit.agent.environments.config import (EVAL_GIT_COMMANDS, GIT_SAFETY, HELPERS, HERE, HOME_GITCONFIG, NO_PUSH,
                                               PASSED_ENV, PUSH_PREFIXES, TRACE_FD, EnvironmentConfig,
                                               EnvironmentUnavailable)
from toolkit.agent.environments.procs import descendants, kill_all, warn_once
from toolkit.agent.environments.programs import Programs
from toolkit.agent.environments.shell import Shell
from toolkit.agent.environments.trace import TraceReader
from toolkit.core.secrets import redact


class Environment(Shell, Programs):
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
        # the commit the user's HEAD named as the copy was made ("" for none yet; ``start_commit``): a pull
        # request's commit is made on it, so it shows the session's change only, however the user's branch moved
        self.start_head = hostgit.head(self.source) if self.is_git else None
        # the folder's files as they were when the session began (applying deletes what the session deleted,
        # if the user has not changed it since): the host reads the user's own folder, once
        self.start_files = manifest(self.source) if private else None
        self.root = self.source
        self.proc: asyncio.subprocess.Process | None = None
        self._lock: asyncio.Lock | None = None
        self.deadline: float | None = None  # time.perf_counter() past which every command is cut short
        self.cgroups: list[Cgroup] = []
        self.memory_cgroup = False
        self.start_tips: list[str] | None = None  # a git workspace's HEAD and branches at the start
        self.refs = ""  # collect.py's digest of the repository's refs, as eval mode last saw it
        try:  # an environment that could not be made leaves nothing behind (cgroups, namespaces, copy)
            if self.uses_cgroup:
                self.make_cgroups()
            self.prepare()
            if self.is_git:
                lines = self.helper("collect.py", "start", timeout=120).stdout.split()
                self.refs = lines[0] if lines and re.fullmatch(r"[0-9a-f]{64}", lines[0]) else ""
                self.start_tips = [t for t in lines[1:] if re.fullmatch(r"[0-9a-f]{40}", t)]
                self.start_head = self.start_commit(self.start_head, hostgit.head(self.source))
        except BaseException:
            self.discard()
            raise

    def start_commit(self, before: str | None, after: str | None) -> str | None:
        """The user's ``HEAD`` as the host read it before the copy was made and after: the same, or (the user
        committed meanwhile) the one the copy holds (its ``HEAD``, first of ``start_tips``)."""
        if before == after:
            return before
        return next((tip for tip in (self.start_tips or [])[:1] if tip in (before, after)), before)

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
                warn_once(f"warning: limits.{'processes' if controller == 'pids' else 'memory_mb'} is not a "
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
            kill_all([self.proc.pid, *descendants(self.proc.pid)])
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
    # ------------------------------------------------------------------ the Deployer's server
    async def serve(self, folder: str) -> str:
        """Start the static server on ``folder`` (relative to the workspace) inside the environment; return
        its URL (127.0.0.1 as seen from the environment's network: the host's for ``local``, the sandbox's
        own loopback otherwise).
        The port comes back as the command's output (the shell's pipe, within the command's deadline) and
        only a number is taken from it: no file is read, nothing else of what the sandbox prints is used."""
        script = self.session_dir / "static_server.py"  # read-only inside the sandbox
        served, root = quote(self.root / folder), quote(self.root)
        result = await self.execute(f"( cd / && python3 -I {quote(script)} {served} {root} "
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
            kill_all(found)
            killed += found
        return killed

    def discard(self) -> None:
        """The synchronous end: kill whatever is left of the session, remove its private folder."""
        if self.proc is not None and self.proc.returncode is None:
            kill_all([self.proc.pid, *descendants(self.proc.pid)])
        self.trace.close()
        for cgroup in self.cgroups:
            cgroup.remove()
        self.release()
        shutil.rmtree(self.session_dir, ignore_errors=True)

    def release(self) -> None:
        """Let go of what ``prepare`` made (bubblewrap: the namespaces and the private copy with them)."""


def quote(path: os.PathLike | str) -> str:
    return shlex.quote(str(path))
