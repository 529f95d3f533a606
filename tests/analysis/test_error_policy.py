"""The error-survival check and rating a study under two error policies (toolkit.analysis.error_policy), on
hand-made tables whose answer is known, and on real games played under two policies."""

import asyncio

import pandas as pd
import pytest

from toolkit.analysis.error_policy import clean_games, error_survival, policy_ratings, rescore_forfeit
from toolkit.record.load import load
from toolkit.record.run_log import Run
from toolkit.werewolf.game import GameConfig, play_games


def study(n=40):
    """A (village) against B (wolves) and back. A wins every game in which B's seat fell back, and B every
    clean game: A's edge is all error survival."""
    games, players, events = [], [], []
    for i in range(n):
        village, wolves = ("A", "B") if i % 2 == 0 else ("B", "A")
        b_failed = i % 4 in (0, 1)
        winner = ("village" if village == "A" else "werewolves") if b_failed else (
            "village" if village == "B" else "werewolves")
        gid = f"g{i}"
        games.append({"game_id": gid, "winner": winner, "win_reason": "x", "n_fallbacks": int(b_failed),
                      "error_policy": "fallback"})
        players += [{"game_id": gid, "seat": "P1", "spec": village, "side": "village", "role": "Villager"},
                    {"game_id": gid, "seat": "P2", "spec": wolves, "side": "werewolves", "role": "Werewolf"}]
        events.append({"game_id": gid, "seq": 0, "actor": "P1" if village == "B" else "P2",
                       "fallback": b_failed})
    return pd.DataFrame(games), pd.DataFrame(players), pd.DataFrame(events)


def test_the_error_survival_check_shows_a_rating_won_on_errors():
    games, players, _ = study()
    assert len(clean_games(games)) == 20
    table = error_survival(games, players).set_index(["spec", "side"])
    assert table.loc[("A", "village"), "n_all"] == 20 and table.loc[("A", "village"), "n_clean"] == 10
    # on all games A and B are even; on clean ones B wins them all: A's rating drops
    assert table.loc[("A", "village"), "shift"] < -1 and table.loc[("B", "village"), "shift"] > 1


def test_rescoring_under_forfeit_makes_the_erring_side_lose():
    games, players, events = study()
    rescored = rescore_forfeit(games, players, events).set_index("game_id")
    # g0: B (wolves) fell back -> village (A) wins; unchanged games keep their winner
    assert rescored.loc["g0", "winner"] == "village" and rescored.loc["g0", "win_reason"].startswith("forfeit: P2")
    assert (rescored.loc["g2", "winner"] == games.set_index("game_id").loc["g2", "winner"])
    table, sentence = policy_ratings(games, players, events)
    assert "rescored under Kaggle's forfeit" in sentence and {"rating_played", "rating_forfeit"} <= set(table)


def test_a_study_played_under_two_policies_is_rated_per_policy(tmp_path):
    configs = [GameConfig(seed=s, seats={"Player1": "chaos:0.4"}, error_policy=policy)
               for s in range(6) for policy in ("fallback", "forfeit")]
    with Run(tmp_path) as run:
        asyncio.run(play_games(configs, run))
    t = load(tmp_path)
    assert set(t.games["error_policy"]) == {"fallback", "forfeit"}
    table, sentence = policy_ratings(t.games, t.players, t.events)
    assert sentence.startswith("as played under fallback and under forfeit")
    assert {"rating_fallback", "rating_forfeit", "n_fallback", "n_forfeit"} <= set(table)
    assert table["n_forfeit"].max() <= 6 and table["n_fallback"].max() <= 6


@pytest.mark.parametrize("column", ["n_fallbacks", "error_policy"])
def test_older_tables_without_the_columns_still_rate(column):
    games, players, events = study()
    games = games.drop(columns=[column])
    assert len(error_survival(games, players)) and len(policy_ratings(games, players, events)[0])


@pytest.mark.slow
def test_the_report_prints_the_error_survival_check_and_two_policies(tmp_path):
    from toolkit.analysis.report import write_report

    configs = [GameConfig(seed=s, seats={"Player1": "chaos:0.5", "Player2": "random"}) for s in range(8)]
    with Run(tmp_path / "study") as run:
        asyncio.run(play_games(configs, run))
    written = write_report(tmp_path / "study", tmp_path / "report")
    text = next(p for p in written if p.suffix == ".md").read_text()
    section = text[text.index("## Error policies"):]
    assert "rating_all" in section and "rating_clean" in section and "shift" in section
    assert "rescored under Kaggle's forfeit" in section and "rating_forfeit" in section


def tables_not_set_apart(text: str) -> list[str]:
    """The lines of a Markdown text that stand right above a table's first row (no blank line between): many
    renderers then show no table."""
    lines = text.split("\n")
    return [above for above, line in zip(lines, lines[1:])
            if line.startswith("|") and above.strip() and not above.startswith("|")]


def test_each_conditions_label_is_set_apart_from_its_table():
    """The section per condition: "**preset = classic7**: " then a blank line, then the table (before, the label
    stood on the line right above the table, and Python-Markdown showed the table as a paragraph of pipes). Also
    checked on the committed example's summary.md, every section of it."""
    from pathlib import Path

    from toolkit.analysis.report_tables import error_policy_sections
    from toolkit.record.load import Results

    games, players, events = study()
    games = games.assign(preset=["classic7" if i < 20 else "standard9" for i in range(len(games))])
    frame = pd.DataFrame
    tables = Results(runs=frame(), games=games, players=players, events=events, calls=frame(), sessions=frame(),
                     tool_calls=frame(), attempts=frame(), beliefs=frame())
    text = "\n".join(error_policy_sections(tables, games, ["preset"]))
    assert "**preset = classic7**: " in text and "**preset = standard9**: " in text
    assert tables_not_set_apart(text) == []
    example = (Path(__file__).resolve().parents[2] / "results" / "examples" / "summary.md").read_text()
    assert tables_not_set_apart(example) == []
    try:
        import markdown
    except ImportError:  # the check above stands alone
        return
    for page in (text, example):
        html = markdown.markdown(page, extensions=["tables"])
        assert html.count("<table>") == page.count("\n|---|") > 0
