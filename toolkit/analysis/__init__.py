"""Metrics over the tables from ``toolkit.record.load.load``, each with its count ``n`` and a 95% interval:
Wilson for per-game proportions, a seeded cluster bootstrap (resampling whole games) for rates over votes,
checks, actions and beliefs, chance levels where a random player scores above zero, and side-aware ratings.

Modules: ``intervals`` (Wilson, bootstrap, cluster bootstrap, sample size), ``metrics`` (games, votes,
night actions; the Kaggle Game Arena harness's IRP/VSS/KSR, margin and speed of win), ``ratings``
(Bradley–Terry with a side term, Elo, OpenSkill), ``beliefs`` (identity inference, Brier, claims and lies,
vote swing), ``engineer`` (sessions and tools). Everything is re-exported here: ``import toolkit.analysis as A``,
each name imported when first used (the ratings import scipy, which a cell's summary does not need).
"""

from __future__ import annotations

from toolkit.core.lazy import face

_WHERE = {
    **dict.fromkeys([
        "balanced_accuracy", "belief_table", "brier", "claims", "false_claims_followed", "identity_accuracy",
        "lie_rates", "vote_swing", "wolf_detection",
    ], "toolkit.analysis.beliefs"),
    **dict.fromkeys([
        "degeneracy",
    ], "toolkit.analysis.degeneracy"),
    **dict.fromkeys([
        "conditions", "fingerprints", "identical_groups",
    ], "toolkit.analysis.checks"),
    **dict.fromkeys([
        "engineer_success", "tool_usage",
    ], "toolkit.analysis.engineer"),
    **dict.fromkeys([
        "MIN_GAMES", "Z95", "bootstrap_ci", "cluster_mean", "cluster_rate", "exact", "groups", "holm",
        "paired_difference", "proportion", "sample_size", "wilson",
    ], "toolkit.analysis.intervals"),
    **dict.fromkeys([
        "SPECIAL", "annotate", "ballot_accuracy", "day_vote_accuracy", "day_vote_counts", "irp",
        "key_role_survival", "ksr", "night_actions", "per_game_costs", "player_games", "role_adjusted_wins",
        "role_win_rates", "vote_accuracy", "votes", "voting_success", "vss", "win_margin_speed", "win_rates",
    ], "toolkit.analysis.metrics"),
    **dict.fromkeys([
        "design", "elo", "expected_se", "fit", "fit_ratings", "openskill_ratings", "ratings", "separation",
    ], "toolkit.analysis.ratings"),
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = face(__name__, _WHERE)
