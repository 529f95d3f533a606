"""Kaggle games for the differential and import tests: played once per session by Kaggle's own engine with its
random agent (toolkit/werewolf/kaggle/harness.py), across 2 worker processes. 200 games: ~80 s of CPU (a game
~0.4 s with Kaggle's per-call schema re-checks skipped), ~45 s on 2 free cores; only the tests that ask run it."""

from __future__ import annotations

import pytest

PER_SETTING = 40  # 5 settings x 40 = 200 games


@pytest.fixture(scope="session")
def kaggle_games():
    pytest.importorskip("kaggle_environments", reason="needs kaggle-environments (make test installs it, --no-deps)")
    from toolkit.werewolf.kaggle import harness

    jobs = [(name, seed) for name in harness.CONFIGS for seed in range(PER_SETTING)]
    return list(zip(jobs, harness.play_many(jobs, processes=2)))
