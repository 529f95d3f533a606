"""The host's git on the sandbox's result, in the user's repository (or a scratch one beside it), under bounds
of its own: every git here is a child with ``RLIMIT_AS``/``RLIMIT_DATA`` (memory), ``RLIMIT_CPU``,
``RLIMIT_FSIZE`` (the largest file it may write) and a wall clock (its whole process group killed past it),
so whatever size the result claims, no git of the host holds more than ``Bounds`` allow. It runs with no
system or global configuration, hooks, fsmonitor, external diff or external protocols, one thread and small
pack windows; the commands used here run no filter (``cat-file``, ``diff --raw``, ``hash-object --no-filters``).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from toolkit.agent.environments.collect import GIT_SAFETY, flags
from toolkit.core.secrets import redact

SAFE = flags({**GIT_SAFETY, "transfer.fsckObjects": "true", "fetch.fsckObjects": "true", "core.sshCommand": "ssh",
              "pack.threads": "1", "core.packedGitWindowSize": "32m", "core.packedGitLimit": "256m",
              "core.deltaBaseCacheLimit": "16m", "core.bigFileThreshold": "16m", "core.autocrlf": "false",
              "diff.external": "", "core.attributesFile": "/dev/null"})
MiB = 2**20


class ResultError(ValueError):
    """The result cannot be taken in or applied (one line: why)."""


@dataclass(frozen=True)
class Bounds:
    """What one git of the intake may use: ``objects`` is the largest object (a file) the session could have
    made (``min(disk_mb, file_size_mb)``), from which its memory follows (a delta's base and result at once)."""

    objects: int = 2048 * MiB
    cpu_s: int = 300
    wall_s: float = 600
    file_bytes: int = 4096 * MiB

    @classmethod
    def of(cls, limits, file_bytes: int = 0) -> "Bounds":
        """From a session's ``Limits``; ``file_bytes``: the most one file git writes (e.g. the pack it keeps)."""
        objects = min(limits.disk_mb, limits.file_size_mb) * MiB
        return cls(objects, file_bytes=max(file_bytes, 0) + objects + 64 * MiB)

    @property
    def memory(self) -> int:
        return 2 * self.objects + 256 * MiB

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


def env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent", "GIT_TERMINAL_PROMPT": "0",
            "MALLOC_ARENA_MAX": "1",
            "GIT_AUTHOR_NAME": "toolkit", "GIT_AUTHOR_EMAIL": "toolkit@example.invalid",
            "GIT_COMMITTER_NAME": "toolkit", "GIT_COMMITTER_EMAIL": "toolkit@example.invalid"}


def git(repo: Path, *args: str, input: bytes | None = None, check: bool = True, bounds: Bounds = Bounds(),
        stdout=subprocess.PIPE, stdin=subprocess.PIPE) -> subprocess.CompletedProcess:
    """git ``args`` in ``repo`` within ``bounds``; ``ResultError`` (one line) when it fails and ``check``."""
    with subprocess.Popen([*bounds.prlimit(), "git", *SAFE, "-C", str(repo), *args], stdin=stdin,
                          stdout=stdout, stderr=subprocess.PIPE, env=env(), start_new_session=True) as proc:
        try:
            out, err = proc.communicate(input, timeout=bounds.wall_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise ResultError(f"git {args[0]}: still running after {bounds.wall_s:g} s (the intake's wall clock); "
                              "refused") from None
        finally:
            try:  # nothing it started outlives it
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check and done.returncode != 0:
        why = " ".join(err.decode(errors="replace").split())[-300:]  # one line
        if done.returncode < 0:
            why = f"killed by signal {-done.returncode} (past the intake's bounds: {bounds.memory // MiB} MiB " \
                  f"of memory, {bounds.cpu_s} s of CPU, files of {bounds.file_bytes // MiB} MiB); {why}"
        raise ResultError(f"git {args[0]}: {redact(why)}")
    return done
