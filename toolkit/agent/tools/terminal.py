"""The Terminal tool: one persistent bash per session, run by the session's execution environment
(``environment.py``: ``bubblewrap`` confines it, ``local`` does not). Each command has a timeout that kills
everything it started; output is capped (head + tail with a marker), colour codes are stripped and secret
values redacted before the model sees it; the exit code is reported. Long-running servers in the
foreground are refused with a hint to use the Deployer (a convenience: containment does not rely on it)."""

from __future__ import annotations

import re

from toolkit.agent.environments.environment import (
    Environment,
    ShellExited,
    descendants,  # noqa: F401 (re-exported for benchmarks)
)
from toolkit.agent.tools.base import Failed, Output, ToolError, tool
from toolkit.agent.environments.workspace import Workspace
from toolkit.core.secrets import redact

SERVER_PATTERNS = re.compile(
    r"(python3? -m http\.server|\bflask run\b|\buvicorn\b|\bgunicorn\b|\bnpm (run )?(start|dev|serve)\b|"
    r"\bnpx serve\b|\bvite\b(?! build)|\bmanage\.py runserver\b|\bstreamlit run\b|\bjupyter (lab|notebook)\b|"
    r"(^|[;&|]\s*)[^;&|]*[^&]&\s*$)")
ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")


def clean(text: str) -> str:
    """What the model may see: no colour/control sequences, no secret values."""
    return redact(ANSI.sub("", text))


def _why(result) -> str:
    """What of the sandbox ended or hindered the command, for the model (its record has it too)."""
    if result.killed_by == "memory":
        return "; a process was killed by the session's memory bound"
    if result.killed_by == "processes":
        return "; the session's process bound refused a fork"
    return f"; killed by signal {result.signal}" if result.signal else ""


class Terminal:
    def __init__(self, workspace: Workspace, timeout_s: float = 60.0, max_output_chars: int = 10_000,
                 environment: Environment | None = None):
        self.workspace = workspace
        self.timeout_s = timeout_s
        self.max_output_chars = max_output_chars
        self._own = False  # the workspace's environment ends with its session (or its owner)
        self.environment = environment or workspace.environment

    @tool
    async def run_command(self, cmd: str, timeout: float | None = None) -> str:
        """Run a shell command in the workspace's persistent bash (state such as cd and variables persists).

        Args:
            cmd: the command line to run.
            timeout: seconds before the command is killed (default: the terminal's timeout).
        """
        if SERVER_PATTERNS.search(cmd.strip()):
            raise ToolError("long-running servers and background jobs are refused here; "
                            "use Deployer.deploy_to_public(dist_dir) to serve a folder")
        limit = timeout or self.timeout_s
        try:
            result = await self.environment.execute(cmd, limit, self.max_output_chars)
        except ShellExited as exc:  # its whole output, as for a failed command
            raise Failed(clean(str(exc))) from None
        text, record = clean(result.output), result.record()
        if result.timed_out:
            raise Failed(f"{text}\n[killed after {limit:g}s timeout; exit code {result.exit_code}]".strip(), record)
        out = f"{text}\n[exit code {result.exit_code}{_why(result)}]".strip()
        if result.exit_code != 0:
            raise Failed(out, record)
        return Output(out, record)

    async def close(self) -> None:
        await (self.environment.stop() if self._own else self.environment.stop_shell())
