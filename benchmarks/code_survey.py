"""How heavy the package is to read, before and after a change: lines per package, modules over 600 lines,
functions over 60 lines, functions with many parameters (an AST survey of ``toolkit/``).

    python benchmarks/code_survey.py                      # this checkout
    python benchmarks/code_survey.py --against 51c499d    # that commit beside this checkout, in one table

Where this machine has the ``duplicates`` tool (places sharing six or more lines of the same shape), its count of
pairs in ``toolkit/`` is a row too ("-" without it: the tool is not one of the project's dependencies).

A function's length is its source lines from ``def`` to its last line (decorators and docstring included);
parameters count every name a caller can pass (positional, keyword-only, ``*args``, ``**kwargs``), ``self`` and
``cls`` left out. A long function's reason is a comment line right above it (``def`` or its decorators).
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONG_FUNCTION = 60
LONG_MODULE = 600
MANY_PARAMETERS = 8


@dataclass
class Survey:
    lines: Counter = field(default_factory=Counter)  # package (toolkit/<first folder>) -> lines
    long_modules: list[tuple[str, int]] = field(default_factory=list)
    long_functions: list[tuple[str, int]] = field(default_factory=list)
    unexplained: list[tuple[str, int]] = field(default_factory=list)  # long, and no comment line above it
    wide_functions: list[tuple[str, int]] = field(default_factory=list)
    functions: int = 0
    duplicates: str = "-"  # pairs the duplicates tool finds, where it is installed


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = node.args
    names = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    n = len([x for x in names if x.arg not in ("self", "cls")])
    return n + (a.vararg is not None) + (a.kwarg is not None)


def survey(root: Path) -> Survey:
    out = Survey()
    for path in sorted((root / "toolkit").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        n = text.count("\n")
        parts = path.relative_to(root / "toolkit").parts
        out.lines[parts[0] if len(parts) > 1 else "(top)"] += n
        if n > LONG_MODULE:
            out.long_modules.append((rel, n))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.functions += 1
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = node.end_lineno - first + 1
                where = f"{rel}:{node.lineno} {node.name}"
                if length > LONG_FUNCTION:
                    out.long_functions.append((where, length))
                    if not text.splitlines()[first - 2].lstrip().startswith("#"):  # the reason, written above it
                        out.unexplained.append((where, length))
                if parameters(node) > MANY_PARAMETERS:
                    out.wide_functions.append((where, parameters(node)))
    out.duplicates = duplicates(root / "toolkit")
    return out


def duplicates(folder: Path) -> str:
    """The number of pairs ``duplicates`` lists below ``folder`` (its first line), or "-" without the tool."""
    if shutil.which("duplicates") is None:
        return "-"
    said = subprocess.run(["duplicates", "--repo", str(folder), "--seconds", "300"], capture_output=True,
                          text=True).stdout
    found = re.match(r"(\d+) pairs?", said)
    count = found.group(1) if found else "0" if said.startswith("no duplicates") else "?"
    # it ran out of time: not all was read (its first line when it paired nothing: "?")
    return count + (" (incomplete)" if re.search(r"^incomplete:", said, re.M) else "")


def checkout(rev: str, into: Path) -> Path:
    """The tree of ``rev`` (its toolkit/ only) unpacked into ``into``."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "toolkit"], check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def table(columns: dict[str, Survey]) -> str:
    names = list(columns)
    rows = [("", *names)]
    packages = sorted(set().union(*(s.lines for s in columns.values())))
    for p in packages:
        rows.append((f"lines toolkit/{p}", *(str(columns[c].lines.get(p, 0)) for c in names)))
    rows.append(("lines in all", *(str(sum(columns[c].lines.values())) for c in names)))
    rows.append(("functions", *(str(columns[c].functions) for c in names)))
    rows.append((f"modules over {LONG_MODULE} lines", *(str(len(columns[c].long_modules)) for c in names)))
    rows.append((f"functions over {LONG_FUNCTION} lines", *(str(len(columns[c].long_functions)) for c in names)))
    rows.append(("  of them without a reason written above",
                 *(str(len(columns[c].unexplained)) for c in names)))
    rows.append((f"functions over {MANY_PARAMETERS} parameters",
                 *(str(len(columns[c].wide_functions)) for c in names)))
    rows.append(("pairs of duplicated places (duplicates)", *(columns[c].duplicates for c in names)))
    width = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, width)).rstrip() for r in rows)


def listing(title: str, items: list[tuple[str, int]]) -> str:
    body = "\n".join(f"  {n:5d}  {where}" for where, n in sorted(items, key=lambda x: -x[1]))
    return f"{title}:\n{body or '  (none)'}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", metavar="REV", help="a git revision to survey beside this checkout")
    args = parser.parse_args(argv)
    columns = {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.against:
            columns[args.against] = survey(checkout(args.against, Path(tmp)))
        columns["this checkout"] = survey(ROOT)
    print(table(columns))
    now = columns["this checkout"]
    print()
    print(listing(f"functions over {LONG_FUNCTION} lines (this checkout)", now.long_functions))
    print(listing(f"functions over {MANY_PARAMETERS} parameters (this checkout)", now.wide_functions))
    print(listing(f"modules over {LONG_MODULE} lines (this checkout)", now.long_modules))


if __name__ == "__main__":
    main()
