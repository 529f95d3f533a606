"""A role's ``environment:`` block and the settings every environment shares (git's safety settings, the
allow-listed names, the sandbox's fixed paths)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolkit.agent.environments import collect, kinds
from toolkit.agent.environments.limits import Limits

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
