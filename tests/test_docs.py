"""The documentation: the README stays a short front door whose Python example runs as written, the mkdocs
site builds with --strict (no broken link, no page left out of the nav), and every relative link in the
README and the docs resolves, to a file and to a heading."""

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml
from markdown.extensions.toc import slugify
import pytest

REPO = Path(__file__).resolve().parent.parent
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def anchors(page: Path) -> set[str]:
    """The ids mkdocs gives a page's headings (the toc extension's slugify)."""
    text = FENCE.sub("", page.read_text())
    return {slugify(m.group(1).strip(), "-") for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M)}


def broken_links(page: Path) -> list[str]:
    """Relative links of a Markdown file whose file or heading does not exist (code blocks skipped)."""
    wrong = []
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            wrong.append(f"{page.name}: {target} (no file {resolved})")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            wrong.append(f"{page.name}: {target} (no heading #{anchor} in {resolved.name})")
    return wrong


def test_the_readme_is_a_short_front_door():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move the detail to a page in docs/"


def test_every_relative_link_in_the_readme_and_the_docs_resolves():
    pages = [REPO / "README.md", REPO / "experiments" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    wrong = [w for page in pages for w in broken_links(page)]
    assert not wrong, "\n".join(wrong)


def test_the_link_checker_catches_a_broken_file_and_a_broken_heading(tmp_path):
    (tmp_path / "a.md").write_text("# Title\n\n## Some part\n\n```\n[not a link](nowhere.md)\n```\n")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#some-part) [file](missing.md) [heading](a.md#no-such-part) [web](https://x.org)\n")
    wrong = broken_links(page)
    assert len(wrong) == 2 and "missing.md" in wrong[0] and "#no-such-part" in wrong[1], wrong
    assert not broken_links(tmp_path / "a.md")


def test_every_page_is_in_the_nav():
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]
    entries = [page for entry in nav for page in entry.values()]
    listed = set(entries)
    assert len(entries) == len(listed), f"a page is in the nav twice: {entries}"
    pages = {p.name for p in (REPO / "docs").glob("*.md")}
    assert pages == listed, f"pages not in mkdocs.yml's nav: {sorted(pages - listed)}; " \
                            f"nav entries without a page: {sorted(listed - pages)}"


def test_the_readme_and_the_overview_link_every_page():
    nav = [page for entry in yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"] for page in entry.values()]
    readme = set(LINK.findall((REPO / "README.md").read_text()))
    overview = set(LINK.findall((REPO / "docs" / "index.md").read_text()))
    missing = [p for p in nav if f"docs/{p}" not in readme]
    assert not missing, f"pages the README's Documentation list does not link: {missing}"
    missing = [p for p in nav if p != "index.md" and p not in overview]
    assert not missing, f"pages docs/index.md does not link: {missing}"


def test_mkdocs_builds_the_site_strictly(tmp_path):
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "site" / "architecture.html").exists() and (tmp_path / "site" / "architecture.svg").exists()
    html = (tmp_path / "site" / "index.html").read_text()
    assert "cdnjs" not in html, "the site loads a script from a CDN: it would not work offline"


@pytest.mark.slow
def test_the_readme_python_example_runs_as_written(tmp_path):
    """The README's only Python block, run as a script in an empty folder: it plays its games, loads only its
    own run and prints the winners."""
    blocks = re.findall(r"^```python\n(.*?)^```", (REPO / "README.md").read_text(), re.S | re.M)
    assert len(blocks) == 1
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    runs = list((tmp_path / "results").iterdir())
    assert len(runs) == 1 and (runs[0] / "games.parquet").exists()
    counts = re.findall(r"^(village|werewolves|draw)\s+(\d+)$", out.stdout, re.M)
    assert counts and sum(int(n) for _, n in counts) == 20, out.stdout
    assert re.search(r"^vote\s+\d+$", out.stdout, re.M), out.stdout


def test_the_files_the_docs_name_exist():
    """Every repository file a page or the README names (``toolkit/llm/model.py``, ``experiments/sweeps/example.yaml``,
    ``benchmarks/cold_build.sh``, …) exists, so a moved file leaves no stale pointer."""
    folders = "toolkit|experiments|benchmarks|notebooks|prompts|tests"
    pattern = re.compile(rf"\b((?:{folders})/[\w./-]+\.(?:py|yaml|ipynb|sh|j2))")
    named = {(page.name, path) for page in [REPO / "README.md", *(REPO / "docs").glob("*.md")]
             for path in pattern.findall(page.read_text())}
    assert len(named) > 20
    missing = sorted(f"{page}: {path}" for page, path in named if not (REPO / path).exists())
    assert not missing, "\n".join(missing)


def test_the_readme_map_names_every_layer_package_at_its_layer():
    """The README's map of the repository is the architecture test's LAYERS, package for package."""
    from tests.test_architecture import LAYERS

    wanted = {prefix.split(".")[1]: number for number, prefixes in LAYERS for prefix in prefixes
              if prefix.count(".") == 1 and prefix != "toolkit.__main__"}
    shown = {}
    for number, packages in re.findall(r"^\| (\d) \| (.+?) \|", (REPO / "README.md").read_text(), re.M):
        for package in re.findall(r"`(\w+)/`", packages):
            shown[package] = int(number)
    assert shown == wanted


def test_the_readme_names_every_command():
    from toolkit.cli import COMMANDS

    readme = (REPO / "README.md").read_text()
    missing = [name for name in COMMANDS if f"`{name}`" not in readme]
    assert not missing, f"commands the README does not name: {missing}"


def test_the_local_model_page_gives_the_sampler_chains_default_as_the_code_has_it(monkeypatch):
    from toolkit.llm.llama_server import samplers

    row = next(line for line in (REPO / "docs" / "local-model.md").read_text().splitlines()
               if line.startswith("| `TOOLKIT_LOCAL_SAMPLERS` |"))
    documented = row.split("|")[2].strip().strip("`")
    monkeypatch.delenv("TOOLKIT_LOCAL_SAMPLERS", raising=False)
    assert documented == "default" and samplers() is None  # unset: the server's own chain, as the page says


def test_the_docs_tables_of_plug_ins_equal_their_registries(tmp_path):
    """Each table of plug-ins in the docs is what its registry says now (``python -m toolkit.cli.registries``
    rewrites them); a page whose table went stale is named, and rewriting it fixes it."""
    import shutil

    from toolkit.cli import registries

    stale = [name for name, (held, now) in registries.current().items() if held != now]
    assert not stale, f"stale tables (run python -m toolkit.cli.registries): {stale}"
    docs = tmp_path / "docs"
    shutil.copytree(REPO / "docs", docs)
    page, _ = registries.TABLES["event-kinds"]
    (docs / page).write_text((docs / page).read_text().replace("| `heal` |", "| `healing` |"))
    assert registries.current(docs)["event-kinds"][0] != registries.current(docs)["event-kinds"][1]
    assert registries.write(docs) == ["event-kinds"] and registries.write(docs) == []
    assert (docs / page).read_text() == (REPO / "docs" / page).read_text()
