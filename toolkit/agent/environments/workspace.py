"""The folder an agent works in, as its tools name it. Every path a tool takes is checked here lexically
(absolute paths and ``..`` escapes refused) and then resolved *inside* the session's environment by
``fileop.py``, which follows links there and refuses one that leads out: the host never opens, walks or
writes a file in the sandbox's space, it sends a request and gets data back (``Workspace.read_bytes`` …).
The host's own records (trajectories, results, pull-request records) go to ``<folder>/.agent/`` of the
user's folder, which the sandbox never sees."""

from __future__ import annotations

import json
import os
import posixpath
import sys
import tempfile
from pathlib import Path

from toolkit.agent.environments.environment import Environment, LocalEnvironment


class ToolError(Exception):
    """A tool's own refusal or failure, shown to the model as one line. Declared here, below the tools, because
    the workspace (what every tool reads and writes through) refuses with it too; ``toolkit.agent.tools.base``
    re-exports it."""


class Workspace:
    """``root`` is the user's folder; ``environment`` the session's, where every command and file operation of
    its tools runs. There is no default: a missing environment is an error, never the unconfined host
    (``Workspace.on_host`` says so by name, for a tool used on its own). Reads are capped at ``max_read_bytes``."""

    def __init__(self, root: str | Path, environment: Environment | None, max_read_bytes: int = 10 * 2**20):
        if not isinstance(environment, Environment):
            raise TypeError(f"Workspace {root}: needs the environment its tools run in (make_environment(kind, "
                            f"folder), or Workspace.on_host(folder) for the unconfined host), not {environment!r}")
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.environment = environment
        self.max_read_bytes = max_read_bytes

    @classmethod
    def on_host(cls, root: str | Path, max_read_bytes: int = 10 * 2**20) -> "Workspace":
        """The folder in place on the host, UNCONFINED (``local``, no private copy): a tool used on its own, by
        choice."""
        Path(root).mkdir(parents=True, exist_ok=True)
        return cls(root, LocalEnvironment(Path(root), private=False), max_read_bytes)

    def path(self, relative: str, must_exist: bool = False) -> str:
        """``relative`` normalised (``a/./b`` → ``a/b``); refused when absolute, empty or leading out by ``..``.
        Links are the environment's business (``fileop.py`` refuses one leading out)."""
        if not relative or not str(relative).strip():
            raise ToolError("a path is required")
        if os.path.isabs(relative):
            raise ToolError(f"{relative}: absolute paths are refused; use a path relative to the workspace")
        norm = posixpath.normpath(str(relative))
        if norm == ".." or norm.startswith("../"):
            raise ToolError(f"{relative}: outside the workspace (.. or a symlink leading out) is refused")
        if must_exist and self.kind(norm) == "missing":
            raise ToolError(f"{relative}: no such file")
        return norm

    # ------------------------------------------------------------------ through the environment
    def _op(self, *args: str, input: bytes | None = None, binary: bool = False, max_output: int | None = None):
        out = self.environment.helper("fileop.py", *args, input=input, binary=binary,
                                      max_output=max_output or 2**20)
        if out.returncode != 0:
            line = (out.stderr.strip().splitlines() or [f"failed ({out.returncode})"])[-1]
            raise ToolError(line)
        return out.stdout

    def kind(self, rel: str) -> str:
        """"file", "dir", "other", "missing" or "outside"."""
        return self._op("kind", rel).strip()

    def read_bytes(self, rel: str) -> bytes:
        return self._op("read", rel, str(self.max_read_bytes), binary=True, max_output=self.max_read_bytes + 1)

    def read_text(self, rel: str, errors: str = "strict") -> str:
        return self.read_bytes(rel).decode("utf-8", errors=errors)

    def write_bytes(self, rel: str, data: bytes, backup: bool = False) -> None:
        self._op("write", rel, "1" if backup else "0", input=data)

    def walk(self, rel: str = ".") -> list[tuple[str, str]]:
        """Every entry under a folder as (path, kind), sorted; links not followed; .git and .agent skipped."""
        return [tuple(x) for x in json.loads(self._op("walk", rel, max_output=64 * 2**20))]

    def count(self, term: str, rel: str = ".") -> tuple[list[tuple[str, int]], list[str], list[tuple[str, str]]]:
        """How often ``term`` occurs in each text file under a folder, the files too large to search, and the
        files that could not be read, with why (``busy``: another process holds a lease on it)."""
        found = json.loads(self._op("count", rel, term, str(self.max_read_bytes), max_output=64 * 2**20))
        return [tuple(x) for x in found["hits"]], found["large"], [tuple(x) for x in found["skipped"]]

    # ------------------------------------------------------------------ the host's records
    def private(self, sub: str | None = None) -> Path:
        """``<folder>/.agent`` (or a folder in it) of the user's folder: the host's records."""
        folder = self.root / ".agent" / sub if sub else self.root / ".agent"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def write_private(self, relative: str, text: str) -> Path:
        """Write ``.agent/<relative>`` of the user's folder atomically (a fresh temporary file, then rename:
        a link at that name is replaced, not followed)."""
        path = self.root / ".agent" / relative
        folder = self.root
        for name in path.relative_to(self.root).parts[:-1]:  # a link or file in the way is replaced
            folder = folder / name
            if os.path.lexists(folder) and (folder.is_symlink() or not folder.is_dir()):
                folder.unlink()
            folder.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
        return path


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
# A workspace with one of these anywhere on its path is refused (credentials, a repository's internals).
SECRET_FOLDERS = {".ssh", ".gnupg", ".git", ".aws", ".kube", ".docker"}
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
    for home in homes:  # ~/.ssh, ~/.config/git, ~/.local/bin…: what the user's programs read and run
        if home in real.parents and real.relative_to(home).parts[0].startswith("."):
            return f"a folder of your settings and programs ({home / real.relative_to(home).parts[0]}) is refused"
    if any(part in SECRET_FOLDERS for part in real.parts):
        return "a folder of credentials or of a repository's internals is refused"
    if holds(TOOLKIT_TREE) or real == TOOLKIT_TREE / "toolkit" or TOOLKIT_TREE / "toolkit" in real.parents:
        return "the toolkit's own tree is refused"
    for env in {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.executable).resolve().parents[1]}:
        if holds(env):
            return f"it holds the Python environment ({env})"
    if results is not None and holds(results):
        return f"it holds the results folder ({results})"
    return None
