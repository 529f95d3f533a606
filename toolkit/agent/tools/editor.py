"""A file editor confined to the workspace, with a 100-line window and safe writes.

Every read and write goes through the session's environment (``Workspace`` → ``fileop.py`` inside it), so
the host never touches a file the sandbox can change: links leading out are refused there, only regular
files are read (a FIFO or a leased file answers at once), a file larger than the read limit is refused.
Every write is atomic (temp file + rename) and backed up first; an optional Python syntax check reverts an
edit that breaks the file and says why; an edit is anchored by line numbers *and* the expected text of its
first and last lines (as in the seed), so a stale view cannot clobber the wrong lines.
"""

from __future__ import annotations

import fnmatch
import posixpath

from toolkit.agent.tools.base import ToolError, tool
from toolkit.agent.environments.workspace import Workspace

WINDOW = 100


class Editor:
    def __init__(self, workspace: Workspace, check_python: bool = True):
        self.workspace = workspace
        self.check_python = check_python
        self.current: str | None = None  # the open file, relative to the workspace
        self.top = 1  # first line of the window

    # ------------------------------------------------------------------ viewing
    def _lines(self, rel: str) -> list[str]:
        return [line.rstrip("\r") for line in _split(self.workspace.read_text(rel, errors="replace"))]

    def view(self) -> str:
        if self.current is None:
            return "(no file open)"
        lines = self._lines(self.current)
        self.top = max(1, min(self.top, max(1, len(lines) - WINDOW + 1)))
        end = min(len(lines), self.top + WINDOW - 1)
        body = "\n".join(f"{i:>4}|{lines[i - 1]}" for i in range(self.top, end + 1))
        above, below = self.top - 1, len(lines) - end
        return (f"[File: {self.current} ({len(lines)} lines total)]\n"
                + (f"({above} more lines above)\n" if above else "") + body
                + (f"\n({below} more lines below)" if below else ""))

    @tool
    def open_file(self, path: str, line_number: int = 1) -> str:
        """Open a file and show 100 lines around ``line_number``, with line numbers.

        Args:
            path: file path relative to the workspace.
            line_number: the line to show near the top of the window.
        """
        target = self.workspace.path(path)
        kind = self.workspace.kind(target)
        if kind == "missing":
            raise ToolError(f"{path}: no such file")
        if kind == "outside":
            raise ToolError(f"{path}: outside the workspace (.. or a symlink leading out) is refused")
        if kind == "dir":
            raise ToolError(f"{path} is a folder")
        if kind != "file":
            raise ToolError(f"{path} is not a regular file (a FIFO, socket or device is not opened)")
        self.current = target
        self.top = max(1, line_number - 10)
        return self.view()

    @tool
    def goto_line(self, line_number: int) -> str:
        """Move the window of the open file to a line.

        Args:
            line_number: the line to show.
        """
        self._need_open()
        self.top = max(1, line_number - 10)
        return self.view()

    @tool
    def scroll_down(self) -> str:
        """Show the next 100 lines of the open file."""
        self._need_open()
        self.top += WINDOW
        return self.view()

    @tool
    def scroll_up(self) -> str:
        """Show the previous 100 lines of the open file."""
        self._need_open()
        self.top = max(1, self.top - WINDOW)
        return self.view()

    @tool
    def search_file(self, term: str, path: str | None = None) -> str:
        """Find a text in a file (the open one by default); lists matching lines with their numbers.

        Args:
            term: the text to find.
            path: file path relative to the workspace; the open file if omitted.
        """
        target = self.workspace.path(path) if path else self._need_open()
        hits = [f"{i}: {line}" for i, line in enumerate(self._lines(target), 1) if term in line]
        return f"{len(hits)} matches for {term!r} in {target}" + (
            "\n" + "\n".join(hits[:50]) if hits else "")

    @tool
    def search_dir(self, term: str, dir: str = ".") -> str:
        """Find a text in every file under a folder; lists files with their match counts.

        Args:
            term: the text to find.
            dir: folder relative to the workspace.
        """
        hits, large, unread = self.workspace.count(term, self.workspace.path(dir))
        counts = [f"{rel}: {n}" for rel, n in hits]
        skipped = (f"\n({len(large)} files larger than {self.workspace.max_read_bytes} bytes not searched: "
                   f"{', '.join(large[:5])})" if large else "")
        for why in dict.fromkeys(w for _, w in unread):  # each reason once, in the order met
            names = [rel for rel, w in unread if w == why]
            skipped += f"\n({len(names)} files not searched, {why}: {', '.join(names[:5])})"
        return f"{len(counts)} files contain {term!r}" + ("\n" + "\n".join(counts[:100]) if counts else "") + skipped

    @tool
    def find_file(self, name: str, dir: str = ".") -> str:
        """Find files whose name contains ``name`` under a folder.

        Args:
            name: part of the file name, or a glob such as *.py.
            dir: folder relative to the workspace.
        """
        pattern = name if any(c in name for c in "*?[") else f"*{name}*"
        found = [rel for rel, _ in self.workspace.walk(self.workspace.path(dir))
                 if fnmatch.fnmatch(posixpath.basename(rel), pattern)]
        return f"{len(found)} files match {name!r}" + ("\n" + "\n".join(found[:100]) if found else "")

    # ------------------------------------------------------------------ changing files
    @tool(exclusive=True)
    def create_file(self, path: str, content: str = "") -> str:
        """Create a new file (refused if it exists: use write_file or edit_file_by_replace).

        Args:
            path: file path relative to the workspace.
            content: the file's text.
        """
        target = self.workspace.path(path)
        if self.workspace.kind(target) != "missing":
            raise ToolError(f"{path} exists; use write_file to replace it or edit_file_by_replace to change it")
        self._save(target, content, None)
        return self.open_file(path)

    @tool(exclusive=True)
    def write_file(self, path: str, content: str) -> str:
        """Replace a whole file's text (creates it if needed). Refuses to empty a non-empty file.

        Args:
            path: file path relative to the workspace.
            content: the complete new text.
        """
        target = self.workspace.path(path)
        old = self._existing(target, path)
        if not content.strip() and old and old.strip():
            raise ToolError(f"refusing to empty {path}; delete it with the terminal if that is really meant")
        self._save(target, content, old)
        return self.open_file(path)

    @tool(exclusive=True)
    def edit_file_by_replace(self, path: str, first_replaced_line_number: int, first_replaced_line_content: str,
                             last_replaced_line_number: int, last_replaced_line_content: str,
                             new_content: str) -> str:
        """Replace lines first..last (inclusive) of a file with new text. The expected text of the first and
        last lines must match the file, so a stale view cannot change the wrong lines.

        Args:
            path: file path relative to the workspace.
            first_replaced_line_number: number of the first line to replace.
            first_replaced_line_content: that line's current text (exactly).
            last_replaced_line_number: number of the last line to replace.
            last_replaced_line_content: that line's current text (exactly).
            new_content: the replacement text (may be several lines, or empty to delete the lines).
        """
        target = self.workspace.path(path)
        old = self._existing(target, path, must_exist=True)
        lines = _split(old)
        first, last = first_replaced_line_number, last_replaced_line_number
        if not 1 <= first <= last <= len(lines):
            raise ToolError(f"lines {first}-{last} are not in {path} (it has {len(lines)} lines)")
        for n, expected in ((first, first_replaced_line_content), (last, last_replaced_line_content)):
            if lines[n - 1].strip() != expected.strip():
                raise ToolError(f"line {n} of {path} is {lines[n - 1].rstrip(chr(13))!r}, not {expected!r}; open "
                                "the file again and use the current text")
        # only the replaced lines change: the others keep their bytes (CRLF, form feeds) as they were
        eol = "\r\n" if lines[last - 1].endswith("\r") else "\n"
        new_lines = lines[: first - 1] + (_split(new_content, eol) if new_content else []) + lines[last:]
        text = "\n".join(new_lines) + ("\n" if old.endswith("\n") or not old else "")
        if not text.strip() and old.strip():
            raise ToolError(f"refusing to empty {path}")
        self._save(target, text, old)
        self.current, self.top = target, max(1, first - 10)
        return self.view()

    @tool(exclusive=True)
    def insert_content_at_line(self, path: str, line_number: int, content: str) -> str:
        """Insert text before a line (use the number one past the end to add at the end).

        Args:
            path: file path relative to the workspace.
            line_number: the new text goes before this line.
            content: the text to insert.
        """
        target = self.workspace.path(path)
        old = self._existing(target, path, must_exist=True)
        lines = _split(old)
        if not 1 <= line_number <= len(lines) + 1:
            raise ToolError(f"line {line_number} is not in {path} (it has {len(lines)} lines)")
        eol = "\r\n" if lines and lines[0].endswith("\r") else "\n"
        new_lines = lines[: line_number - 1] + _split(content, eol) + lines[line_number - 1:]
        self._save(target, "\n".join(new_lines) + "\n", old)
        self.current, self.top = target, max(1, line_number - 10)
        return self.view()

    @tool(exclusive=True)
    def append_file(self, path: str, content: str) -> str:
        """Add text at the end of a file (creates it if needed).

        Args:
            path: file path relative to the workspace.
            content: the text to add.
        """
        target = self.workspace.path(path)
        old = self._existing(target, path)
        base = old or ""
        if base and not base.endswith("\n"):
            base += "\n"
        self._save(target, base + content + ("" if content.endswith("\n") else "\n"), old)
        self.current = target
        self.top = max(1, len(self._lines(target)) - WINDOW + 1)
        return self.view()

    # ------------------------------------------------------------------ safety
    def _existing(self, target: str, path: str, must_exist: bool = False) -> str | None:
        """The current text of a file about to change (None: it does not exist); a FIFO, socket or device
        is refused rather than read."""
        kind = self.workspace.kind(target)
        if kind == "missing":
            if must_exist:
                raise ToolError(f"{path}: no such file")
            return None
        if kind == "outside":
            raise ToolError(f"{path}: outside the workspace (.. or a symlink leading out) is refused")
        if kind != "file":
            raise ToolError(f"{path} is not a regular file")
        try:
            return self.workspace.read_text(target)
        except UnicodeDecodeError:
            raise ToolError(f"{path} is not UTF-8 text; change it with the terminal") from None

    def _need_open(self) -> str:
        if self.current is None:
            raise ToolError("no file is open; use open_file first")
        return self.current

    def _save(self, target: str, text: str, old: str | None) -> None:
        if self.check_python and target.endswith(".py"):
            try:
                compile(text, target, "exec")
            except SyntaxError as exc:
                raise ToolError(f"the edit was not applied: it would make {target} invalid "
                                f"Python (line {exc.lineno}: {exc.msg}); the file is unchanged") from None
        # atomic inside the environment (readers see the old file or the new one), the old text backed up
        self.workspace.write_bytes(target, text.encode("utf-8"), backup=old is not None)


def _split(text: str, eol: str = "\n") -> list[str]:
    """Lines split at "\n" only (a form feed or a lone CR is part of its line, as for grep -n); a trailing
    newline ends the last line rather than starting an empty one. With ``eol="\r\n"`` each line keeps a CR."""
    if not text:
        return []
    lines = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
    if eol == "\r\n":
        lines = [line if line.endswith("\r") else line + "\r" for line in lines]
    return lines
