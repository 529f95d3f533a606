"""A werewolf cell's settings are one typed object (``WerewolfCell``), not 19 parameters passed on with
``**locals()``: the run records the same config as before, a mistyped setting is one TypeError naming it, and the
werewolf notebook's parameters are exactly the cell's settings."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from toolkit.study.experiments import WerewolfCell, play_werewolf_cell

ROOT = Path(__file__).resolve().parents[2]


def test_a_cells_settings_are_one_object_and_a_misspelt_one_is_refused():
    cell = WerewolfCell("results/x", n_games=3, wolf_model="random", seats={"Player3": "random"})
    settings = cell.settings()
    assert list(settings)[:4] == ["results_dir", "preset", "n_games", "seed"] and "progress" not in settings
    assert cell.specs() == ["heuristic", "random", "random"]
    assert cell.game_config().side_models == {"werewolves": "random"}
    with pytest.raises(TypeError, match="n_game"):
        play_werewolf_cell("results/x", n_game=3)


def test_the_werewolf_notebooks_parameters_are_the_cells_settings():
    notebook = json.loads((ROOT / "experiments" / "werewolf.ipynb").read_text())
    source = next("".join(c["source"]) for c in notebook["cells"] if "parameters" in c["metadata"].get("tags", []))
    names = {line.split("=")[0].strip() for line in source.splitlines() if "=" in line and not line.startswith("#")}
    fields = {f.name for f in dataclasses.fields(WerewolfCell)}
    assert names == fields - {"experiment", "progress"}


def test_a_tournament_cells_settings_are_one_object_and_the_notebooks_parameters(tmp_path):
    """``run_cell`` took 15 parameters; a ``TournamentCell`` holds them, the tournament notebook's parameters are
    its settings (but the batch's ``seeds`` and ``done_in``), and an unknown cell names the plan's cells."""
    from toolkit.study.tournament import TournamentCell, run_cell

    notebook = json.loads((ROOT / "experiments" / "tournament.ipynb").read_text())
    source = next("".join(c["source"]) for c in notebook["cells"] if "parameters" in c["metadata"].get("tags", []))
    names = {line.split("=")[0].strip() for line in source.splitlines() if "=" in line and not line.startswith("#")}
    assert names == {f.name for f in dataclasses.fields(TournamentCell)} - {"seeds", "done_in"}
    smoke = str(ROOT / "experiments" / "tournaments" / "smoke.yaml")
    games, name = TournamentCell(str(tmp_path), smoke, "classic7__part0").games()
    first = int(games["seed"].min())
    batch, _ = TournamentCell(str(tmp_path), smoke, "classic7__part0", seeds=[first]).games()
    assert name == "smoke-tournament" and set(games["cell"]) == {"classic7__part0"}
    assert set(batch["seed"]) == {first} and len(batch) == 7  # one game: its seven seats
    with pytest.raises(ValueError, match="classic7__part0"):
        run_cell(str(tmp_path), smoke, "no_such_cell")
    with pytest.raises(TypeError, match="concurency"):
        run_cell(str(tmp_path), smoke, "classic7__part0", concurency=2)


def test_both_cells_share_one_declaration_of_their_limits_and_a_cell_takes_keywords_over_it(tmp_path):
    """The spending cap and failure policies are declared once (``CellLimits``) for a werewolf cell and a
    tournament cell; both constructors take them as before, the run records the settings in the order it did, and
    ``run_cell``/``play_werewolf_cell`` given a cell apply their keywords to it (they were silently dropped) or
    refuse an unknown one, before any game."""
    from toolkit.study.experiments import CellLimits
    from toolkit.study.tournament import TournamentCell, run_cell

    limits = ["max_usd", "max_tokens", "at_cap", "spend_dir", "error_policy", "on_endpoint_failure"]
    werewolf = WerewolfCell(str(tmp_path), n_games=2, max_usd=1.5, spend_dir=str(tmp_path / "study"))
    assert list(werewolf.settings()) == ["results_dir", "preset", "n_games", "seed", "model", "wolf_model",
                                         "village_model", "seats", "reflection", "experience", "temperature",
                                         "concurrency", "experiment", *limits]
    assert werewolf.budget().ledger.parent == tmp_path / "study" and werewolf.budget().max_usd == 1.5
    smoke = str(ROOT / "experiments" / "tournaments" / "smoke.yaml")
    tournament = TournamentCell(str(tmp_path), smoke, "classic7__part0", True, 4, at_cap="finish", seeds=[1])
    assert (tournament.reflection, tournament.concurrency, tournament.at_cap) == (True, 4, "finish")
    assert tournament.budget().ledger.parent == tmp_path
    for cls in (WerewolfCell, TournamentCell):
        assert [f.name for f in dataclasses.fields(cls) if f.name in limits] == limits and issubclass(cls, CellLimits)
    assert WerewolfCell.of(werewolf, at_cap="finish").settings() == {**werewolf.settings(), "at_cap": "finish"}
    nowhere = TournamentCell(str(tmp_path), str(tmp_path / "no_schedule.parquet"), "classic7__part0")
    with pytest.raises(ValueError, match="no_such_cell"):  # the cell's schedule and cell replaced by the keywords
        run_cell(nowhere, schedule=smoke, cell="no_such_cell")
    with pytest.raises(TypeError, match="concurency"):
        run_cell(nowhere, concurency=2)
    with pytest.raises(TypeError, match="no_such_cell"):
        run_cell(nowhere, smoke, "no_such_cell")
    with pytest.raises(TypeError, match="n_game"):
        play_werewolf_cell(WerewolfCell(str(tmp_path), preset="no_such_preset"), n_game=3)
