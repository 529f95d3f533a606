"""The bar each metric is read against: the best strategy that uses no information about the game, scored in the
same situations (the same seats, the same living players, the same rules), beside the uniformly random legal
answer. Two columns in every table that has them:

- ``chance``: the bar, the expected score of the named information-free strategy (``BARS``) on the same units —
  ``lift`` = rate − chance is what the seat's information bought;
- ``random``: the expected score of a uniformly random legal answer (passing and abstaining included where the
  rules allow them) on the same units — where a random player sits.

They differ wherever the rules give a random player a poor option an information-free strategy avoids (a vote
for oneself, an abstention, a pass) or a good one it need not randomise over (a Guard protecting itself).
Both are exact expectations over the legal choices each seat had under the rules in force (``game_rules``);
the exile-based levels of VSS and voting success are simulated (``metrics.exile_chance``), and those two are
measures of coordination, not of skill: an information-free convention (every villager votes the
lowest-numbered living seat) exiles a wolf far more often than random ballots do.
"""

from __future__ import annotations

import json

import pandas as pd

# metric → the information-free strategy that sets its bar (the ``bar`` column of the tables)
BARS = {
    "vote_accuracy": "ballot: a uniformly random other candidate, never oneself, never abstaining",
    "irp": "ballot: a uniformly random other candidate, never oneself, never abstaining (an abstention is a miss)",
    "vss": "coordination, not skill: random village ballots on the days they exile a wolf (simulated)",
    "voting_success": "coordination, not skill: random village ballots exile a wolf (simulated)",
    "seer_wolf_check_rate": "Seer: never recheck (a uniformly random living player not checked before)",
    "guard_save_rate": "Guard: always protect self (where the rules allow it, else a random legal player)",
    "doctor_save_rate": "Doctor: always heal self (where the rules allow it, else a random legal player)",
    "witch_poison_on_wolf": ("Witch: poison a uniformly random living player other than herself and the victims "
                             "she was told of (never wolves)"),
    "hunter_shot_on_wolf": "Hunter: shoot a uniformly random living player",
    "identity": "identity: the best constant guess per believer role and day (ties share the hit)",
    "detection": "detection: recall minus false-positive rate (0 for any guess that ignores the game)",
    "followed": "a voter who ignores the claim: 1 / (living − 1)",
    "believed": "a random role guess: 1 / roles",
    "vote_swing": "a voter who ignores the speech: 1 / (living − 1)",
}

RULE_DEFAULTS = {"self_vote": False, "vote_abstain": False, "vote_tie": "none", "guard_no_repeat": False,
                 "doctor_self_save": False, "doctor_consecutive_saves": True}


def game_rules(games: pd.DataFrame | None, ids) -> pd.DataFrame:
    """Per game id (index): the rule flags the bars depend on, from each game's own preset (its config, else
    the shipped preset of its name; ``RULE_DEFAULTS`` where neither is known). Each config is read once."""
    from toolkit.werewolf.engine.preset import load_preset

    index = pd.Index(sorted(set(ids)), name="game_id")
    rows = {}
    if games is not None and len(games) and "game_id" in games.columns:
        g = games[games["game_id"].isin(index)]
        configs = g["config"] if "config" in g.columns else pd.Series([None] * len(g), index=g.index)
        names = g["preset"] if "preset" in g.columns else pd.Series([None] * len(g), index=g.index)
        for gid, config, name in zip(g["game_id"], configs, names):
            try:
                preset = json.loads(config)["preset"]
            except (KeyError, TypeError, ValueError):
                try:
                    preset = load_preset(name).model_dump()
                except (KeyError, TypeError, ValueError, AttributeError):
                    preset = {}
            rows[gid] = {k: preset.get(k, v) for k, v in RULE_DEFAULTS.items()}
    out = pd.DataFrame([rows.get(gid, RULE_DEFAULTS) for gid in index], index=index,
                       columns=list(RULE_DEFAULTS))
    for name, default in RULE_DEFAULTS.items():
        if isinstance(default, bool):
            out[name] = out[name].astype(bool)
    return out
