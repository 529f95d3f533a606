"""The tables every run writes and their columns, in order, derived from the row classes
(``toolkit.record.rows``; their reference: docs/tables.md). Ids join them."""

from toolkit.record.rows import COLUMNS, ROWS, Row

TABLES: dict[str, tuple[str, ...]] = {cls.TABLE: COLUMNS[cls] for cls in ROWS}
ROW_CLASSES: dict[str, type[Row]] = {cls.TABLE: cls for cls in ROWS}

# Columns renamed since earlier runs were written: {table: {old: new}}. ``toolkit.record.load.load`` applies them.
RENAMED: dict[str, dict[str, str]] = {"players": {"model": "spec"}, "sessions": {"model": "spec"}}
