"""Git in the workspace, run by the session's execution environment with hooks and other host-side
command execution off (``-c core.hooksPath=/dev/null`` and the environment's GIT_CONFIG_* settings).
``create_pull`` makes a branch, commits, pushes to the configured remote and records the pull request
(title, body, diff; secrets redacted) as a file under ``.agent/pulls/``, since no hosting service is
reachable from here. Pushes go only to a remote inside the workspace or one the environment was given
(``allowed_remotes`` / ``writable``)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

from toolkit.agent.environments.environment import Environment, LocalEnvironment
from toolkit.agent.tools.base import ToolError, tool
from toolkit.agent.environments.workspace import Workspace
from toolkit.core.secrets import mask_url, redact, redact_obj

SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "protocol.ext.allow=never")


class Git:
    def __init__(self, workspace: Workspace, remote: str = "origin", environment: Environment | None = None):
        self.workspace = workspace
        self.remote = remote
        self.environment = environment or LocalEnvironment(workspace.root)

    def _git(self, *args: str, check: bool = True) -> str:
        out = self.environment.run(["git", *SAFE, *args], timeout=60)
        if check and out.returncode != 0:
            last = (out.stderr or out.stdout).strip().splitlines()[-1:]
            raise ToolError(f"git {args[0]} failed: {redact(str(last))}")
        return redact((out.stdout + out.stderr).strip())

    def remote_path(self, remote: str) -> Path | None:
        """The local folder a remote points to (None: not a local path)."""
        url = self._git("remote", "get-url", remote)
        if "://" in url:
            parts = urlsplit(url)
            return Path(parts.path) if parts.scheme == "file" else None
        if ":" in url.split("/")[0]:  # scp-like host:path
            return None
        return (self.workspace.root / url).resolve() if not url.startswith("/") else Path(url).resolve()

    def check_push(self, remote: str) -> None:
        if self._git("remote", "get-url", remote) in self.environment.remote_urls:
            return
        path = self.remote_path(remote)
        allowed = [self.workspace.root, *self.environment.writable]
        if path is None or not any(path == a or a in path.parents for a in allowed):
            where = mask_url(self._git("remote", "get-url", remote))
            raise ToolError(f"pushing to {remote} ({where}) is refused: pushes go only to a remote inside the "
                            "workspace or one the session was configured with (allowed_remotes)")

    @tool
    def status(self) -> str:
        """Show the working tree status."""
        return self._git("status", "--short", "--branch")

    @tool
    def diff(self, staged: bool = False) -> str:
        """Show changes not yet committed.

        Args:
            staged: show staged changes instead of unstaged ones.
        """
        return self._git("diff", *(["--cached"] if staged else [])) or "(no changes)"

    @tool
    def add(self, paths: list[str]) -> str:
        """Stage files for the next commit.

        Args:
            paths: paths relative to the workspace (["."] for everything).
        """
        for p in paths:
            self.workspace.path(p)
        self._git("add", "--", *paths)
        return self._git("status", "--short")

    @tool(exclusive=True)
    def commit(self, message: str) -> str:
        """Commit the staged changes.

        Args:
            message: the commit message.
        """
        return self._git("commit", "-m", message)

    @tool
    def branch(self, name: str) -> str:
        """Create a branch and switch to it.

        Args:
            name: the branch name.
        """
        return self._git("checkout", "-b", name)

    @tool
    def log(self, n: int = 10) -> str:
        """Show recent commits.

        Args:
            n: how many.
        """
        return self._git("log", f"-{n}", "--oneline")

    @tool(exclusive=True)
    def create_pull(self, branch: str, title: str, body: str = "") -> str:
        """Open a pull request: branch, commit everything, push to the remote, and record the request.

        Args:
            branch: the new branch's name.
            title: the pull request's title (also the commit message).
            body: its description.
        """
        self.check_push(self.remote)
        base = self._git("rev-parse", "--abbrev-ref", "HEAD")
        self._git("checkout", "-b", branch)
        self._git("add", "-A")
        self._git("commit", "-m", title, check=False)
        diff = self._git("diff", f"{base}...{branch}", check=False)
        self._git("push", self.remote, branch)
        record = redact_obj({"title": title, "body": body, "base": base, "head": branch, "remote": self.remote,
                             "diff": diff})
        self.workspace.write_private(f"pulls/{branch.replace('/', '_')}.json", json.dumps(record, indent=2))
        record = f".agent/pulls/{branch.replace('/', '_')}.json"
        return f"Pushed {branch} to {self.remote}; pull request recorded in {record}"
