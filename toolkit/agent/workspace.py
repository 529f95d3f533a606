"""The folder an agent works in. Every path a tool takes is resolved here and refused if it leaves the
workspace: absolute paths, ``..`` escapes and symlinks that point outside."""

from __future__ import annotations

import os
from pathlib import Path

from toolkit.agent.tools import ToolError

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")


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

    def rel(self, path: Path) -> str:
        return str(path.resolve().relative_to(self.root))

    def private(self) -> Path:
        """``.agent/``: backups, trajectories and pull-request records, kept out of git."""
        folder = self.root / ".agent"
        folder.mkdir(exist_ok=True)
        return folder


def scrubbed_env() -> dict[str, str]:
    """The environment without API keys and other secrets, for anything the agent runs."""
    return {k: v for k, v in os.environ.items() if not any(w in k.upper() for w in SECRET_WORDS)}
