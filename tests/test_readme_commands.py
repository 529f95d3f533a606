"""Every command and snippet in the README, run in order in a fresh clone, does what the text says.

The README's ```bash and ```python blocks are taken as written, in order, and run in a `git clone` of this
checkout (its committed files, so results/ holds only the committed example). Kept out, each for a stated
reason: `make test` (the suite that runs this test). Make runs with the venv already installed (the clone
links this checkout's .venv, and STAMP points at an existing file so make does not reinstall into it).
A placeholder the text asks the reader to fill (GAME_ID) gets the id of the first game the commands played.
The Python snippet is run twice, with a check appended: it must count only its own run's 20 games."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
NOT_RUN = {"make test": "the test suite itself (it runs this test)",
           "make check": "the fast tier of the suite (it would run the suite inside the suite)"}
BLOCK = re.compile(r"```(bash|python)\n(.*?)```", re.S)


def blocks(text: str) -> list[tuple[str, str]]:
    return [(kind, body) for kind, body in BLOCK.findall(text)]


def commands(body: str) -> list[str]:
    out = []
    for line in body.splitlines():
        line = line.split(" #")[0].strip() if not line.strip().startswith("#") else ""
        if line and line not in NOT_RUN:
            out.append(line)
    return out


def test_the_parser_reads_blocks_and_keeps_out_only_what_it_names():
    text = "x\n```bash\nmake play   # one game\nmake test   # the suite\n# a comment\n```\n```python\nprint(1)\n```\n"
    assert blocks(text) == [("bash", "make play   # one game\nmake test   # the suite\n# a comment\n"),
                            ("python", "print(1)\n")]
    assert commands(blocks(text)[0][1]) == ["make play"]


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    where = tmp_path_factory.mktemp("readme") / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(where)], check=True, timeout=120)
    (where / ".venv").symlink_to(Path(sys.prefix))  # the venv running this test (the repository's .venv)
    return where


def run(clone: Path, command: str, timeout: int = 900) -> subprocess.CompletedProcess:
    # as a user types them, not as a sub-make of `make test` (its MAKEFLAGS would hand its options on)
    make_vars = ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "ARGS")
    env = {k: v for k, v in os.environ.items() if k not in make_vars}
    env["PYTHONPATH"] = str(clone)
    env.pop("OPENAI_API_KEY", None)  # the README promises no key is needed
    if command.startswith("make "):
        command += f" STAMP={shlex.quote(str(clone / 'pyproject.toml'))}"
    return subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=timeout)


def first_game_id(clone: Path) -> str:
    import pandas as pd

    for path in sorted((clone / "results").glob("play-*/games.parquet")):
        return str(pd.read_parquet(path)["game_id"].iloc[0])
    raise AssertionError("no game was played before the command that needs a GAME_ID")


def test_every_readme_command_and_snippet_works_as_written(clone):
    readme = (clone / "README.md").read_text()
    found = blocks(readme)
    assert [k for k, _ in found].count("bash") >= 2 and [k for k, _ in found].count("python") >= 1
    ran = []
    for kind, body in found:
        if kind == "python":
            snippet = clone / "snippet.py"
            snippet.write_text(body + "\nassert len(tables.games) == 20, len(tables.games)  # only its own run\n")
            for _ in range(2):  # a second run must still count only its own 20 games
                out = run(clone, f".venv/bin/python {snippet}")
                assert out.returncode == 0, out.stderr[-3000:]
            ran.append("python snippet")
            continue
        for command in commands(body):
            if "GAME_ID" in command:
                command = command.replace("GAME_ID", first_game_id(clone))
            out = run(clone, command)
            assert out.returncode == 0, f"{command}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
            ran.append(command)
    assert any(c.startswith("make play") for c in ran) and "python snippet" in ran
    assert any("report" in c for c in ran)  # the path the report reads existed after the sweep before it
