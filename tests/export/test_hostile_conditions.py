"""A run's conditions are whatever its config holds (a sweep's parameters, a notebook's arguments): markup, a
backtick, a pipe, a huge string, NaN and infinity. Every export still writes files their readers open as
written: the Hugging Face card's runs table shows the conditions as code (none becomes the card's markup), and
the Kaggle replays and mini-swe-agent trajectories are strict JSON (a browser's JSON.parse refuses NaN)."""

import asyncio
import json

import pytest

from toolkit.export import hf, kaggle
from toolkit.record.load import load
from toolkit.record.run_log import Run
from toolkit.werewolf.game import GameConfig, play_games

MARKUP = "`</code><img src=x onerror=alert(1)> | ``pipe`` <script>alert(2)</script>"
CONFIG = {"command": "play", "model": "heuristic", "note": MARKUP, "huge": "A" * 50_000, "nan": float("nan"),
          "inf": float("inf"), "grid": [float("-inf"), 1.5]}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    with Run(folder, "hostile", config=CONFIG) as run:
        asyncio.run(play_games([GameConfig(preset="classic7", seed=1, model="heuristic")], run))
    return load(folder)


def _strict(text: str):
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


def test_kaggle_replays_are_strict_json_whatever_the_conditions(results, tmp_path):
    paths = kaggle.write(results, tmp_path)
    assert paths
    for path in paths:
        conditions = _strict(path.read_text())["info"]["TOOLKIT"]["conditions"]
        assert (conditions["nan"], conditions["inf"], conditions["grid"]) == ("nan", "inf", ["-inf", 1.5])
        assert conditions["note"] == kaggle.inert(MARKUP)  # the replay's own rule: no markup in any text


def _conditions_cell(card: str) -> str:
    row, = (line for line in card.splitlines() if line.startswith("| hostile-"))
    return row


def test_the_hf_card_shows_hostile_conditions_as_code(results, tmp_path):
    hf.write(results, tmp_path)
    row = _conditions_cell((tmp_path / "README.md").read_text())
    assert len(row) < 1000  # the card shows 200 characters of each condition; the runs table holds them whole
    cell = row.split(" | ")[1]
    fence = cell[: len(cell) - len(cell.lstrip("`"))]
    assert len(fence) == 3 and cell.endswith(fence)  # longer than the ``pipe`` run inside
    shown = cell[len(fence):-len(fence)].strip().replace("\\|", "|")
    assert shown.startswith('{"model": "heuristic"') and f'"huge": "{"A" * 199}…"' in shown
    assert json.dumps(MARKUP)[1:-1] in shown  # the markup, shown as text inside the code span


@pytest.mark.interop
def test_a_markdown_renderer_finds_no_markup_in_the_card_s_runs_table(results, tmp_path):
    markdown_it = pytest.importorskip("markdown_it")
    hf.write(results, tmp_path)
    card = (tmp_path / "README.md").read_text()
    section = card[card.index("## Runs"):]
    tokens = markdown_it.MarkdownIt("commonmark").enable("table").parse(section)
    inline = [child for t in tokens if t.type == "inline" for child in t.children or []]
    assert not [t for t in tokens if t.type == "html_block"]
    assert not [t for t in inline if t.type == "html_inline"], [t.content for t in inline if t.type == "html_inline"]
    code, = (t.content for t in inline if t.type == "code_inline" and "heuristic" in t.content)
    assert json.dumps(MARKUP)[1:-1] in code
