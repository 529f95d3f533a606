"""The random player is the chance player by definition: on real offline games (the example study's
tables, ``results/examples/tables``: 1,746 games played by the game engine with heuristic, mixed and random
seats, every ordered pairing of village and wolf model) its lift over chance must be within its interval
of 0 on every metric with a chance column — else the chance level is wrong (allowing for the one interval
in twenty that misses by chance: see ``check_family``). The heuristic is compared with the best constant
guess as well as with chance."""

from pathlib import Path

import pytest

from toolkit import analysis as A
from toolkit.record.load import load

TABLES = Path(__file__).resolve().parents[2] / "results" / "examples" / "tables"


@pytest.fixture(scope="module")
def example():
    if not (TABLES / "games.parquet").exists():
        pytest.skip("the example study's tables are not in this checkout")
    return load(TABLES, complete_games=True)


def part(t, preset, village=None):
    """Tables of one preset (the report never pools presets), optionally only games with that village model."""
    g = t.games[t.games["preset"] == preset]
    if village:
        v = t.players[(t.players["side"] == "village")].groupby("game_id")["spec"].first()
        g = g[g["game_id"].map(v) == village]
    ids = set(g["game_id"])
    sub = {name: getattr(t, name)[getattr(t, name)["game_id"].isin(ids)] for name in ("events", "players", "beliefs")}
    return g, sub["events"], sub["players"], sub["beliefs"]


def at_chance(table, what, found):
    """Collect the rows (with at least MIN_GAMES games) whose lift the test checks."""
    table = table[table["n_games"] >= A.MIN_GAMES]
    assert len(table), what
    found += [(what, row) for row in table.to_dict("records")]


def check_family(found):
    """About 20 metrics per preset: one 95% interval in 20 misses 0 by chance alone. Each lift must be
    within its interval widened to the family-wise 95% level (Bonferroni over the metrics checked), and at
    most 10% + 1 of the plain 95% intervals may miss 0."""
    from scipy.stats import norm

    wide = norm.ppf(1 - 0.025 / len(found)) / A.Z95
    misses = []
    for what, row in found:
        half = (row["lift_ci_high"] - row["lift_ci_low"]) / 2
        centre = (row["lift_ci_high"] + row["lift_ci_low"]) / 2
        assert abs(centre) <= wide * half, (what, row)
        if not row["lift_ci_low"] <= 0 <= row["lift_ci_high"]:
            misses.append(what)
    assert len(misses) <= 1 + len(found) // 10, misses


@pytest.mark.parametrize("preset", ["classic7", "standard9"])
def test_the_random_player_is_at_chance_on_every_metric_with_a_chance_column(example, preset):
    games, events, players, beliefs = part(example, preset, village="random")
    found = []
    at_chance(A.vote_accuracy(events, players, ["round"]), "village ballots", found)
    night = A.night_actions(events, players, ["spec"], games)
    at_chance(night[(night["spec"] == "random") & night["chance"].notna()], "night actions", found)
    at_chance(A.identity_accuracy(beliefs, players, ["side"]).query("side == 'village'"), "identity (village)",
              found)
    detection = A.wolf_detection(beliefs, players, ["spec"])
    at_chance(detection, "wolf detection", found)
    assert abs(detection["rate"].iloc[0] - detection["false_positive"].iloc[0]) < 0.03  # recall ≈ false positives
    at_chance(A.false_claims_followed(events, players).query("measure == 'followed'"), "claims followed", found)
    at_chance(A.vote_swing(events, players, ["side"]).query("side == 'werewolves'"), "vote swing", found)
    games_w, events_w, players_w, beliefs_w = part(example, preset)
    wolves = A.identity_accuracy(beliefs_w, players_w, ["spec", "side"]).query("spec == 'random'")
    at_chance(wolves, "identity (random, both sides)", found)
    check_family(found)


@pytest.mark.parametrize("preset", ["classic7", "standard9"])
def test_the_best_constant_guess_is_the_bar_for_identity_inference(example, preset):
    """A constant guess (the majority role among the unseen seats) beats chance by construction; the
    heuristic villagers beat it too, the random player does not."""
    _, _, players, beliefs = part(example, preset)
    acc = A.identity_accuracy(beliefs, players, ["spec", "side"]).set_index(["spec", "side"])
    assert (acc["baseline"] > acc["chance"]).all()
    heuristic = acc.loc[("heuristic", "village")]
    assert heuristic["lift_ci_low"] > 0 and heuristic["lift_baseline_ci_low"] > 0
    assert (acc.xs("random", level="spec")["lift_baseline_ci_high"] < 0).all()
