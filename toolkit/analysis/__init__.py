"""Metrics over the tables from ``toolkit.record.load.load``, each with its count ``n`` and a 95% interval:
Wilson for per-game proportions, a seeded cluster bootstrap (resampling whole games) for rates over votes,
checks, actions and beliefs, chance levels where a random player scores above zero, and side-aware ratings.

Modules: ``intervals`` (Wilson, bootstrap, cluster bootstrap, sample size), ``metrics`` (games, votes,
night actions; the Kaggle Game Arena harness's IRP/VSS/KSR, margin and speed of win), ``ratings``
(Bradley–Terry with a side term, Elo, OpenSkill), ``beliefs`` (identity inference, Brier, claims and lies,
vote swing), ``engineer`` (sessions and tools). Everything is re-exported here: ``import toolkit.analysis as A``.
"""

from toolkit.analysis.beliefs import (
                                      balanced_accuracy,
                                      belief_table,
                                      brier,
                                      claims,
                                      false_claims_followed,
                                      identity_accuracy,
                                      lie_rates,
                                      vote_swing,
                                      wolf_detection,
)
from toolkit.analysis.degeneracy import degeneracy
from toolkit.analysis.checks import conditions, fingerprints, identical_groups
from toolkit.analysis.engineer import engineer_success, tool_usage
from toolkit.analysis.intervals import (
                                      MIN_GAMES,
                                      Z95,
                                      bootstrap_ci,
                                      cluster_mean,
                                      cluster_rate,
                                      exact,
                                      groups,
                                      holm,
                                      paired_difference,
                                      proportion,
                                      sample_size,
                                      wilson,
)
from toolkit.analysis.metrics import (
                                      SPECIAL,
                                      annotate,
                                      ballot_accuracy,
                                      irp,
                                      key_role_survival,
                                      ksr,
                                      night_actions,
                                      per_game_costs,
                                      player_games,
                                      role_adjusted_wins,
                                      role_win_rates,
                                      vote_accuracy,
                                      votes,
                                      voting_success,
                                      vss,
                                      win_margin_speed,
                                      win_rates,
)
from toolkit.analysis.ratings import (
    design,
    elo,
    expected_se,
    fit,
    fit_ratings,
    openskill_ratings,
    ratings,
    separation,
)

__all__ = [
    "Z95", "MIN_GAMES", "SPECIAL", "wilson", "exact", "proportion", "paired_difference", "holm", "bootstrap_ci",
    "cluster_rate", "cluster_mean", "groups", "sample_size",
    "win_rates", "player_games", "role_win_rates", "role_adjusted_wins",
    "win_margin_speed", "ksr", "key_role_survival", "per_game_costs",
    "annotate", "votes", "vote_accuracy", "ballot_accuracy", "irp", "vss", "voting_success", "night_actions",
    "design", "expected_se", "fit", "fit_ratings", "ratings", "separation", "elo", "openskill_ratings",
    "belief_table", "identity_accuracy", "balanced_accuracy", "brier", "wolf_detection", "claims", "lie_rates",
    "false_claims_followed",
    "vote_swing", "engineer_success", "tool_usage", "conditions", "fingerprints", "identical_groups", "degeneracy",
]
