"""The notebook's adaptive-tournament panel updates after every round with the comparisons, their intervals and
verdicts (driven from Python with real offline games)."""

import pytest
import yaml


@pytest.mark.slow
def test_the_panel_shows_the_comparisons_and_verdicts_after_every_round(tmp_path):
    from toolkit.ui import AdaptiveTournament

    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({"name": "panel", "models": ["heuristic", "random"], "presets": ["classic7"],
                                    "design": "adaptive", "min_difference": 1.5, "seed": 1}))
    # classic7 at its known village rate, δ = 1.5 logits: two looks of 6 side-swapped pairs, 12 games a round
    panel = AdaptiveTournament(str(path), results_root=str(tmp_path / "results"), max_games=12)
    seen = []
    original = panel.update
    panel.update = lambda status: (original(status), seen.append(panel.view.value))
    status = panel.run()
    assert len(seen) >= 2  # one view per round and the last
    assert "round 1, 12 games" in seen[0] and "0 of 1 comparisons decided" in seen[0], seen[0][:300]
    assert "heuristic vs random" in seen[-1] and "interval" in seen[-1] and "next round 12 games" in seen[0]
    assert "stopped: game cap (12) reached" in panel.view.value and status.games == 12
    assert panel.games.value == "<p>12 games played</p>"  # counted game by game
