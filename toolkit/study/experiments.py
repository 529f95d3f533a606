"""What one experiment cell runs (called from the parameterised notebooks in ``experiments/``).

A cell's games are seeded ``seed .. seed + n_games - 1``; seeds whose game already finished in the cell's
folder are skipped, so a cell that was killed resumes where it stopped. A lock on the folder keeps two
processes from ever playing the same cell at once.
"""

from __future__ import annotations

import fcntl
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from tqdm.auto import tqdm

from toolkit.agent.suite import load_tasks, run_task
from toolkit.record.run_log import Run
from toolkit.record.load import Results, load
from toolkit.core.sync import run_sync
from toolkit.werewolf.experience import ExperiencePool
from toolkit.werewolf.game import GameConfig, play_games
from toolkit.werewolf.engine.preset import load_preset
from toolkit.werewolf.engine.rules import Game


@contextmanager
def cell_lock(folder: str | Path) -> Iterator[None]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # waits while another process (an orphan of a killed sweep) runs it
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def finished_seeds(results_dir: str | Path) -> set[int]:
    if not Path(results_dir).exists():
        return set()
    games = load(results_dir, complete_games=False).games  # only the games rows matter here
    return set(int(s) for s in games[games["winner"] != "error"]["seed"].dropna())


def seat_models(preset: str, seed: int, model: str, wolf_model: str | None, village_model: str | None,
                seats: dict[str, str] | None) -> dict[str, str]:
    """Per-seat specs: a model per side (the seeded roles decide who is a wolf), then explicit seats."""

    out: dict[str, str] = {}
    if wolf_model or village_model:
        for seat, role in Game(load_preset(preset), seed).roles.items():
            side_model = wolf_model if role == "Werewolf" else village_model
            out[seat] = side_model or model
    out.update(seats or {})
    return out


def run_werewolf_cell(results_dir: str, preset: str = "classic7", n_games: int = 20, seed: int = 0,
                      model: str = "heuristic", wolf_model: str | None = None, village_model: str | None = None,
                      seats: dict[str, str] | None = None, reflection: bool = False, experience: bool = False,
                      temperature: float | None = None, concurrency: int = 16, experiment: str = "werewolf",
                      progress: bool = False) -> Results:
    params = {k: v for k, v in locals().items() if k not in ("progress",)}
    with cell_lock(results_dir):
        done = finished_seeds(results_dir)
        todo = [s for s in range(seed, seed + n_games) if s not in done]
        if todo:
            pool = ExperiencePool(Path(results_dir) / "experience" / "pool.jsonl", version=experiment) \
                if experience else None
            configs = [GameConfig(preset=preset, seed=s, model=model,
                                  seats=seat_models(preset, s, model, wolf_model, village_model, seats),
                                  reflection=reflection, experience=experience, temperature=temperature,
                                  experience_pool=pool) for s in todo]
            bar = None
            if progress:
                bar = tqdm(total=len(todo), desc="games")
            with Run(results_dir, experiment, config=params, seed=seed) as run:
                run_sync(play_games(configs, run, concurrency=concurrency,
                                       on_result=(lambda _: bar.update()) if bar else None))
            if bar:
                bar.close()
    return load(results_dir, complete_games=True)


def run_engineer_cell(results_dir: str, tasks: list[str] | None = None, model: str = "scripted:{task}/good.yaml",
                      max_steps: int | None = None, experiment: str = "engineer",
                      environment: str | None = None) -> Results:
    params = dict(locals())
    with cell_lock(results_dir):
        existing = load(results_dir, complete_games=False).sessions if Path(results_dir).exists() else None
        done = set(existing["task"]) if existing is not None and len(existing) else set()
        todo = [t for t in load_tasks(names=tasks) if t.task not in done]
        if todo:
            with Run(results_dir, experiment, config=params) as run:
                for task in todo:
                    if max_steps:
                        task.max_steps = max_steps
                    run_sync(run_task(task, model, run, Path(results_dir) / "workspaces", environment))
    return load(results_dir)
