"""The shape of the package: layers import only downward, no import circles, the model layer knows nothing
above it (not even through importlib or a module named in a string), and one model call crosses few files."""

import ast
import asyncio
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "toolkit"

# The layers, bottom to top: a package may import its own layer or lower ones (the package root imports
# nothing). The same order is written in toolkit/__init__.py and on the architecture page of the docs.
LAYERS = [
    (0, ("toolkit", "toolkit.core")),             # secrets, file schemas, run_sync, package data
    (1, ("toolkit.llm", "toolkit.testing")),      # the model layer; the loopback server beside it
    (2, ("toolkit.record",)),                     # run log, tables, loader
    (3, ("toolkit.prompting",)),                  # the prompted structured call
    (4, ("toolkit.werewolf", "toolkit.agent")),   # the two domains
    (5, ("toolkit.analysis", "toolkit.doors")),   # metrics, ratings, plots, report; the game behind the doors
    (6, ("toolkit.study", "toolkit.export")),     # experiments, sweeps, tournaments; exports, HTML replay
    (7, ("toolkit.ui",)),                         # the notebooks' widgets
    (8, ("toolkit.cli", "toolkit.__main__")),     # the command line
]
ABOVE_LLM = ("toolkit.record", "toolkit.prompting", "toolkit.werewolf", "toolkit.agent", "toolkit.analysis",
             "toolkit.study", "toolkit.export", "toolkit.ui", "toolkit.cli")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in ROOT.rglob("*.py")}


def imports(path: Path) -> set[str]:
    """Every toolkit module a file imports, at any depth of the file (function-level imports included), or names
    in a string for a later import (``"toolkit.werewolf.players.heuristic:protect"``, what ``registry.resolve``
    imports)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("toolkit."):
            found.add(node.value.split(":")[0])
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


# Inside the agent domain the same rule, bottom to top: the execution environments (and the workspace the tools
# read and write through), the tools, the loop that runs them.
AGENT_LAYERS = ["toolkit.agent.environments", "toolkit.agent.tools", "toolkit.agent.loop"]


def test_inside_the_agent_the_environments_know_no_tool_and_the_tools_no_loop():
    def rank(module: str) -> int | None:
        return next((i for i, p in enumerate(AGENT_LAYERS) if module == p or module.startswith(p + ".")), None)

    wrong = [f"{name} imports {target}" for name, path in modules().items() if rank(name) is not None
             for target in imports(path) if rank(target) is not None and rank(target) > rank(name)]
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
    from toolkit.record.run_log import Run
    from toolkit.werewolf.game import GameConfig, play_game

    stacks: list[set[str]] = []

    def profile(frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        is_request = code.co_name == "complete" and code.co_filename.endswith("openai_backend.py")
        is_row = code.co_name == "write" and code.co_filename.endswith("run_log.py") and \
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
    # cli → game (runner: step → decide) is above this; the call itself (the endpoint's health awaits the model in
    # the decision's task, so it is on the stack):
    assert files <= {"toolkit/werewolf/game.py", "toolkit/prompting/structured_call.py", "toolkit/llm/health.py",
                     "toolkit/llm/model.py", "toolkit/llm/openai_backend.py", "toolkit/record/run_log.py"}, files


def test_the_package_root_holds_only_packages():
    """`ls toolkit/` shows the layers: every module lives in a package named for its concept."""
    loose = sorted(p.name for p in ROOT.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert not loose, f"modules outside a layer package: {loose}"
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    named = {prefix.split(".")[1] for _, prefixes in LAYERS for prefix in prefixes if prefix.count(".") == 1}
    assert packages == named - {"__main__"}, (packages, named)


def test_inside_werewolf_the_rules_and_the_seat_import_nothing_above_them():
    """Inside ``toolkit.werewolf`` the order is engine (the rules) < seat (a seat's view and decisions) < players <
    the modules at its top (the runner ``game``, the recorder, replay, the ledger check): a module imports only
    its own level or lower ones."""
    level = {"toolkit.werewolf.engine": 0, "toolkit.werewolf.seat": 1, "toolkit.werewolf.players": 2,
             "toolkit.werewolf.kaggle": 3}

    def of(module: str) -> int | None:
        if not module.startswith("toolkit.werewolf"):
            return None
        return next((n for prefix, n in level.items() if module == prefix or module.startswith(prefix + ".")), 3)

    wrong = [f"{name} imports {target}" for name, path in modules().items() if of(name) is not None
             for target in imports(path) if of(target) is not None and of(target) > of(name)
             and target != "toolkit.werewolf"]
    assert not wrong, "\n".join(wrong)


def test_discussions_and_votes_do_not_import_the_rules_that_use_them():
    """``rules.Game`` asks the preset's discussion and vote; they read the game through ``engine.table.Table`` (a
    Protocol), so no module of theirs imports ``rules`` (not even for typing: that drew a circle). ``Game`` has
    every member the Protocol names."""
    from toolkit.werewolf.engine.preset import load_preset
    from toolkit.werewolf.engine.rules import Game
    from toolkit.werewolf.engine.table import Table

    protocols = {n: p for n, p in modules().items()
                 if n.startswith(("toolkit.werewolf.engine.discussions", "toolkit.werewolf.engine.votes"))}
    wrong = [f"{n} imports {t}" for n, p in protocols.items() for t in imports(p)
             if t == "toolkit.werewolf.engine.rules" or t.startswith("toolkit.werewolf.engine.rules.")]
    assert not wrong, "\n".join(wrong)
    game = Game(load_preset("classic7"), seed=1)
    members = {*Table.__annotations__, *(n for n in vars(Table) if not n.startswith("_"))}
    assert members >= {"talk", "emit", "around", "vote_queue"}
    assert [m for m in sorted(members) if not hasattr(game, m)] == []


def test_no_module_imports_another_modules_private_name():
    """A name with a leading ``_`` is its module's own (free to change without a caller elsewhere breaking): a name
    another module needs is public (issue 46: ``preset`` took ``votes._...``; the report's rates and the loader's
    key hashes were taken the same way)."""
    taken = [f"{name} imports {node.module}.{a.name}" for name, path in modules().items()
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("toolkit")
             for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    assert not taken, taken
