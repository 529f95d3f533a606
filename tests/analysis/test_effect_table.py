"""The Conclusions at a glance (toolkit.analysis.effect_table): every effect one row with its interval, n, paired
or not and a verdict, and a forest plot. Paired by seed only where both values deal the same roles: the old
sweep report called classic7 vs standard9 "paired by seed" though the presets deal different roles."""

import pandas as pd

from toolkit.analysis.effect_table import effect_rows, forest_plot, markdown


def study(var: str, values: dict[str, float], same_deal: bool, seeds: int = 40) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Games at each value of ``var`` over the same seeds; the village wins where seed % 100 < rate * 100."""
    games, players = [], []
    for value, rate in values.items():
        for seed in range(seeds):
            gid = f"{value}-{seed}"
            games.append({"game_id": gid, "seed": seed, var: value,
                          "winner": "village" if (seed * 37) % 100 < rate * 100 else "werewolves"})
            roles = ["Werewolf", "Seer", "Villager"] if same_deal or value == "a" else ["Seer", "Werewolf", "Villager"]
            players += [{"game_id": gid, "seat": f"Player{i + 1}", "role": r, "spec": "heuristic",
                         "side": "werewolves" if r == "Werewolf" else "village"}
                        for i, r in enumerate(roles)]
    return pd.DataFrame(games), pd.DataFrame(players)


def test_a_variable_that_deals_the_same_roles_is_paired_by_seed():
    games, players = study("temperature", {"a": 0.3, "b": 0.8}, same_deal=True)
    row = effect_rows(games, players, ["temperature"]).iloc[0]
    assert row["effect"] == "temperature: b − a" and row["paired"].startswith("yes")
    assert row["n"] == "40 seeds" and row["ci_low"] > 0 and row["verdict"] == "village wins more"


def test_values_that_deal_different_roles_are_not_paired():
    games, players = study("preset", {"a": 0.5, "b": 0.5}, same_deal=False)
    row = effect_rows(games, players, ["preset"]).iloc[0]
    assert row["paired"] == "no: the values deal different roles" and row["n"] == "40 vs 40 games"
    assert row["ci_low"] < 0 < row["ci_high"] and row["verdict"] == "no difference shown"


def test_the_table_and_the_forest_plot_hold_every_effect():
    games, players = study("temperature", {"a": 0.3, "b": 0.8, "c": 0.3}, same_deal=True)
    rows = effect_rows(games, players, ["temperature"])
    text = markdown(rows)
    assert len(rows) == 2 and text.count("\n") == 2 + 2  # a header, its rule, a row per effect
    assert "| effect | where | effect (points) | 95% interval | n | paired | verdict |" in text
    fig = forest_plot(rows)
    assert len(fig.axes[0].get_yticklabels()) == 2


def test_a_condition_some_runs_did_not_set_is_its_own_value_not_a_crash():
    """A folder where one run had ``--seat`` and another did not: the condition is missing (NaN) in some games.
    pandas 3's ``astype(str)`` keeps NaN, and sorting it with text raised TypeError in ``toolkit report``
    (session 19's maintainer review, F1); the missing value is now the value ``(not set)``."""
    from toolkit.analysis.conclusions import effects

    games, players = study("seat", {"a": 0.3, "b": 0.8}, same_deal=True)
    games["seat"] = games["seat"].map({"a": None, "b": '["Player2=random"]'}).astype(object)
    row = effect_rows(games, players, ["seat"]).iloc[0]
    assert row["effect"] == 'seat: ["Player2=random"] − (not set)' and row["n"] == "40 seeds"
    events = pd.DataFrame({"game_id": games["game_id"], "seq": 0, "day": 1, "phase": "day", "kind": "speech",
                           "actor": "Player1", "target": None, "text": "hello"})
    assert '**seat** ["Player2=random"] − (not set)' in effects(games, events, players, ["seat"])[0]
