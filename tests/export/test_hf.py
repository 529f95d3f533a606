"""The Hugging Face export opened by ``datasets.load_dataset``: one config per table, each with its row count,
and the dataset card names them."""

import pytest

from toolkit.export import hf
from toolkit.record.load import load
from toolkit.record.tables import TABLES

pytestmark = pytest.mark.interop

datasets = pytest.importorskip("datasets", reason="the interop extra (datasets) is not installed")


@pytest.mark.parametrize("which", ["game_folder", "session_folder"])
def test_datasets_loads_every_table_with_its_row_count(which, request, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    folder = request.getfixturevalue(which)
    results = load(folder)
    out = tmp_path / "dataset"
    hf.write(results, out, source=str(folder))
    names = datasets.get_dataset_config_names(str(out))
    expected = {t for t in TABLES if len(getattr(results, t))}  # every table the record layer declares
    assert set(names) == expected and len(expected) >= 3
    for table in names:
        ds = datasets.load_dataset(str(out), table, split="train", cache_dir=str(tmp_path / "cache"))
        assert ds.num_rows == len(getattr(results, table)), table
        assert set(getattr(results, table).columns) <= set(ds.column_names)
    assert "| calls |" in (out / "README.md").read_text()


def test_no_content_empties_the_message_columns(game, tmp_path):
    results, _ = game
    hf.write(results, tmp_path, content=False)
    import pandas as pd

    calls = pd.read_parquet(tmp_path / "data" / "calls.parquet")
    assert set(calls["response_text"]) == {"[content omitted]"} and len(calls) == len(results.calls)
    assert calls["prompt_tokens"].sum() == results.calls["prompt_tokens"].sum()
