"""What comes back from a session, handled on the host as data: never a folder the sandbox wrote.

The environment makes the result inside the sandbox (``collect.py``) and writes it to a file of the
host's; here it is taken in:

- a **git bundle** (a git workspace) is fetched into the user's repository as ``refs/agent/<session>/…``
  (``result``: the working tree at the end, ``start``: at the start, ``heads/<branch>``: the agent's
  branches), by the host's git, in the user's repository, with its system and global configuration off and
  hooks, fsmonitor and external protocols disabled on the command line, and every object checked
  (``transfer.fsckObjects``). Nothing the sandbox wrote is read as configuration; the working tree is
  untouched.
- a **tar archive** (a plain folder) is kept as ``.agent/results/<session>.tar``.

``apply`` merges it when the user asks (``engineer --apply SESSION``): the diff from ``start`` to
``result`` applied with ``git apply`` (which refuses paths in ``.git`` and writes through no link), or the
archive unpacked with Python's ``data`` filter (no links out, no devices or FIFOs, no set-id bits), no
``.git`` or ``.agent`` part in any name, at most ``MAX_MEMBERS`` members and ``MAX_BYTES`` bytes.
``push`` sends a fetched branch to an allowed remote (a pull request), from the user's repository.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

from toolkit.agent.environments.collect import GIT_SAFETY, flags
from toolkit.core.secrets import redact

SAFE = flags({**GIT_SAFETY, "transfer.fsckObjects": "true", "fetch.fsckObjects": "true", "core.sshCommand": "ssh"})
MAX_MEMBERS = 100_000
MAX_BYTES = 4 * 2**30


class ResultError(ValueError):
    """The result cannot be taken in or applied (one line: why)."""


def git(repo: Path, *args: str, input: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """The host's git in the user's repository: no system or global configuration, no hooks."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent", "GIT_TERMINAL_PROMPT": "0",
           "GIT_AUTHOR_NAME": "toolkit", "GIT_AUTHOR_EMAIL": "toolkit@example.invalid",
           "GIT_COMMITTER_NAME": "toolkit", "GIT_COMMITTER_EMAIL": "toolkit@example.invalid"}
    out = subprocess.run(["git", *SAFE, "-C", str(repo), *args], input=input, capture_output=True, env=env,
                         timeout=600)
    if check and out.returncode != 0:
        raise ResultError(f"git {args[0]}: {redact(out.stderr.decode(errors='replace').strip()[-300:])}")
    return out


def is_git(folder: Path) -> bool:
    return (Path(folder) / ".git").exists()


def take(folder: Path, session: str, made: Path, start: str = "") -> str:
    """Take a result file in; returns one line saying where it is."""
    folder = Path(folder)
    if made.suffix == ".bundle":
        prefix = f"refs/agent/{session}"
        git(folder, "fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head",
            "--force", str(made), f"refs/toolkit/result:{prefix}/result", f"refs/toolkit/start:{prefix}/start",
            f"refs/heads/*:{prefix}/heads/*")
        if start and git(folder, "rev-parse", f"{prefix}/start").stdout.decode().strip() != start:
            raise ResultError("the result's start is not the working tree the session began with; not taken")
        changed = git(folder, "diff", "--name-only", f"{prefix}/start", f"{prefix}/result").stdout.decode()
        n = len(changed.splitlines())
        return f"{prefix}/result ({n} file{'s' if n != 1 else ''} changed; apply with engineer --apply {session})"
    target = folder / ".agent" / "results" / f"{session}.tar"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(made, target)
    return f"{target} (apply with engineer --apply {session})"


def apply(folder: Path, session: str) -> str:
    """Merge a session's result into the user's folder; returns one line saying what changed."""
    folder = Path(folder)
    if not re.fullmatch(r"[A-Za-z0-9._-]+", session):
        raise ResultError(f"--apply {session}: not a session id")
    archive = folder / ".agent" / "results" / f"{session}.tar"
    if is_git(folder) and git(folder, "rev-parse", "--verify", "-q", f"refs/agent/{session}/result",
                              check=False).returncode == 0:
        prefix = f"refs/agent/{session}"
        patch = git(folder, "diff", "--binary", "--no-ext-diff", "--no-textconv", f"{prefix}/start",
                    f"{prefix}/result").stdout
        if not patch.strip():
            return "nothing to apply: the session changed no file"
        git(folder, "apply", "--whitespace=nowarn", "-", input=patch)
        n = len(git(folder, "apply", "--numstat", "-", input=patch).stdout.splitlines())
        return f"applied {n} changed file{'s' if n != 1 else ''} from {prefix}/result to the working tree"
    if archive.is_file():
        return unpack(archive, folder)
    raise ResultError(f"--apply {session}: no result of that session in {folder}")


def unpack(archive: Path, folder: Path) -> str:
    """A plain folder's result unpacked as data."""
    with tarfile.open(archive, mode="r:") as tar:
        members, total = [], 0
        for member in tar:
            parts = Path(member.name).parts
            if ".git" in parts or (parts and parts[0] == ".agent"):
                raise ResultError(f"{archive.name}: {member.name!r} is refused (a .git or .agent path)")
            total += max(member.size, 0)
            members.append(member)
            if len(members) > MAX_MEMBERS or total > MAX_BYTES:
                raise ResultError(f"{archive.name}: more than {MAX_MEMBERS} members or {MAX_BYTES} bytes; refused")
        try:
            tar.extractall(folder, members=members, filter="data")
        except (tarfile.FilterError, OSError) as exc:
            raise ResultError(f"{archive.name}: {exc}") from None
    return f"unpacked {len(members)} entries from {archive.name} into {folder}"


def push(folder: Path, session: str, branch: str, remote: str) -> str:
    """Push the fetched ``heads/<branch>`` of a session to ``remote`` (an allowed URL or path)."""
    git(folder, "push", "--quiet", "--no-verify", remote, f"refs/agent/{session}/heads/{branch}:refs/heads/{branch}")
    return f"pushed {branch} to {remote}"
