"""The folder an agent works in. Every path a tool takes is resolved here and refused if it leaves the
workspace: absolute paths, ``..`` escapes and symlinks that point outside. ``path()`` checks a path for the
tool's message; the reading and writing itself goes through ``tree`` (``beneath.py``: resolved by the kernel
beneath the workspace's descriptor, regular files only, size-capped), so what the sandbox changes between
the check and the use cannot redirect the host."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from toolkit.agent.environments.beneath import Tree
from toolkit.agent.tools.base import ToolError


class Workspace:
    def __init__(self, root: str | Path, max_read_bytes: int = 10 * 2**20):
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.tree = Tree(self.root, max_read_bytes)

    def path(self, relative: str, must_exist: bool = False) -> Path:
        if not relative or not str(relative).strip():
            raise ToolError("a path is required")
        raw = Path(relative)
        if raw.is_absolute():
            raise ToolError(f"{relative}: absolute paths are refused; use a path relative to the workspace")
        try:
            resolved = (self.root / raw).resolve()  # follows symlinks, so a link out of the workspace is caught
        except OSError as exc:  # a link changed while it was being read
            raise ToolError(f"{relative}: changed while being checked ({exc.strerror}); try again") from None
        if resolved != self.root and self.root not in resolved.parents:
            raise ToolError(f"{relative}: outside the workspace (.. or a symlink leading out) is refused")
        if must_exist and not os.path.lexists(resolved):
            raise ToolError(f"{relative}: no such file")
        return resolved

    def contains(self, path: Path) -> bool:
        """Whether ``path``, symlinks resolved, is inside the workspace."""
        resolved = path.resolve()
        return resolved == self.root or self.root in resolved.parents

    def rel(self, path: Path) -> str:
        """``path`` relative to the workspace (lexically when it is below it, else with links resolved)."""
        try:
            return str(Path(path).relative_to(self.root))
        except ValueError:
            return str(Path(path).resolve().relative_to(self.root))

    def private(self, sub: str | None = None) -> Path:
        """``.agent/`` (or a folder in it): backups, trajectories and pull-request records, kept out of git.
        The toolkit owns it: a symlink or file the agent put in its place is removed first."""
        rel = f".agent/{sub}" if sub else ".agent"
        os.close(self.tree.real_dir(rel))
        return self.root / rel

    def write_private(self, relative: str, text: str) -> Path:
        """Write ``.agent/<relative>`` atomically through a fresh temporary file created in the folder's
        descriptor, so a symlink or FIFO the agent left at that name (or in place of a folder on the way)
        is replaced, never followed or blocked on."""
        self.tree.write_bytes(f".agent/{relative}", text.encode("utf-8"), agent_dir=True)
        return self.root / ".agent" / relative


def scrubbed_env() -> dict[str, str]:
    """An allow-list environment (PATH with this Python first, HOME, LANG/LC_*/TZ, TERM=dumb, NO_COLOR) for
    programs the toolkit itself runs outside an execution environment; never the parent's secrets."""
    parent_path = os.environ.get("PATH", "").split(os.pathsep)
    path = os.pathsep.join(dict.fromkeys([os.path.dirname(sys.executable), *parent_path]))
    env = {"PATH": path, "TERM": "dumb", "NO_COLOR": "1", "GIT_TERMINAL_PROMPT": "0"}
    env.update({k: os.environ[k] for k in ("HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ") if k in os.environ})
    return env


# A workspace equal to one of these, or inside one, is refused (system folders).
SYSTEM_FOLDERS = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin",
                  "/sys", "/usr", "/var/lib", "/var/log", "/var/cache", "/var/spool", "/var/mail", "/var/run")
# A workspace equal to one of these is refused (they hold everyone's folders); one below them is fine.
SHARED_FOLDERS = ("/", "/home", "/root", "/tmp", "/var", "/var/tmp", "/opt", "/srv", "/mnt", "/media", "/work")
TOOLKIT_TREE = Path(__file__).resolve().parents[3]  # the folder holding the toolkit package


def check_workspace(path: str | os.PathLike, results: str | os.PathLike | None = None) -> Path:
    """Refuse a workspace the agent must not be given the run of (raises ``FileError``, one line): ``/``,
    the home folder or a folder holding it, a system folder or one inside it, the toolkit's own tree (or a
    folder holding it, or one inside its package), a folder holding the results folder or the Python
    environment. Returns the resolved path."""
    from toolkit.core.files import FileError

    real = Path(path).expanduser().resolve()
    why = _danger(real, Path(results).resolve() if results is not None else None)
    if why:
        raise FileError(f"--workspace {path}: {why}; give a folder of its own for the agent (e.g. a new, empty one)")
    return real


def _danger(real: Path, results: Path | None) -> str | None:
    def holds(folder: Path) -> bool:  # real is folder or one of its parents
        return real == folder or real in folder.parents

    if str(real) in SHARED_FOLDERS:
        return "a shared system folder is refused"
    if any(real == Path(d) or Path(d) in real.parents for d in SYSTEM_FOLDERS):
        return "a system folder is refused"
    homes = {Path(os.path.expanduser("~")).resolve()}
    if os.environ.get("HOME"):
        homes.add(Path(os.environ["HOME"]).resolve())
    if any(holds(h) for h in homes):
        return "the home folder (or a folder holding it) is refused"
    if holds(TOOLKIT_TREE) or real == TOOLKIT_TREE / "toolkit" or TOOLKIT_TREE / "toolkit" in real.parents:
        return "the toolkit's own tree is refused"
    for env in {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.executable).resolve().parents[1]}:
        if holds(env):
            return f"it holds the Python environment ({env})"
    if results is not None and holds(results):
        return f"it holds the results folder ({results})"
    return None
