"""What a cell and a sweep hold in memory does not grow with the games' configs: the cell makes each game's
config when a worker takes it (a list of 100,000 configs was ~42 MB of the kernel), and the sweep's summary and
plots read the games without their ``config`` column (~1.7 KB of JSON a game)."""

import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from toolkit.study import experiments
from toolkit.study.sweep import load_sweep, run_sweep
from toolkit.werewolf.game import GameConfig, SeededConfigs


@pytest.mark.slow
def test_seeded_configs_are_the_configs_a_list_would_hold_without_holding_them():
    template = GameConfig(preset="standard9", model="random", seats={"Player2": "heuristic"},
                          side_models={"werewolves": "heuristic"}, reflection=True, error_policy="forfeit")
    seeds = [7, 3, 11, 5]
    lazy = SeededConfigs(template, seeds)
    eager = [GameConfig(preset="standard9", seed=s, model="random", seats={"Player2": "heuristic"},
                        side_models={"werewolves": "heuristic"}, reflection=True, error_policy="forfeit")
             for s in seeds]
    assert len(lazy) == 4 and list(lazy) == eager and lazy[-1] == eager[-1]
    assert list(lazy[1:3]) == eager[1:3] and template.seed == 0  # the template is not changed
    many = list(range(100_000))
    tracemalloc.start()
    try:
        configs = SeededConfigs(template, many)
        n = sum(1 for c in configs if c.seed >= 0)  # each made and dropped in turn
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert n == 100_000 and held < 100_000  # a list of them: ~42,000,000 bytes


def test_a_cell_of_100000_games_holds_its_seeds_not_100000_configs(tmp_path, monkeypatch):
    seen = {}

    def play_capped(configs, run, budget, **kwargs):  # no game is played: what the cell prepared is measured
        seen["configs"], seen["traced"] = configs, tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0

    monkeypatch.setattr(experiments, "play_capped", play_capped)
    experiments.play_werewolf_cell(str(tmp_path / "warm"), n_games=1, seed=0, model="random")  # imports, first run
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        experiments.play_werewolf_cell(str(tmp_path / "big"), n_games=100_000, seed=5, model="random",
                                       village_model="heuristic")
    finally:
        tracemalloc.stop()
    configs = seen["configs"]
    assert len(configs) == 100_000 and configs[0].seed == 5 and configs[-1].seed == 100_004
    assert configs[10].model == "random" and configs[10].side_models == {"village": "heuristic"}
    # the seeds list (~3.6 MB) and the run's files; the configs themselves would be ~42 MB more
    assert seen["traced"] - before < 12_000_000, seen["traced"] - before


@pytest.mark.slow
def test_the_sweep_summary_does_not_read_the_games_configs(tmp_path):
    (tmp_path / "s.yaml").write_text("name: s\nnotebook: experiments/werewolf.ipynb\nparameters: {n_games: 2}\n"
                                     "grid:\n  model: [random]\n")
    _, cells = load_sweep(tmp_path / "s.yaml", results_root=tmp_path)
    cell = cells[0]
    experiments.play_werewolf_cell(cell.folder, n_games=2, seed=0, model="random")
    (Path(cell.folder) / "DONE.json").write_text(json.dumps({"cell_id": cell.cell_id, "ok": True}))
    run_sweep(tmp_path / "s.yaml", results_root=tmp_path, progress=False)  # warm: imports, fonts
    path = next(Path(cell.folder).glob("*/games.parquet"))
    # 50 MB a game, 100 MB in all, each its own (Arrow gives equal texts to pandas as one object); written in a
    # process of its own, so that none of it is memory this one has freed and would use again unseen
    code = ("import sys, pyarrow as pa, pyarrow.parquet as pq; path = sys.argv[1]; games = pq.read_table(path); "
            "big = pa.array(['{\"pad\": \"' + str(i) * 50_000_000 + '\"}' for i in range(games.num_rows)]); "
            "pq.write_table(games.set_column(games.schema.get_field_index('config'), 'config', big), path)")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)
    # the texts come from Arrow, which tracemalloc does not see: the process's peak resident memory, reset first
    Path("/proc/self/clear_refs").write_text("5")
    before = resident("VmRSS")
    summary = run_sweep(tmp_path / "s.yaml", results_root=tmp_path, progress=False)
    grew = resident("VmHWM") - before
    assert int(summary["games"].iloc[0]) == 2 and (tmp_path / "s" / "win_rates.png").stat().st_size > 1000
    assert grew < 50_000_000, grew  # reading the configs: 100 MB as Arrow's buffers, 100 MB more in pandas


def resident(key: str) -> int:
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(key + ":")) * 1024
