"""Git in the workspace. ``create_pull`` makes a branch, commits, pushes to the configured remote and
records the pull request (title, body, diff) as a file under ``.agent/pulls/``, since no hosting service
is reachable from here."""

from __future__ import annotations

import json
import subprocess

from toolkit.agent.tools import ToolError, tool
from toolkit.agent.workspace import Workspace, scrubbed_env


class Git:
    def __init__(self, workspace: Workspace, remote: str = "origin"):
        self.workspace = workspace
        self.remote = remote

    def _git(self, *args: str, check: bool = True) -> str:
        out = subprocess.run(["git", *args], cwd=self.workspace.root, capture_output=True, text=True, timeout=60,
                             env={**scrubbed_env(), "GIT_TERMINAL_PROMPT": "0"})
        if check and out.returncode != 0:
            raise ToolError(f"git {args[0]} failed: {(out.stderr or out.stdout).strip().splitlines()[-1:]}")
        return (out.stdout + out.stderr).strip()

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
        base = self._git("rev-parse", "--abbrev-ref", "HEAD")
        self._git("checkout", "-b", branch)
        self._git("add", "-A")
        self._git("commit", "-m", title, check=False)
        diff = self._git("diff", f"{base}...{branch}", check=False)
        self._git("push", self.remote, branch)
        pulls = self.workspace.private() / "pulls"
        pulls.mkdir(exist_ok=True)
        record = {"title": title, "body": body, "base": base, "head": branch, "remote": self.remote, "diff": diff}
        (pulls / f"{branch.replace('/', '_')}.json").write_text(json.dumps(record, indent=2))
        return f"Pushed {branch} to {self.remote}; pull request recorded in .agent/pulls/{branch.replace('/', '_')}.json"
