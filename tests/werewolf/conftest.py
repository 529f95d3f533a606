"""Kaggle games for the differential and import tests: played once per session by Kaggle's own engine with its
random agent (toolkit/werewolf/kaggle/harness.py), across 2 worker processes. 200 games, 25 for each of the 8
settings: ~125 s of CPU measured at load ~12 (0.25-0.35 s a game at 6-7 seats, 1.2-1.9 s at 8-10 seats with two
rounds of talk; 40 each of the 5 settings before the bidding ones cost ~165 s), about half that on 2 free cores;
only the tests that ask run it."""

from __future__ import annotations

import pytest

PER_SETTING = 25  # 8 settings x 25 = 200 games


@pytest.fixture(scope="session")
def kaggle_games():
    pytest.importorskip("kaggle_environments", reason="needs kaggle-environments (make test installs it, --no-deps)")
    from toolkit.werewolf.kaggle import harness

    jobs = [(name, seed) for name in harness.CONFIGS for seed in range(PER_SETTING)]
    return list(zip(jobs, harness.play_many(jobs, processes=2)))
