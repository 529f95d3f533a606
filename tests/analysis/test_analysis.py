"""Every metric on small hand-made tables whose answers are known."""

import math

import pandas as pd
import pytest

from toolkit import analysis as A

ROLES = {"P1": "Werewolf", "P2": "Werewolf", "P3": "Villager", "P4": "Seer", "P5": "Witch", "P6": "Guard"}


def players(game_ids=("g1", "g2"), dead=(("g1", "P4"),)):
    rows = []
    for g in game_ids:
        for seat, role in ROLES.items():
            rows.append({"game_id": g, "seat": seat, "role": role,
                         "side": "werewolves" if role == "Werewolf" else "village",
                         "spec": "m", "survived": (g, seat) not in dead})
    return pd.DataFrame(rows)


def ev(game, day, kind, actor, target):
    return {"game_id": game, "seq": 0, "day": day, "phase": "x", "kind": kind, "actor": actor, "target": target,
            "text": "", "visibility": "public", "fallback": False}


def test_wilson_matches_the_textbook_values():
    low, high = A.wilson(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    assert A.wilson(0, 10)[0] == 0.0 and math.isnan(A.wilson(0, 0)[0])


def test_bootstrap_interval_is_seeded_and_brackets_the_mean():
    values = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    ci = A.bootstrap_ci(values)
    assert ci == A.bootstrap_ci(values) and ci[0] < 5.5 < ci[1]
    skewed = [1, 2, 3, 4, 5, 6, 7, 8, 9, 100]  # the same values in another order: the same interval
    assert A.bootstrap_ci(skewed) == A.bootstrap_ci(skewed[::-1])
    assert A.bootstrap_ci([3.0]) == (3.0, 3.0)


def test_sample_size():
    assert A.sample_size(0.05) == 385 and A.sample_size(0.1) == 97 and A.sample_size(0.05, p=0.2) == 246


@pytest.mark.slow
def test_win_rates_by_group():
    games = pd.DataFrame({"game_id": list("abcde"), "winner": ["village", "werewolves", "village", "draw", "village"],
                          "preset": ["x", "x", "x", "y", "y"]})
    overall = A.win_rates(games).set_index("side")
    assert overall.loc["village", "k"] == 3 and overall.loc["village", "n"] == 5 and overall.loc["draw", "k"] == 1
    by = A.win_rates(games, ["preset"]).set_index(["preset", "side"])
    assert by.loc[("x", "village"), "rate"] == pytest.approx(2 / 3) and ("x", "draw") not in by.index
    assert by.loc[("y", "village"), "ci_low"] == pytest.approx(A.exact(1, 2)[0])  # 2 games: exact interval


def test_vote_accuracy_and_voting_success():
    events = pd.DataFrame([
        ev("g1", 1, "vote", "P3", "P1"), ev("g1", 1, "vote", "P4", "P1"), ev("g1", 1, "vote", "P5", "P6"),
        ev("g1", 1, "vote", "P1", "P3"),  # a wolf's vote: not counted
        ev("g1", 1, "elimination", None, "P1"),
        ev("g1", 2, "vote", "P3", "P5"), ev("g1", 2, "vote", "P4", "P2"),  # day 2: tie, nobody out
    ])
    acc = A.vote_accuracy(events, players()).iloc[0]
    assert (acc["k"], acc["n"]) == (3, 5)
    # day 1: 2 wolves among the 5 others; day 2 (after P1's elimination): 1 wolf among 4 others
    assert acc["chance"] == pytest.approx((3 * 2 / 5 + 2 * 1 / 4) / 5)
    assert acc["lift"] == pytest.approx(acc["rate"] - acc["chance"]) and acc["n_games"] == 1
    by_day = A.vote_accuracy(events, players(), ["day"]).set_index("day")
    assert by_day.loc[1, "rate"] == pytest.approx(2 / 3) and by_day.loc[2, "rate"] == pytest.approx(1 / 2)
    success = A.voting_success(events, players()).iloc[0]
    assert (success["k"], success["n"]) == (1, 2)


def test_key_role_survival():
    table = A.key_role_survival(players()).set_index("role")
    assert table.loc["Seer", "k"] == 1 and table.loc["Seer", "n"] == 2 and table.loc["Witch", "rate"] == 1.0
    assert "Villager" not in table.index


def test_night_action_metrics():
    events = pd.DataFrame([
        ev("g1", 1, "check", "P4", "P1"), ev("g1", 2, "check", "P4", "P3"), ev("g1", 3, "check", "P4", "P2"),
        ev("g1", 1, "save", "P5", "P3"), ev("g1", 2, "poison", "P5", "P6"),
        ev("g1", 1, "protect", "P6", "P3"), ev("g1", 1, "kill", None, "P3"),
        ev("g1", 2, "protect", "P6", "P6"), ev("g1", 2, "kill", None, "P4"),
    ])
    m = A.night_actions(events, players()).set_index("metric")
    assert (m.loc["seer_wolf_check_rate", "k"], m.loc["seer_wolf_check_rate", "n"]) == (2, 3)
    assert m.loc["seer_wolf_check_rate", "random"] == pytest.approx(2 / 5)  # nobody died: 2 wolves of 5 others
    # the bar, a Seer that never rechecks: 2 of 5, then 1 wolf among the 4 unchecked, then 1 among 3
    assert m.loc["seer_wolf_check_rate", "chance"] == pytest.approx((2 / 5 + 1 / 4 + 1 / 3) / 3)
    # the guard protected P3 on night 1, so the witch's save of P3 changed nothing: it can fail, and did
    assert m.loc["witch_save_needed", "rate"] == 0.0 and m.loc["witch_poison_on_wolf", "rate"] == 0.0
    assert (m.loc["guard_save_rate", "k"], m.loc["guard_save_rate", "n"]) == (1, 2)
    assert m.loc["witch_save_night", "rate"] == 1 and m.loc["witch_poison_night", "rate"] == 2
    assert "witch_save_correct" not in m.index


def test_per_game_costs():
    games = pd.DataFrame({"n_calls": [10, 20, 30], "prompt_tokens": [1, 2, 3], "completion_tokens": [1, 1, 1],
                          "cost_usd": [0.5, None, 1.5], "n_fallbacks": [0, 1, 2]})
    m = A.per_game_costs(games).set_index("metric")
    assert m.loc["n_calls", "mean"] == 20 and m.loc["n_calls", "n"] == 3
    assert m.loc["cost_usd", "mean"] == 1.0 and m.loc["cost_usd", "n"] == 2  # unknown cost is not zero


def test_ratings_order_models_by_strength():
    games, rows = [], []
    for i in range(60):
        strong_village = i % 2 == 0
        strong_won = i % 12 not in (0, 1)  # the strong model wins 5 of 6 on either side
        winner = "village" if strong_won == strong_village else "werewolves"
        games.append({"game_id": f"g{i}", "winner": winner})
        for seat, role in ROLES.items():
            side = "werewolves" if role == "Werewolf" else "village"
            model = "strong" if (side == "village") == strong_village else "weak"
            rows.append({"game_id": f"g{i}", "seat": seat, "role": role, "side": side, "spec": model})
    r = A.ratings(pd.DataFrame(games), pd.DataFrame(rows), n_boot=50).set_index("spec")
    assert r.loc["strong", "rating"] > r.loc["weak", "rating"]
    assert r.loc["strong", "ci_low"] > r.loc["weak", "ci_high"]
    assert r.loc["strong", "rating"] - r.loc["weak", "rating"] == pytest.approx(math.log(5), abs=0.25)
    assert r.loc["(side term)", "ci_low"] < 0 < r.loc["(side term)", "ci_high"]  # no side advantage here


def test_engineer_success_and_tool_usage():
    sessions = pd.DataFrame({"session_id": ["a", "b", "c"], "spec": ["x", "x", "y"], "task": ["t1", "t2", "t1"],
                             "success": [True, False, True], "steps": [4, 6, 3]})
    tools = pd.DataFrame({"session_id": ["a", "a", "b", "b", "c"],
                          "tool": ["Terminal.run_command", "Editor.open_file", "Terminal.run_command",
                                   "Terminal.run_command", "Editor.open_file"],
                          "ok": [True, True, False, True, True]})
    s = A.engineer_success(sessions).set_index("spec")
    assert (s.loc["x", "k"], s.loc["x", "n"], s.loc["x", "steps_mean"]) == (1, 2, 5.0)
    u = A.tool_usage(tools, sessions).set_index(["spec", "tool"])
    assert u.loc[("x", "Terminal.run_command"), "calls"] == 3
    assert u.loc[("x", "Terminal.run_command"), "error_rate"] == pytest.approx(1 / 3)
    assert u.loc[("x", "Terminal.run_command"), "calls_per_session"] == 1.5
    assert u.loc[("y", "Editor.open_file"), "error_rate"] == 0.0


def test_the_engineer_tables_header_names_the_interval_its_rows_use():
    """The rows say `exact` below 30 sessions (intervals.proportion): the header said Wilson only."""
    from toolkit.analysis.intervals import EXACT_BELOW
    from toolkit.analysis.report import ENGINEER_HEADER

    sessions = pd.DataFrame({"session_id": list("abc"), "spec": ["x"] * 3, "success": [True, False, True],
                             "steps": [4, 6, 3]})
    methods = set(A.engineer_success(sessions)["method"])
    assert methods == {"exact"} and "exact below" in ENGINEER_HEADER and str(EXACT_BELOW) in ENGINEER_HEADER
    assert "Wilson" in ENGINEER_HEADER
