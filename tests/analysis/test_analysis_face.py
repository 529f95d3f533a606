"""The analysis package's face: each name is imported when first used, so a cell's summary (win rates, costs per
game, vote counts, the plots) loads no scipy (~60 MB of a kernel's memory: the ratings import it), and the
package's ``ratings`` and ``degeneracy`` are the functions whatever was imported first (each in a fresh
interpreter: the test process has long imported everything)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.slow
def test_a_summary_of_games_loads_no_scipy():
    assert fresh("import sys, pandas as pd\nfrom toolkit import analysis as A\n"
                 "games = pd.DataFrame({'winner': ['village'] * 30 + ['werewolves'] * 20, 'n_calls': range(50),\n"
                 "    'prompt_tokens': 1, 'completion_tokens': 1, 'cost_usd': None, 'n_fallbacks': 0})\n"
                 "A.win_rates(games); A.per_game_costs(games); A.day_vote_accuracy\n"
                 "print('scipy' in sys.modules, A.ratings.__module__)\nprint('scipy' in sys.modules)") \
        == "False toolkit.analysis.ratings\nFalse"  # the ratings module itself imports scipy only to compute


@pytest.mark.slow
@pytest.mark.parametrize("first", ["import toolkit.analysis.ratings", "from toolkit.analysis.degeneracy import "
                                   "degeneracy", "import toolkit.analysis.report", "pass"])
def test_the_packages_same_named_functions_whatever_was_imported_first(first):
    assert fresh(f"{first}\nimport inspect, toolkit.analysis as A\nfrom toolkit.analysis import ratings, degeneracy\n"
                 "print(inspect.isfunction(A.ratings), inspect.isfunction(A.degeneracy), ratings is A.ratings, "
                 "degeneracy is A.degeneracy, len(A.__all__) == len(set(A.__all__) & set(dir(A))))") \
        == "True True True True True"
