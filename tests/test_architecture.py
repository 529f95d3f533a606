"""The shape of the package: layers import only downward, no import circles, the model layer knows nothing
above it (not even through importlib or a module named in a string), and one model call crosses few files."""

import ast
import asyncio
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "toolkit"

# Lower number = lower layer. A module may import its own layer or lower ones. The package root and the
# sync runner import nothing; the loopback test server sits beside the model layer.
LAYERS = [
    (0, ("toolkit", "toolkit.sync", "toolkit.secrets", "toolkit.schemas")),
    (1, ("toolkit.llm", "toolkit.fake_server")),
    (2, ("toolkit.tables", "toolkit.record", "toolkit.results")),
    (3, ("toolkit.actions",)),
    (4, ("toolkit.werewolf", "toolkit.agent")),
    (5, ("toolkit.experiments", "toolkit.sweep", "toolkit.analysis", "toolkit.plots", "toolkit.report",
         "toolkit.tournament", "toolkit.prompt_cache")),
    (6, ("toolkit.ui",)),
    (7, ("toolkit.cli", "toolkit.__main__", "toolkit.preflight")),
]
ABOVE_LLM = ("toolkit.werewolf", "toolkit.agent", "toolkit.results", "toolkit.widgets", "toolkit.ui",
             "toolkit.cli", "toolkit.record", "toolkit.actions", "toolkit.experiments", "toolkit.sweep")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in ROOT.rglob("*.py")}


def imports(path: Path) -> set[str]:
    """Every toolkit module a file imports, at any depth of the file (function-level imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    known = modules()
    return {m for m in found if m in known and m.startswith("toolkit")}


def layer(module: str) -> int:
    best = None
    for number, prefixes in LAYERS:
        for prefix in prefixes:
            if module == prefix or (prefix != "toolkit" and module.startswith(prefix + ".")):
                if best is None or len(prefix) > best[1]:
                    best = (number, len(prefix))
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[0]


def test_every_module_has_a_layer_and_imports_only_downward():
    wrong = []
    for name, path in modules().items():
        for target in imports(path):
            if target != "toolkit" and layer(target) > layer(name):
                wrong.append(f"{name} (layer {layer(name)}) imports {target} (layer {layer(target)})")
    assert not wrong, "\n".join(wrong)


def test_no_import_circles():
    graph = {name: {t for t in imports(path) if t not in ("toolkit", name)} for name, path in modules().items()}
    # a package's __init__ importing its submodules is not a circle with them
    packages = {n for n, p in modules().items() if p.name == "__init__.py"}
    graph = {n: {t for t in ts if not (n in packages and t.startswith(n + "."))} for n, ts in graph.items()}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                raise AssertionError("import circle: " + " -> ".join(path[path.index(nxt):] + [nxt]))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node)


def test_the_model_layer_imports_nothing_above_it_not_even_by_name():
    for path in (ROOT / "llm").rglob("*.py"):
        tree = ast.parse(path.read_text())
        strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        names = imports(path) | {s.split(":")[0] for s in strings if s.startswith("toolkit.")}
        bad = sorted(n for n in names if n.startswith(ABOVE_LLM))
        assert not bad, f"{path.name} reaches above the model layer: {bad}"
        assert "importlib" not in {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}


def test_the_checker_catches_an_upward_import(tmp_path, monkeypatch):
    """The layer test is not vacuous: a model-layer module importing the game is reported."""
    fake = tmp_path / "toolkit" / "llm" / "bad.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("from toolkit.werewolf.game import GameRunner\n")
    (tmp_path / "toolkit" / "werewolf").mkdir()
    (tmp_path / "toolkit" / "werewolf" / "game.py").write_text("")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path / "toolkit")
    with pytest.raises(AssertionError, match="toolkit.llm.bad .*imports toolkit.werewolf.game"):
        test_every_module_has_a_layer_and_imports_only_downward()


def test_one_model_call_crosses_few_files(server, tmp_path):
    """From the seat's decision to the HTTP request and back to the `calls` row: the toolkit files on the
    stack when the request goes out and when the row is written (a real game against the loopback server)."""
    from toolkit.record import Run
    from toolkit.werewolf.game import GameConfig, play_game

    stacks: list[set[str]] = []

    def profile(frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        is_request = code.co_name == "complete" and code.co_filename.endswith("openai_backend.py")
        is_row = code.co_name == "write" and code.co_filename.endswith("record.py") and \
            frame.f_locals.get("table") == "calls"
        if is_request or is_row:
            files, f = set(), frame
            while f is not None:
                if "/toolkit/" in f.f_code.co_filename:
                    files.add(str(Path(f.f_code.co_filename).relative_to(ROOT.parent)))
                f = f.f_back
            stacks.append(files)

    sys.setprofile(profile)
    try:
        with Run(tmp_path) as run:
            asyncio.run(play_game(GameConfig(seed=1, model=f"openai:det@{server.base_url}", max_days=1), run))
    finally:
        sys.setprofile(None)
    assert stacks
    files = set().union(*stacks)
    # cli → game (runner: step → decide) is above this; the call itself:
    assert files <= {"toolkit/werewolf/game.py", "toolkit/actions.py", "toolkit/llm/model.py",
                     "toolkit/llm/openai_backend.py", "toolkit/record.py"}, files
