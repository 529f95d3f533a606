"""One logging policy: what a user should see is a ``warnings.warn`` (a notebook user can filter or silence it;
the command line prints it as one line), diagnostics go to ``logging``, and only the command line
(``toolkit/cli/``) prints. A module run as a program prints its own output: its ``main()`` or its
``if __name__ == "__main__":`` block (the local model server, the loopback server, the sandbox's helpers, the
tables' reference). Read from every file's syntax tree."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The one function every terminal line goes through (the command line's, the agent's human channel at a
# terminal, the sandbox's unconfined warning): ``printable.show`` makes model text printable and masks secrets.
TERMINAL = {"toolkit/core/printable.py"}


def _is_output(call: ast.Call) -> bool:
    f = call.func
    if isinstance(f, ast.Name) and f.id == "print":
        return True
    return (isinstance(f, ast.Attribute) and f.attr == "write" and isinstance(f.value, ast.Attribute)
            and f.value.attr in ("stdout", "stderr") and isinstance(f.value.value, ast.Name)
            and f.value.value.id == "sys")


def _is_program_entry(node: ast.AST) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "main":
        return True
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


def printing_lines(source: str) -> list[int]:
    """The lines of a module that print outside its program entry."""
    found: list[int] = []

    def visit(node: ast.AST, inside: bool) -> None:
        inside = inside or _is_program_entry(node)
        if isinstance(node, ast.Call) and _is_output(node) and not inside:
            found.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(ast.parse(source), False)
    return found


def test_only_the_command_line_prints():
    printing = {}
    for path in sorted((ROOT / "toolkit").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel.startswith("toolkit/cli/"):
            continue
        lines = printing_lines(path.read_text())
        if lines:
            printing[rel] = lines
    unexpected = {f: lines for f, lines in printing.items() if f not in TERMINAL}
    assert not unexpected, f"print outside toolkit/cli (use warnings.warn or logging): {unexpected}"
    assert set(printing) == TERMINAL, "printable.show no longer prints: the terminal's one gate moved"


def test_the_checker_sees_a_print_and_a_stderr_write_but_not_a_programs_own_output():
    source = ("import sys\n"
              "def f():\n    print('x')\n"
              "def g():\n    sys.stderr.write('y')\n"
              "def main():\n    print('served')\n"
              "if __name__ == '__main__':\n    print('ok')\n")
    assert printing_lines(source) == [3, 5]
