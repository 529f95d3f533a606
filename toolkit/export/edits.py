"""The diff each editor command of an engineer session made, read from its trajectory alone: the command's
arguments say which lines it replaced and with what, and the editor's earlier views of the file (``[File: PATH
(N lines total)]`` and numbered lines) supply the replaced lines the arguments do not spell out. A line no view
showed is marked ``…`` rather than guessed. A terminal command whose output is a diff (``git diff``) is shown as it
printed it. Pure: no file is read.
"""

from __future__ import annotations

import re

VIEW = re.compile(r"^\[File: (?P<path>.+) \(\d+ lines total\)\]$", re.M)
LINE = re.compile(r"^ *(\d+)\|(.*)$")


def views(output: str) -> dict[str, dict[int, str]]:
    """The numbered lines each ``[File: ...]`` view in an editor's output shows, per path."""
    out: dict[str, dict[int, str]] = {}
    marks = list(VIEW.finditer(output))
    for k, m in enumerate(marks):
        end = marks[k + 1].start() if k + 1 < len(marks) else len(output)
        lines = out.setdefault(m["path"], {})
        for text in output[m.end():end].splitlines():
            got = LINE.match(text)
            if got:
                lines[int(got[1])] = got[2]
    return out


def _split(text: str) -> list[str]:
    return text.split("\n") if text else []


def edit_diff(name: str, args: dict, known: dict[int, str]) -> list[tuple[str, str]] | None:
    """``(kind, text)`` lines of the diff an editor command made, as a unified diff prints them (kind: ``file``,
    ``hunk``, ``del``, ``add``, ``gap``), or None for a command that changes no file. ``known``: the file's lines
    as last seen."""
    tool = name.rsplit(".", 1)[-1]
    path = str(args.get("path", "?"))
    if tool == "edit_file_by_replace":
        first, last = int(args["first_replaced_line_number"]), int(args["last_replaced_line_number"])
        new = _split(str(args.get("new_content", "")))
        old: list[tuple[str, str]] = []
        for n in range(first, last + 1):
            text = (args["first_replaced_line_content"] if n == first else
                    args["last_replaced_line_content"] if n == last else known.get(n))
            if text is None:
                if not old or old[-1][0] != "gap":
                    old.append(("gap", f"… line {n} and after, not shown before the edit"))
            else:
                old.append(("del", f"-{text}"))
        return [("file", f"--- a/{path}"), ("file", f"+++ b/{path}"),
                ("hunk", f"@@ -{first},{last - first + 1} +{first},{len(new)} @@"), *old,
                *(("add", f"+{t}") for t in new)]
    if tool == "insert_content_at_line":
        new = _split(str(args.get("content", "")))
        at = int(args["line_number"])
        return [("file", f"--- a/{path}"), ("file", f"+++ b/{path}"), ("hunk", f"@@ -{at},0 +{at},{len(new)} @@"),
                *(("add", f"+{t}") for t in new)]
    if tool in ("create_file", "write_file", "append_file"):
        new = _split(str(args.get("content", "")).removesuffix("\n"))
        head = {"create_file": [("file", "--- /dev/null"), ("file", f"+++ b/{path}"), ("hunk", f"@@ +1,{len(new)} @@")],
                "write_file": [("file", f"--- a/{path}"), ("file", f"+++ b/{path}"),
                               ("hunk", f"@@ the whole file, {len(new)} lines @@")],
                "append_file": [("file", f"--- a/{path}"), ("file", f"+++ b/{path}"),
                                ("hunk", f"@@ at the end, +{len(new)} lines @@")]}[tool]
        return [*head, *(("add", f"+{t}") for t in new)]
    return None


def printed_diff(output: str) -> list[tuple[str, str]] | None:
    """A command's output that is a unified diff, as ``(kind, text)`` lines; None when it is not one."""
    if "diff --git" not in output and "\n@@ " not in output:
        return None
    kinds = []
    for text in output.splitlines():
        kind = ("file" if text.startswith(("diff --git", "--- ", "+++ ", "index ")) else "hunk" if text.startswith("@@")
                else "add" if text.startswith("+") else "del" if text.startswith("-") else "same")
        kinds.append((kind, text))
    return kinds


def session_diffs(memory: list[dict], ok: dict[tuple[int, int], bool] | None = None) -> dict[tuple[int, int], list]:
    """For each ``(step, command index)`` that changed a file or printed a diff, its diff lines. ``ok`` says which
    commands succeeded (the tool-call rows); a failed edit changed nothing and gets no diff."""
    seen: dict[str, dict[int, str]] = {}
    out: dict[tuple[int, int], list] = {}
    for i, m in enumerate(memory):
        step = m.get("step", i + 1)
        outputs = m.get("observations") or []
        for j, command in enumerate(m.get("commands") or []):
            output = str(outputs[j]) if j < len(outputs) else ""
            name = command.get("command_name", "") if isinstance(command, dict) else str(command)
            args = command.get("args", {}) if isinstance(command, dict) else {}
            succeeded = (ok or {}).get((step, j), not output.startswith(f"{name}:"))
            diff = None
            if succeeded and isinstance(args, dict) and name.startswith("Editor."):
                try:
                    diff = edit_diff(name, args, seen.get(str(args.get("path")), {}))
                except (KeyError, TypeError, ValueError):  # arguments the editor itself would have refused
                    diff = None
                if diff is not None:
                    seen.pop(str(args.get("path")), None)  # its line numbers moved: only the new view counts
            elif succeeded:
                diff = printed_diff(output)
            for path, lines in views(output).items():
                seen.setdefault(path, {}).update(lines)
            if diff:
                out[(step, j)] = diff
    return out
