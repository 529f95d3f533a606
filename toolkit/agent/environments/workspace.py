"""The folder an agent works in. Every path a tool takes is resolved here and refused if it leaves the
workspace: absolute paths, ``..`` escapes and symlinks that point outside."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from toolkit.agent.tools.base import ToolError


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

    def private(self, sub: str | None = None) -> Path:
        """``.agent/`` (or a folder in it): backups, trajectories and pull-request records, kept out of git.
        The toolkit owns it: a symlink or file the agent put in its place is removed first, so nothing the
        toolkit writes there can be redirected out of the workspace."""
        folder = _real_dir(self.root / ".agent")
        return _real_dir(folder / sub) if sub else folder

    def write_private(self, relative: str, text: str) -> Path:
        """Write ``.agent/<relative>`` (one folder level at most) atomically through a fresh temporary file,
        so a symlink or FIFO the agent left at that name is replaced, never followed or blocked on."""
        *sub, name = relative.split("/")
        folder = self.private(sub[0] if sub else None)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, folder / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return folder / name


def _real_dir(path: Path) -> Path:
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    path.mkdir(exist_ok=True)
    return path


def scrubbed_env() -> dict[str, str]:
    """An allow-list environment (PATH with this Python first, HOME, LANG/LC_*/TZ, TERM=dumb, NO_COLOR) for
    programs the toolkit itself runs outside an execution environment; never the parent's secrets."""
    parent_path = os.environ.get("PATH", "").split(os.pathsep)
    path = os.pathsep.join(dict.fromkeys([os.path.dirname(sys.executable), *parent_path]))
    env = {"PATH": path, "TERM": "dumb", "NO_COLOR": "1", "GIT_TERMINAL_PROMPT": "0"}
    env.update({k: os.environ[k] for k in ("HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ") if k in os.environ})
    return env
