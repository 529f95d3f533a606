"""Tools that are model calls of their own: ``write_new_code`` and ``CodeReview.review`` / ``fix``.
Each has its own prompt file in ``prompts/agent/`` and writes through the Editor (atomic, checked). They get
narrow dependencies: ``ask`` (a model call on the session's behalf, logged with its ids), the workspace and
the editor; never the agent."""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Literal

from pydantic import BaseModel, Field

from toolkit.prompting.structured_call import Action, ActionResult
from toolkit.agent.tools.editor import Editor
from toolkit.agent.environments.environment import Environment
from toolkit.agent.tools.base import ToolError, tool
from toolkit.agent.environments.workspace import Workspace
from toolkit.core.secrets import redact

# ask(action, values, what) -> ActionResult: a model call made for the session (see toolkit.agent.loop.session).
# a model call on the session's behalf (``Session.ask``); not the rules' ``Ask`` (a decision a seat owes)
AskModel = Callable[[Action, dict[str, Any], str], Awaitable[ActionResult]]


class Code(BaseModel):
    content: str = Field(..., description="the complete file text")


class Comment(BaseModel):
    line: int = 0
    severity: Literal["error", "warning", "style"] = "warning"
    comment: str


class Review(BaseModel):
    comments: list[Comment] = Field(default_factory=list)


WRITE_CODE = Action("write_new_code", "agent/write_code.j2", Code)
REVIEW = Action("review", "agent/review.j2", Review)
FIX = Action("fix", "agent/fix.j2", Code)


class CodeWriter:
    def __init__(self, ask: AskModel, workspace: Workspace, editor: Editor):
        self.ask, self.workspace, self.editor = ask, workspace, editor

    @tool(name="write_new_code", exclusive=True)
    async def write_new_code(self, path: str, file_description: str) -> str:
        """Write a whole new file with a separate model call, from the requirement, the plan and recent memory.

        Args:
            path: file path relative to the workspace.
            file_description: what the file must contain and do.
        """
        target = self.workspace.path(path)
        result = await self.ask(WRITE_CODE, {"path": path, "description": file_description,
                                                   "existing": _read(self.workspace, target)}, "write_new_code")
        if result.fallback:
            raise ToolError(f"no usable code came back for {path}: {result.error}")
        return self.editor.write_file(path, result.value.content)


class CodeReview:
    def __init__(self, ask: AskModel, workspace: Workspace, editor: Editor, environment: Environment | None = None):
        self.ask, self.workspace, self.editor = ask, workspace, editor
        self.environment = environment or workspace.environment
        self.last: dict[str, Review] = {}

    @tool
    async def review(self, path: str | None = None) -> str:
        """Review a file, or with no path the uncommitted git diff, with a separate model call; returns
        numbered comments (kept for fix).

        Args:
            path: file path relative to the workspace; omit it to review the uncommitted diff.
        """
        if path:
            what, code = path, _numbered(_read(self.workspace, self.workspace.path(path, must_exist=True)))
        else:
            out = self.environment.run(["git", "diff", "HEAD"])  # the environment's git settings
            if out.returncode != 0 or not out.stdout.strip():
                raise ToolError("no uncommitted diff to review (or not a git repository); give a path")
            what, code = "the uncommitted diff", redact(out.stdout)
        result = await self.ask(REVIEW, {"path": what, "code": code}, "review")
        if result.fallback:
            raise ToolError(f"the review of {what} failed: {result.error}")
        self.last[path or "diff"] = result.value
        if not result.value.comments:
            return f"No comments on {what}."
        return "\n".join(f"{i}. line {c.line} [{c.severity}] {c.comment}"
                         for i, c in enumerate(result.value.comments, 1))

    @tool(exclusive=True)
    async def fix(self, path: str) -> str:
        """Apply the last review's comments on a file with a separate model call.

        Args:
            path: file path relative to the workspace.
        """
        review = self.last.get(path)
        if review is None or not review.comments:
            raise ToolError(f"no review comments to apply for {path}; run CodeReview.review first")
        target = self.workspace.path(path, must_exist=True)
        comments = "\n".join(f"- line {c.line} [{c.severity}] {c.comment}" for c in review.comments)
        result = await self.ask(FIX, {"path": path, "code": _read(self.workspace, target), "comments": comments}, "fix")
        if result.fallback:
            raise ToolError(f"no usable fix came back for {path}: {result.error}")
        return self.editor.write_file(path, result.value.content)


def _read(workspace: Workspace, rel: str) -> str:
    """A file's text as a prompt may carry it: secrets masked; "" for a missing or non-regular file, read
    through the environment and refused past its read limit."""
    if workspace.kind(rel) != "file":
        return ""
    return redact(workspace.read_text(rel, errors="replace"))


def _numbered(text: str) -> str:
    return "\n".join(f"{i:>4}|{line}" for i, line in enumerate(text.splitlines(), 1))
