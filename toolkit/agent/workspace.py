"""The folder an agent works in. Every path a tool takes is resolved here and refused if it leaves the
workspace: absolute paths, ``..`` escapes and symlinks that point outside."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from toolkit.agent.tools import ToolError


class Workspace:
    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, relative: str, must_exist: bool = False) -> Path:
        if not relative or not str(relative).strip():
            raise ToolError("a path is required")
        raw = Path(relative)
        if raw.is_absolute():
            raise ToolError(f"{relative}: absolute paths are refused; use a path relative to the workspace")
        resolved = (self.root / raw).resolve()  # follows symlinks, so a link out of the workspace is caught
        if resolved != self.root and self.root not in resolved.parents:
            raise ToolError(f"{relative}: outside the workspace (.. or a symlink leading out) is refused")
        if must_exist and not resolved.exists():
            raise ToolError(f"{relative}: no such file")
        return resolved

    def contains(self, path: Path) -> bool:
        """Whether ``path``, symlinks resolved, is inside the workspace."""
        resolved = path.resolve()
        return resolved == self.root or self.root in resolved.parents

    def rel(self, path: Path) -> str:
        return str(path.resolve().relative_to(self.root))

    def private(self) -> Path:
        """``.agent/``: backups, trajectories and pull-request records, kept out of git."""
        folder = self.root / ".agent"
        folder.mkdir(exist_ok=True)
        return folder


def scrubbed_env() -> dict[str, str]:
    """An allow-list environment (PATH with this Python first, HOME, LANG/LC_*/TZ, TERM=dumb, NO_COLOR) for
    programs the toolkit itself runs outside an execution environment; never the parent's secrets."""
    path = os.pathsep.join(dict.fromkeys([os.path.dirname(sys.executable), *os.environ.get("PATH", "").split(os.pathsep)]))
    env = {"PATH": path, "TERM": "dumb", "NO_COLOR": "1", "GIT_TERMINAL_PROMPT": "0"}
    env.update({k: os.environ[k] for k in ("HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ") if k in os.environ})
    return env
