"""Git in the workspace, run by the session's execution environment with hooks and other command
execution off (the environment's GIT_CONFIG_* settings: ``collect.GIT_SAFETY``, above any repository's).
``create_pull`` makes a branch and commits in the session's copy; the files come back to the host as data
(the archive, ``result.py``) and the host commits them on the session's start commit (the user's ``HEAD`` when
it began) in a scratch repository and pushes that commit to the remote, which must be one the session was given
(``allowed_remotes``), read from the user's repository, not the sandbox's, as a branch that is not the remote's
default one nor anyone else's (a new one, or the one this session pushed before).
The pull request (title, body, diff; secrets redacted) is recorded under ``.agent/pulls/`` of the user's
folder, since no hosting service is reachable from here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from toolkit.agent.environments import result
from toolkit.agent.environments.environment import Environment, ResultUnavailable
from toolkit.agent.tools.base import ToolError, tool
from toolkit.agent.environments.workspace import Workspace
from toolkit.core.secrets import mask_url, redact, redact_obj


class Git:
    """``land`` takes the session's result in on the host (``Session.land``) and returns the session id
    its archive is kept under; without it (a tool used on its own, in place) pushes run in the environment."""

    def __init__(self, workspace: Workspace, remote: str = "origin", environment: Environment | None = None,
                 land: Callable[[], str] | None = None):
        self.workspace = workspace
        self.remote = remote
        self.environment = environment or workspace.environment
        self.land = land
        self.pushed: dict[str, str] = {}  # branch -> the commit the host pushed there for this session

    def _git(self, *args: str, check: bool = True) -> str:
        out = self.environment.run(["git", *args], timeout=60)
        if check and out.returncode != 0:
            last = (out.stderr or out.stdout).strip().splitlines()[-1:]
            raise ToolError(f"git {args[0]} failed: {redact(str(last))}")
        return redact((out.stdout + out.stderr).strip())

    def allowed_remote(self, remote: str) -> str:
        """The remote's URL as the user's repository names it, if the session may push there."""
        out = result.git(self.workspace.root, "remote", "get-url", remote, check=False)
        url = out.stdout.decode(errors="replace").strip()
        if out.returncode != 0 or not url:
            raise ToolError(f"pushing to {remote} is refused: the workspace's repository has no remote {remote}")
        if url in self.environment.remote_urls:
            return url
        path = Path(url.removeprefix("file://"))
        path = (self.workspace.root / path).resolve() if not path.is_absolute() else path.resolve()
        allowed = [*self.environment.remotes, *self.environment.writable]
        if not self.environment.private:  # in place (a tool on its own): a remote inside the folder too
            allowed.append(self.workspace.root)
        if "://" in url.removeprefix("file://") or not any(path == a or a in path.parents for a in allowed):
            raise ToolError(f"pushing to {remote} ({mask_url(url)}) is refused: pushes go only to a remote the "
                            "session was configured with (allowed_remotes)")
        return str(path)

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
        url = self.allowed_remote(self.remote)
        try:  # never the remote's default branch nor another's, refused before anything is done
            result.claim(self.workspace.root, url, branch, self.pushed.get(branch, ""))
        except result.ResultError as exc:
            raise ToolError(str(exc)) from None
        base = self._git("rev-parse", "--abbrev-ref", "HEAD")
        if base != branch:
            self._git("checkout", "-b", branch)
        self._git("add", "-A")
        self._git("commit", "-m", title, check=False)
        if self.land is None or not self.environment.private:
            diff = self._git("diff", f"{base}...{branch}", check=False)
            self._git("push", self.remote, branch)
            self.pushed[branch] = self._git("rev-parse", branch)
        else:  # the files come back as data; the host commits them on the session's start and pushes
            try:
                pushed = result.push(self.workspace.root, self.land(), branch, url, f"{title}\n\n{body}".strip(),
                                     start=getattr(self.environment, "start_head", None),
                                     mine=self.pushed.get(branch, ""))
            except (result.ResultError, ResultUnavailable) as exc:
                raise ToolError(str(exc)) from None
            self.pushed[branch] = pushed.commit
            base, diff = pushed.base or "(none: a root commit)", pushed.diff
        record = redact_obj({"title": title, "body": body, "base": base, "head": branch, "remote": self.remote,
                             "diff": diff})
        self.workspace.write_private(f"pulls/{branch.replace('/', '_')}.json", json.dumps(record, indent=2))
        record = f".agent/pulls/{branch.replace('/', '_')}.json"
        return f"Pushed {branch} to {self.remote}; pull request recorded in {record}"
