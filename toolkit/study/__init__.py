"""Studies: one cell of an experiment (``run_werewolf_cell``, ``play_werewolf_cell`` of a ``WerewolfCell``'s
settings and its ``cell_summary``,
``run_engineer_cell`` of an ``EngineerCell``'s), a sweep file over a grid of
cells (``run_sweep`` as ``SweepOptions`` say), a tournament file (``load_tournament``, ``schedule``).

Names here are imported when first used."""

from __future__ import annotations

from toolkit.core.lazy import face

_WHERE = {
    "run_werewolf_cell": "toolkit.study.experiments",
    "play_werewolf_cell": "toolkit.study.experiments",
    "WerewolfCell": "toolkit.study.experiments",
    "cell_summary": "toolkit.study.experiments",
    "run_engineer_cell": "toolkit.study.experiments",
    "EngineerCell": "toolkit.study.experiments",
    "run_sweep": "toolkit.study.sweep",
    "SweepOptions": "toolkit.study.sweep",
    "load_sweep": "toolkit.study.sweep",
    "load_tournament": "toolkit.study.tournament",
    "schedule": "toolkit.study.tournament",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = face(__name__, _WHERE)
