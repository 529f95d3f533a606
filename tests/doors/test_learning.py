"""The worked example that learns (``toolkit.doors.learning``, ``notebooks/04_rl_door.ipynb``): the policy is
uniform over the legal targets at zero weights, a REINFORCE step moves it toward a rewarded choice, and the
notebook runs end to end through the PettingZoo door. They need the ``rl`` extra, hence the ``interop`` mark."""

import os
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.interop
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def learning():
    pytest.importorskip("pettingzoo")
    from toolkit.doors import learning
    return learning


def test_the_policy_starts_uniform_and_reinforce_moves_it_toward_a_rewarded_choice(learning):
    env = learning.door("vote")
    env.reset(seed=0)
    obs = env.observe(env.agent_selection)
    legal = obs["action_mask"][:len(env.seats)].astype(bool)
    policy = learning.TargetPolicy(env, seed=0)
    p = policy.probabilities(obs)
    assert np.allclose(p[legal], 1 / legal.sum()) and not p[~legal].any()
    obs["observation"][policy.where["accused"][0] + np.flatnonzero(legal)[0]] = 1.0  # one candidate stands out
    choice, gradient = policy.act(obs)
    before = policy.probabilities(obs)[choice]
    policy.update([gradient], advantage=1.0)
    assert policy.probabilities(obs)[choice] > before
    env.close()


@pytest.mark.slow
def test_the_notebook_trains_through_the_door(learning, tmp_path, monkeypatch):
    import papermill

    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    out = tmp_path / "out.ipynb"
    papermill.execute_notebook(str(ROOT / "notebooks" / "04_rl_door.ipynb"), str(out), cwd=str(tmp_path),
                               parameters={"train_games": 20, "eval_games": 10}, progress_bar=False)
    text = out.read_text()
    assert "win_rate" in text and "paired bootstrap-t" in text and "image/png" in text
    assert os.path.getsize(out) > 10_000
