"""A sweep's ``models:`` block (short names for specs with provider parameters) and a tournament's models given
as mappings: the parameters reach the cells' specs, the cells are named by the short names, a bad parameter is
one line."""

import pytest

from toolkit.core.files import FileError
from toolkit.study.sweep import load_sweep
from toolkit.study.tournament import load_tournament


def test_a_sweep_names_models_with_parameters(tmp_path):
    path = tmp_path / "effort.yaml"
    path.write_text("""name: effort
notebook: experiments/werewolf.ipynb
models:
  o4-high: {spec: "openai:o4-mini@http://127.0.0.1:9/v1", reasoning_effort: high, store: false}
  o4-low: {spec: "openai:o4-mini@http://127.0.0.1:9/v1", reasoning_effort: low}
parameters: {n_games: 2, seats: {Player1: o4-low}}
grid:
  model: [o4-high, o4-low, heuristic]
""")
    _, cells = load_sweep(path, tmp_path / "results")
    by_model = {c.grid_values["model"]: c for c in cells}
    assert by_model["o4-high"].parameters["model"] == \
        "openai:o4-mini@http://127.0.0.1:9/v1?reasoning_effort=high&store=false"
    assert by_model["heuristic"].parameters["model"] == "heuristic"
    assert by_model["o4-high"].parameters["seats"] == {"Player1": "openai:o4-mini@http://127.0.0.1:9/v1?"
                                                                  "reasoning_effort=low"}
    assert by_model["o4-high"].cell_id.startswith("model-o4-high__")  # folders named by the short name


def test_a_models_block_without_a_spec_is_one_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nnotebook: experiments/werewolf.ipynb\nmodels: {x: {reasoning_effort: high}}\n"
                    "grid: {model: [x]}\n")
    with pytest.raises(FileError, match="needs spec: SPEC"):
        load_sweep(path, tmp_path / "results")


def test_a_tournament_model_as_a_mapping_is_its_spec_with_parameters(tmp_path, server):
    path = tmp_path / "t.yaml"
    path.write_text(f"""name: t
models: [heuristic, {{spec: "openai:det@{server.base_url}", reasoning_effort: high}}]
presets: [classic7]
games: 1
error_policy: forfeit
""")
    spec = load_tournament(path)
    assert spec["models"] == ["heuristic", f"openai:det@{server.base_url}?reasoning_effort=high"]
    path.write_text(path.read_text().replace("high", "hihg"))
    with pytest.raises(FileError, match="reasoning_effort='hihg' must be one of"):
        load_tournament(path)
    path.write_text(path.read_text().replace("hihg", "high").replace("forfeit", "forfit"))
    with pytest.raises(FileError, match="error_policy must be fallback, forfeit or eliminate_after"):
        load_tournament(path)
