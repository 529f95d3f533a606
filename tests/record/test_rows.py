"""The row classes are the tables' contract: every column is described, the tables derive from them, and the
committed reference page (docs/tables.md) is the one they generate."""

import subprocess
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import ClassVar

from toolkit.record.rows import COLUMNS, ROWS, Row, column, reference, undescribed
from toolkit.record.tables import ROW_CLASSES, TABLES

DOCS = Path(__file__).resolve().parents[2] / "docs" / "tables.md"


def test_every_table_and_column_has_a_one_line_description():
    assert undescribed() == []


def test_a_column_added_without_a_description_is_caught():
    @dataclass(slots=True, kw_only=True)
    class NewRow(Row):
        """A table someone is adding."""

        TABLE: ClassVar[str] = "new"
        described: int = column("a column with its description")
        bare: int = 0  # no description

    @dataclass(slots=True, kw_only=True)
    class Blank(Row):
        TABLE: ClassVar[str] = "blank"
        x: int = column("")

    assert undescribed((NewRow, Blank)) == ["blank", "new.bare", "blank.x"]


def test_the_tables_are_derived_from_the_row_classes():
    assert list(TABLES) == [cls.TABLE for cls in ROWS] and len(set(TABLES)) == len(ROWS)
    for table, cls in ROW_CLASSES.items():
        assert TABLES[table] == COLUMNS[cls] and cls.TABLE == table
        assert [f.name for f in fields(cls)] == list(TABLES[table])


def test_a_row_gives_its_values_in_column_order():
    from toolkit.record.rows import BeliefRow
    row = BeliefRow(confidence=0.5, game_id="g", seq=3, about="Player2")
    assert list(row.values()) == list(TABLES["beliefs"])
    assert row.values()["confidence"] == 0.5 and row.values()["guessed_role"] is None


def test_the_committed_tables_page_is_the_generated_one():
    assert DOCS.read_text(encoding="utf-8") == reference(), (
        "docs/tables.md is stale: python -m toolkit.record.rows > docs/tables.md")
    every = reference()
    assert all(f"## {cls.TABLE}" in every for cls in ROWS)
    assert all(f"| `{name}` |" in every for names in COLUMNS.values() for name in names)


def test_the_page_is_written_by_the_module_as_a_script(tmp_path):
    out = subprocess.run([sys.executable, "-m", "toolkit.record.rows"], capture_output=True, text=True, check=True)
    assert out.stdout == reference()
