"""The host's git, under bounds of its own: every git here (the user's repository read, the scratch repository
a pull request's commit is made in) is a child with ``RLIMIT_AS``/``RLIMIT_DATA`` (memory), ``RLIMIT_CPU``,
``RLIMIT_FSIZE`` (the largest file it may write) and a wall clock (its whole process group killed past it).
What a git prints is read piece by piece, at most ``Bounds.output`` bytes (past it, or past the one deadline,
its process group is killed and the step refused in one line). It runs with no system or global
configuration, hooks, fsmonitor, external diff or external protocols, one thread and small pack windows. It
never reads an object the sandbox made: results come back as files (``archive``), never as git's objects.
"""

from __future__ import annotations

import os
import resource
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from toolkit.agent.environments.collect import GIT_SAFETY, flags
from toolkit.core.secrets import redact

SAFE = flags({**GIT_SAFETY, "transfer.fsckObjects": "true", "fetch.fsckObjects": "true", "core.sshCommand": "ssh",
              "pack.threads": "1", "core.packedGitWindowSize": "32m", "core.packedGitLimit": "256m",
              "core.deltaBaseCacheLimit": "16m", "core.bigFileThreshold": "16m", "core.autocrlf": "false",
              "diff.external": "", "core.attributesFile": "/dev/null"})
MiB = 2**20
INTAKE_S = 600  # the host's handling of one result (take, apply or push), end to end


class ResultError(ValueError):
    """The result cannot be taken in or applied (one line: why)."""


@dataclass(frozen=True)
class Bounds:
    """What one git of the host may use: memory, CPU seconds, the largest file it writes, what it may print to
    the toolkit; ``deadline`` the end (``time.monotonic``) shared by every step of one intake or push."""

    memory: int = 4352 * MiB
    cpu_s: int = 300
    file_bytes: int = 4160 * MiB
    output: int = 64 * MiB
    deadline: float | None = None  # None: ``INTAKE_S`` from each git's start

    @classmethod
    def of(cls, limits) -> "Bounds":
        """From a session's ``Limits``, the deadline ``INTAKE_S`` from now."""
        return cls(limits.memory_mb * MiB + 256 * MiB, file_bytes=limits.disk_mb * MiB + 64 * MiB,
                   output=max(limits.inodes * 1024, 16 * MiB), deadline=time.monotonic() + INTAKE_S)

    def left(self) -> float:
        """Seconds left before the intake's deadline."""
        return INTAKE_S if self.deadline is None else self.deadline - time.monotonic()

    def prlimit(self) -> list[str]:
        """util-linux's ``prlimit`` setting them for git (and the children it starts, which inherit them): no
        Python code runs between fork and exec in the toolkit's process, which has threads."""
        return ["prlimit", f"--data={under(resource.RLIMIT_DATA, self.memory)}",
                f"--as={under(resource.RLIMIT_AS, self.memory + 1024 * MiB)}",
                f"--cpu={under(resource.RLIMIT_CPU, self.cpu_s)}",
                f"--fsize={under(resource.RLIMIT_FSIZE, self.file_bytes)}", "--core=0", "--"]


def under(kind: int, want: int) -> int:
    """``want``, or the process's own hard limit of ``kind`` when that is lower (a limit is only lowered: an
    inherited ``ulimit -v`` would otherwise make every git of the intake fail to start)."""
    hard = resource.getrlimit(kind)[1]
    return want if hard == resource.RLIM_INFINITY else min(want, hard)


USER_CONFIG = ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM")


def env(user_config: bool = False) -> dict[str, str]:
    """git's environment: no system or global configuration, or (``user_config``: reading the user's own
    settings, e.g. which files they ignore) the user's own, as their git finds it."""
    out = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent", "GIT_TERMINAL_PROMPT": "0",
           "MALLOC_ARENA_MAX": "1",
           "GIT_AUTHOR_NAME": "toolkit", "GIT_AUTHOR_EMAIL": "toolkit@example.invalid",
           "GIT_COMMITTER_NAME": "toolkit", "GIT_COMMITTER_EMAIL": "toolkit@example.invalid"}
    if user_config:
        for name in USER_CONFIG:
            out.pop(name, None)
            if name in os.environ:
                out[name] = os.environ[name]
    return out


def head(repo: Path, bounds: Bounds = Bounds()) -> str | None:
    """The commit ``HEAD`` of the user's repository names: its id, ``""`` when it has none yet (a new
    repository), None when git cannot say (not a repository, another user's)."""
    out = git(repo, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False, bounds=bounds)
    found = out.stdout.decode().strip()
    return found if out.returncode == 0 and found else "" if out.returncode == 1 and not found else None


def git(repo: Path, *args: str, check: bool = True, bounds: Bounds = Bounds(), stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL, user_config: bool = False) -> subprocess.CompletedProcess:
    """git ``args`` in ``repo`` within ``bounds``; ``ResultError`` (one line) when it fails and ``check``, and
    always when it runs past the deadline or prints more than ``bounds.output``."""
    left = bounds.left()
    if left <= 0:
        raise ResultError(f"git {args[0]}: not started, past the intake's wall clock ({INTAKE_S} s); refused")
    with subprocess.Popen([*bounds.prlimit(), "git", *SAFE, "-C", str(repo), *args], stdin=stdin,
                          stdout=stdout, stderr=subprocess.PIPE, env=env(user_config),
                          start_new_session=True) as proc:
        try:
            out, err, over = drain(proc, left, bounds.output)
        finally:
            try:  # nothing it started outlives it
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
    if over:
        raise ResultError(f"git {args[0]}: {over}; refused")
    done = subprocess.CompletedProcess(proc.args, proc.returncode, bytes(out), bytes(err))
    if check and done.returncode != 0:
        why = " ".join(done.stderr.decode(errors="replace").split())[-300:]  # one line
        if done.returncode < 0:
            why = f"killed by signal {-done.returncode} (past the intake's bounds: {bounds.memory // MiB} MiB " \
                  f"of memory, {bounds.cpu_s} s of CPU, files of {bounds.file_bytes // MiB} MiB); {why}"
        raise ResultError(f"git {args[0]}: {redact(why)}")
    return done


def drain(proc: subprocess.Popen, seconds: float, most: int) -> tuple[bytearray, bytearray, str]:
    """``proc``'s output (at most ``most`` bytes kept) and the end of its errors, read as they come until it
    exits; the third item says why it was cut short (the wall clock, the output bound), else ``""``."""
    end, out, err = time.monotonic() + seconds, bytearray(), bytearray()
    with selectors.DefaultSelector() as sel:
        for pipe, buf in ((proc.stdout, out), (proc.stderr, err)):
            if pipe is not None:
                sel.register(pipe, selectors.EVENT_READ, buf)
        while sel.get_map():
            if time.monotonic() >= end:
                return out, err, f"still running past the intake's wall clock ({INTAKE_S} s)"
            for key, _ in sel.select(end - time.monotonic()):
                piece = os.read(key.fd, 2**16)
                if not piece:
                    sel.unregister(key.fileobj)
                key.data.extend(piece)
                if len(out) > most:
                    return out, err, f"printed more than {most} bytes (the intake's bound on what it reads)"
                del err[:-4096]
    try:
        proc.wait(max(end - time.monotonic(), 0))
    except subprocess.TimeoutExpired:
        return out, err, f"still running past the intake's wall clock ({INTAKE_S} s)"
    return out, err, ""
