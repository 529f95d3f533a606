"""The notebook's adaptive-tournament panel updates after every round with the ratings, their intervals and
the comparisons' verdicts (driven from Python with real offline games)."""

import pytest
import yaml


@pytest.mark.slow
def test_the_panel_shows_ratings_and_verdicts_after_every_round(tmp_path):
    from toolkit.ui import AdaptiveTournament

    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({"name": "panel", "models": ["heuristic", "random"], "presets": ["classic7"],
                                    "design": "adaptive", "min_difference": 2.0, "round_games": 8, "seed": 1}))
    panel = AdaptiveTournament(str(path), results_root=str(tmp_path / "results"), max_games=24)
    seen = []
    original = panel.update
    panel.update = lambda status: (original(status), seen.append(panel.view.value))
    status = panel.run()
    assert len(seen) >= 3 and seen[0] != seen[-2]  # one view per round (and the last), changing as games finish
    assert "round 1, 8 games" in seen[0] and "round 3, 24 games" in seen[-1], (seen[0][:200], seen[-1][:200])
    assert "<th>rating</th>" in seen[-1] and "heuristic vs random" in seen[-1] and "interval" in seen[-1]
    assert "stopped: game cap (24) reached" in panel.view.value and status.games == 24
    assert panel.games.value == "<p>24 games played</p>"  # counted game by game
