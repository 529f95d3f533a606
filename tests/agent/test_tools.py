"""The engineer's tools, for real: a persistent bash, files on disk, git, a served folder."""

import asyncio
import os
import urllib.request

import pytest

from toolkit.agent.tools.deployer import Deployer, ImageGetter
from toolkit.agent.tools.editor import Editor
from toolkit.agent.tools.terminal import Terminal
from toolkit.agent.tools.base import Failed, Toolbox, ToolError, spec_of, tool
from toolkit.agent.environments.workspace import Workspace


@tool(exclusive=True)
def resize(path: str, width: int, keep_ratio: bool = True) -> str:
    """Resize an image.

    Args:
        path: the image file.
        width: new width in pixels.
        keep_ratio: keep the aspect ratio.
    """
    return f"{path} {width} {keep_ratio}"


def test_one_declaration_gives_schema_and_dispatch():
    spec = spec_of(resize)
    schema = spec.schema()
    assert schema["description"] == "Resize an image."
    props = schema["parameters"]["properties"]
    assert props["width"]["type"] == "integer" and props["width"]["description"] == "new width in pixels."
    assert schema["parameters"]["required"] == ["path", "width"] and spec.exclusive
    box = Toolbox().add(resize)
    assert asyncio.run(box.call("resize", {"path": "a.png", "width": "40"})).output == "a.png 40 True"


@pytest.mark.parametrize("name,args,expected", [
    ("resize", {"path": "a.png"}, "width: Field required; usage: resize(path, width, keep_ratio=…)"),
    ("resize", {"path": "a.png", "width": "wide"}, "width: Input should be a valid integer"),
    ("resize", {"path": "a", "width": 1, "colour": "red"}, "colour: Extra inputs are not permitted"),
    ("resise", {}, "Unknown command 'resise'. Did you mean resize?"),
    ("resize", ["a.png"], "args must be a JSON object"),
])
def test_wrong_calls_get_one_line_with_a_hint(name, args, expected):
    result = asyncio.run(Toolbox().add(resize).call(name, args))
    assert not result.ok and expected in result.output and "\n" not in result.output
    assert "Traceback" not in result.output


@pytest.fixture
def ws(tmp_path):
    return Workspace.on_host(tmp_path / "ws")


@pytest.mark.slow
async def test_terminal_persists_state_and_kills_at_timeout(ws):
    term = Terminal(ws, timeout_s=1.5)
    try:
        assert (await term.run_command("mkdir sub && cd sub && export X=42")).endswith("[exit code 0]")
        out = await term.run_command("pwd; echo $X")
        assert out.splitlines()[:2] == [str(ws.root / "sub"), "42"]
        with pytest.raises(Failed, match="killed after 1.5s timeout") as failed:  # a failure, output in full
            await term.run_command("sleep 1000")
        assert "exit code 137" in str(failed.value)
        assert not any("sleep 1000" in open(f"/proc/{p}/cmdline").read().replace("\0", " ")
                       for p in os.listdir("/proc") if p.isdigit() and os.path.exists(f"/proc/{p}/cmdline"))
        assert (await term.run_command("echo still here")).startswith("still here")
    finally:
        await term.close()


async def test_terminal_caps_a_ten_megabyte_output(ws):
    term = Terminal(ws, max_output_chars=10_000)
    try:
        out = await term.run_command("python3 -c \"print('a' * 5_000_000); print('b' * 5_000_000)\"")
    finally:
        await term.close()
    assert len(out) < 11_000 and out.startswith("aaaa") and "bbbb\n[exit code 0]" in out
    assert "[… output truncated: 9990002 of 10000002 characters not shown …]" in out


async def test_terminal_refuses_servers_and_hides_keys(ws, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak-1234567890")
    term = Terminal(ws)
    try:
        with pytest.raises(ToolError, match="Deployer"):
            await term.run_command("python -m http.server 8000")
        with pytest.raises(ToolError, match="background"):
            await term.run_command("sleep 100 &")
        assert "sk-should-not-leak" not in await term.run_command("env")
    finally:
        await term.close()


def test_editor_reverts_an_edit_that_breaks_python(ws):
    (ws.root / "m.py").write_text("def f():\n    return 1\n")
    ed = Editor(ws)
    with pytest.raises(ToolError, match="invalid Python .* the file is unchanged"):
        ed.edit_file_by_replace("m.py", 2, "    return 1", 2, "    return 1", "    return (")
    assert (ws.root / "m.py").read_text() == "def f():\n    return 1\n"
    assert not [p for p in ws.root.iterdir() if p.name.endswith(".tmp")]


def test_editor_anchors_edits_and_never_empties_a_file(ws):
    (ws.root / "a.txt").write_text("one\ntwo\nthree\n")
    ed = Editor(ws)
    with pytest.raises(ToolError, match="line 2 of a.txt is 'two', not 'deux'"):
        ed.edit_file_by_replace("a.txt", 2, "deux", 2, "deux", "2")
    with pytest.raises(ToolError, match="refusing to empty"):
        ed.write_file("a.txt", "")
    with pytest.raises(ToolError, match="refusing to empty"):
        ed.edit_file_by_replace("a.txt", 1, "one", 3, "three", "")
    ed.edit_file_by_replace("a.txt", 2, "two", 2, "two", "2\n2b")
    assert (ws.root / "a.txt").read_text() == "one\n2\n2b\nthree\n"
    backups = list((ws.root / ".agent" / "backups").iterdir())
    assert backups and backups[0].read_text() == "one\ntwo\nthree\n"


def test_editor_window_and_search(ws):
    (ws.root / "big.py").write_text("".join(f"x{i} = {i}\n" for i in range(1, 251)))
    ed = Editor(ws)
    view = ed.open_file("big.py")
    assert "[File: big.py (250 lines total)]" in view and "   1|x1 = 1" in view and "(150 more lines below)" in view
    assert " 101|x101" in ed.scroll_down()
    assert "3 matches for 'x25'" in ed.search_file("x25") or "matches" in ed.search_file("x25")
    assert "big.py: 1" in ed.search_dir("x250 =")
    assert "1 files match" in ed.find_file("*.py")


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "sub/../../x", "link/secret.txt"])
def test_paths_outside_the_workspace_are_refused(ws, tmp_path, path):
    (tmp_path / "elsewhere").mkdir()
    (ws.root / "link").symlink_to(tmp_path / "elsewhere")
    ed = Editor(ws)
    with pytest.raises(ToolError, match="outside the workspace|absolute paths are refused"):
        ed.write_file(path, "x")
    assert not (tmp_path / "outside.txt").exists() and not (tmp_path / "elsewhere" / "secret.txt").exists()


async def test_deployer_serves_the_folder_and_image_getter_writes_a_png(ws):
    (ws.root / "site").mkdir()
    (ws.root / "site" / "index.html").write_text("<h1>hi there</h1>")
    dep = Deployer(ws)
    try:
        with pytest.raises(ToolError, match="no index.html"):
            await dep.deploy_to_public(".")
        url = (await dep.deploy_to_public("site")).split(" at ")[1]
        assert urllib.request.urlopen(url, timeout=5).read() == b"<h1>hi there</h1>"
    finally:
        dep.close()
        await ws.environment.stop()  # the server runs in the environment and ends with it
    ImageGetter(ws).get_image("a cat", "img/cat.png", 20, 10)
    data = (ws.root / "img" / "cat.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(data[16:20], "big") == 20 and b"a cat" in data
