"""A sweep's and a preset's ``models:`` block (short names for specs with provider parameters) and a tournament's
models given as mappings: the parameters reach the cells' specs and the games' requests and rows, the cells are
named by the short names, a bad parameter is one line."""

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from toolkit.core.files import FileError
from toolkit.record.load import load
from toolkit.record.run_log import Run
from toolkit.study.sweep import Cell, cell_spec_keys, load_sweep
from toolkit.study.tournament import load_tournament
from toolkit.werewolf.engine.preset import load_preset
from toolkit.werewolf.game import GameConfig, GameRunner

REPO = Path(__file__).resolve().parents[2]


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


# ------------------------------------------------------------------ a preset's models: block
def _preset(folder, name, models):
    path = folder / f"{name}.yaml"
    path.write_text(f"name: {name}\nroles: {{Werewolf: 2, Villager: 2, Guard: 1, Witch: 1, Seer: 1}}\n"
                    f"models:\n{models}")
    return path


@pytest.mark.slow
def test_a_preset_names_models_for_the_games_it_plays(server, tmp_path):
    high = f"openai:reason@{server.base_url}?reasoning_effort=high"
    path = _preset(tmp_path, "named", f'  o4-high: {{spec: "openai:reason@{server.base_url}", '
                                      'reasoning_effort: high}\n  dumb: random\n')
    roles = {"Player1": "Werewolf", "Player2": "Werewolf", "Player3": "Villager", "Player4": "Villager",
             "Player5": "Guard", "Player6": "Witch", "Player7": "Seer"}
    config = GameConfig(preset=str(path), seed=1, roles=roles, side_models={"werewolves": "o4-high"},
                        seats={"Player7": "dumb"})
    with Run(tmp_path / "out", "named") as run:
        result = asyncio.run(GameRunner(config, run).play())
    assert result.winner in ("village", "werewolves")
    assert server.requests and all(body["reasoning_effort"] == "high" for body in server.requests)
    players = load(tmp_path / "out").players.set_index("seat")["spec"]
    assert players.to_dict() == {"Player1": high, "Player2": high, "Player3": "heuristic", "Player4": "heuristic",
                                 "Player5": "heuristic", "Player6": "heuristic", "Player7": "random"}
    calls = load(tmp_path / "out").calls
    assert set(calls.loc[calls["seat"].isin(["Player1", "Player2"]), "spec"]) == {high}
    assert set(calls.loc[calls["seat"] == "Player7", "spec"]) == {"random"}


@pytest.mark.parametrize("models, message", [
    ('  x: {reasoning_effort: high}\n', "models: a model given as a mapping needs spec: SPEC"),
    ('  x: {spec: "openai:m@http://127.0.0.1:9/v1", reasoning_effort: hgih}\n',
     "models: model spec openai:m@http://127.0.0.1:9/v1: reasoning_effort='hgih' must be one of"),
    ('  x: [heuristic]\n', "models: must map short names to specs|a model is a spec string"),
    ('  - heuristic\n', "models: must map short names to specs")])
def test_a_bad_preset_models_block_is_one_line(tmp_path, models, message):
    path = _preset(tmp_path, "bad", models)
    with pytest.raises(FileError, match=message) as caught:
        load_preset(str(path))
    assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)


def test_sweeps_and_tournaments_check_and_play_a_preset_s_names_as_their_specs(tmp_path, server):
    spec = f"openai:det@{server.base_url}?reasoning_effort=low"
    one = _preset(tmp_path, "one", f'  cheap: {{spec: "openai:det@{server.base_url}", reasoning_effort: low}}\n')
    cell = Cell("s", "c", "nb", str(tmp_path / "c"), {"preset": str(one), "model": "heuristic",
                                                      "wolf_model": "cheap", "seats": {"Player3": "cheap"}}, {})
    assert cell_spec_keys(cell) == {"heuristic": "model", spec: "wolf_model"}  # what the sweep checks and caps
    path = tmp_path / "t.yaml"
    path.write_text(f"name: t\nmodels: [heuristic, cheap]\npresets: [{one}, classic7]\ngames: 1\n")
    assert load_tournament(path)["models"] == ["heuristic", spec]
    two = _preset(tmp_path, "two", "  cheap: random\n")
    path.write_text(f"name: t\nmodels: [heuristic, cheap]\npresets: [{one}, {two}]\ngames: 1\n")
    with pytest.raises(FileError, match=f"models: cheap is {spec.replace('?', '.')} in one preset and random in"):
        load_tournament(path)
    path.write_text(f"name: t\nmodels: [cheap, '{spec}']\npresets: [{one}]\ngames: 1\n")
    with pytest.raises(FileError, match="is given twice"):
        load_tournament(path)


@pytest.mark.slow
def test_play_takes_a_preset_s_name_and_refuses_a_bad_block_with_exit_2(tmp_path, server):
    high = f"openai:reason@{server.base_url}?reasoning_effort=high"
    path = _preset(tmp_path, "named", f'  o4-high: {{spec: "openai:reason@{server.base_url}", '
                                      'reasoning_effort: high}\n')
    command = [sys.executable, "-m", "toolkit", "play", "--preset", str(path), "--quiet", "--seat",
               "Player2=o4-high", "--out", str(tmp_path / "out")]
    out = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    players = load(tmp_path / "out").players.set_index("seat")["spec"]
    assert players["Player2"] == high and players["Player1"] == "heuristic"
    assert server.requests and all(body["reasoning_effort"] == "high" for body in server.requests)
    bad = _preset(tmp_path, "bad", '  o4-high: {spec: "openai:reason@http://127.0.0.1:9/v1", reasoning_effort: hgih}\n')
    out = subprocess.run([*command[:5], str(bad), *command[6:]], cwd=REPO, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "models: model spec openai:reason@http://127.0.0.1:9/v1: reasoning_effort='hgih' must be one of" \
        in out.stderr


def test_a_dollar_cap_checks_the_price_of_the_spec_a_preset_s_name_stands_for(tmp_path, monkeypatch):
    """A cell's model (or side model) given by a preset's name, under a dollar cap: the price check looks up the
    spec the name stands for (it built a model from the name itself: 'unknown model spec' ended every cell of a
    capped sweep whose model was a preset's name)."""
    from toolkit.llm.budget import Budget, BudgetError
    from toolkit.werewolf.game import play_games

    path = _preset(tmp_path, "named", "  dumb: random\n  paid: 'openai:priced@http://127.0.0.1:9/v1'\n")
    budget = Budget.at(tmp_path / "study", max_usd=1.0)
    config = GameConfig(preset=str(path), seed=0, model="dumb", side_models={"werewolves": "dumb"})
    with Run(tmp_path / "out", "capped") as run:
        results = asyncio.run(play_games([config], run, budget=budget))
    assert [r.winner in ("village", "werewolves") for r in results] == [True]
    assert set(load(tmp_path / "out").players["spec"]) == {"random"}
    config = GameConfig(preset=str(path), seed=0, model="heuristic", side_models={"village": "paid"})
    with Run(tmp_path / "out2", "capped") as run, pytest.raises(BudgetError, match="openai:priced@"):
        asyncio.run(play_games([config], run, budget=budget))
