"""The study's design and its conclusions: the village-model × wolf-model matrix counts each pairing's games
once and nothing else, and every sentence of the conclusions quotes a number the tables give."""

import re

import pytest

from toolkit.analysis.conclusions import conclusions, design_matrix, matrix_text, side_models
from toolkit.analysis.report import write_report
from toolkit.record.load import load
from toolkit.study.experiments import run_werewolf_cell

PAIRINGS = [("heuristic", "heuristic"), ("heuristic", "random"), ("random", "heuristic"), ("random", "random")]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("study")
    for village, wolves in PAIRINGS:  # 4 cells of 12 seeded offline games (about 0.2 s a game)
        run_werewolf_cell(str(root / f"{village}-v-{wolves}"), n_games=12, seed=0, village_model=village,
                          wolf_model=wolves)
    return root, load(root, complete_games=True)


@pytest.mark.slow
def test_the_matrix_has_one_cell_per_pairing_with_its_own_games(study):
    root, t = study
    m = design_matrix(t.games, t.players).set_index(["village_model", "wolf_model"])
    assert sorted(m.index) == sorted(PAIRINGS)
    for village, wolves in PAIRINGS:  # recount each cell from its own folder's games
        own = load(root / f"{village}-v-{wolves}", complete_games=True).games
        assert m.loc[(village, wolves), "n"] == len(own) == 12
        assert m.loc[(village, wolves), "k"] == (own["winner"] == "village").sum()
        assert m.loc[(village, wolves), "method"] == "exact"  # below 30 games
    # the cells differ on real data: the matrix measures something
    assert m["rate"].nunique() > 1
    grid = matrix_text(design_matrix(t.games, t.players))
    assert list(grid.columns) == ["village", "wolves: heuristic", "wolves: random"]
    assert grid.iloc[0, 1].endswith("n=12")


@pytest.mark.slow
def test_a_side_of_several_models_is_named_as_such(study):
    _, t = study
    players = t.players.copy()
    first = players["game_id"].iloc[0]
    villager = players.index[(players["game_id"] == first) & (players["role"] != "Werewolf")][0]
    players.loc[villager, "spec"] = "zeta"
    models = side_models(players).set_index("game_id")
    assert "zeta" in models.loc[first, "village_model"] and "+" in models.loc[first, "village_model"]


def test_conclusions_quote_the_tables(study):
    _, t = study
    (text,) = conclusions(t.games, t.players)
    village = (t.games["winner"] == "village").mean()
    assert f"The village won {100 * village:.1f}%" in text and "of 48 games" in text
    assert "Holm" in text and "As village," in text and "As werewolves," in text
    m = design_matrix(t.games, t.players)
    off = m[m["village_model"] != m["wolf_model"]]
    low = off["rate"].min()
    assert re.search(rf"from {100 * low:.1f}% \[", text)


@pytest.mark.slow
def test_the_report_opens_with_conclusions_and_the_design(study, tmp_path):
    root, _ = study
    write_report(root, tmp_path / "out")
    text = (tmp_path / "out" / "summary.md").read_text()
    assert text.index("## Conclusions") < text.index("## Design: village win rate") < text.index("## Win rates")
    assert "| village | wolves: heuristic | wolves: random |" in text.replace("| wolf_model | reflection ", "")
    # each column one kind of quantity: every `rate` is a share, the potions' timing has a column of its own
    assert "mean_night" in text and rate_cells(text) and max(rate_cells(text)) <= 1


def rate_cells(text: str) -> list[float]:
    """The numbers in every markdown table column named ``rate``."""
    values, header = [], None
    lines = text.split("\n")
    for line, after in zip(lines, lines[1:] + [""]):
        if line.startswith("| ") and after.startswith("|---"):
            header = [c.strip() for c in line.strip("|").split("|")]
        elif header and line.startswith("| "):
            cells = dict(zip(header, (c.strip() for c in line.strip("|").split("|"))))
            if cells.get("rate", "").replace(".", "", 1).replace("-", "", 1).isdigit():
                values.append(float(cells["rate"]))
        elif not line.startswith("|"):
            header = None
    return values


def test_one_model_everywhere_has_nothing_to_rank(tmp_path):
    t = run_werewolf_cell(str(tmp_path / "one"), n_games=3, seed=0)
    (text,) = conclusions(t.games, t.players)
    assert "nothing to rank" in text and "As village" not in text


def test_figures_say_what_they_pool_and_keep_their_n_labels_apart(study):
    """The win-rate title names the pooled pairings; with several models the vote plot puts each series' n
    under its day, one line each (labels above the points overlapped), and they add up to the table's n."""
    from toolkit import analysis as A
    from toolkit.analysis import plots as P
    from toolkit.analysis.report_tables import conclusions_pairings

    _, t = study
    assert conclusions_pairings(t.games, t.players) == 4
    fig = P.plot_vote_accuracy_by_day(t.events, t.players, "spec")
    ax = fig.axes[0]
    assert not ax.texts and "top to bottom: heuristic, random" in ax.get_xlabel()
    table = A.vote_accuracy(t.events, t.players, ["round", "day", "spec"])
    first = table[table["round"] == "first"]
    shown = sum(int(v) for label in ax.get_xticklabels() for v in label.get_text().split("\n")[1:])
    assert shown == first["n"].sum() > 0


def test_a_game_without_a_side_keeps_its_cell_and_a_spec_stays_on_one_line():
    import pandas as pd

    games = pd.DataFrame({"game_id": ["a", "b", "c"], "winner": ["village", "error", "draw"]})
    players = pd.DataFrame({"game_id": ["a", "a", "b"], "seat": ["P1", "P2", "P1"],
                            "role": ["Villager", "Werewolf", "Villager"], "spec": ["x\ny", "z", "x\ny"]})
    m = design_matrix(games, players)
    assert m["n"].sum() == 3 and "(none)" in set(m["wolf_model"]) and "x y" in set(m["village_model"])
    grid = matrix_text(m)
    assert "wolves: (none)" in grid.columns and not grid.to_string().count("\n") > len(grid)


def synthetic_pairings(rates: dict, n: int = 200, seed: int = 0):
    """Games of a pairs design whose village win rate per (village model, wolf model) is ``rates``: outcomes
    drawn (seeded) from those rates; one seat per side is enough for the side labels."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    games, players = [], []
    for (village, wolves), p in rates.items():
        for i in range(n):
            gid = f"{village}-{wolves}-{i}"
            games.append({"game_id": gid, "preset": "classic7", "seed": i,
                          "winner": "village" if rng.random() < p else "werewolves"})
            players += [{"game_id": gid, "seat": "P1", "role": "Villager", "side": "village", "spec": village},
                        {"game_id": gid, "seat": "P2", "role": "Werewolf", "side": "werewolves", "spec": wolves}]
    return pd.DataFrame(games), pd.DataFrame(players)


@pytest.mark.slow
def test_the_conclusions_say_when_an_order_depends_on_the_opponent():
    """Strong wolves beat weak ones against strong villagers only (0.2 vs 0.6 village wins) and not at all
    against weak ones (0.1 vs 0.1): the average order is named, and the per-opponent differences and the
    interaction test say it does not hold against every opponent. Main effects only: no such sentence."""
    from toolkit.analysis.ratings import interaction_test

    games, players = synthetic_pairings({("S", "S"): 0.2, ("S", "W"): 0.6, ("W", "S"): 0.1, ("W", "W"): 0.1})
    text = " ".join(conclusions(games, players))
    assert "As werewolves, the order of S and W is not the same against every opponent" in text
    assert "against S villagers" in text and "against W villagers" in text
    assert interaction_test(games, players)["p"] < 0.01 and "do not fit one strength" in text
    logistic = lambda x: 1 / (1 + 2.718281828459045 ** -x)  # noqa: E731 (one line)
    # exactly main effects on the logit scale: village S +0.5, W −0.5; wolves S +0.5, W −0.5
    additive = {(v, w): logistic((0.5 if v == "S" else -0.5) - (0.5 if w == "S" else -0.5))
                for v in "SW" for w in "SW"}
    games, players = synthetic_pairings(additive, n=2000, seed=1)
    text = " ".join(conclusions(games, players))
    assert "not the same against every opponent" not in text
    assert interaction_test(games, players)["p"] > 0.05


@pytest.fixture(scope="module")
def reflection_study(tmp_path_factory):
    """The docs' study (docs/experiments.md): reflection on and off against two wolf models, offline players,
    which ignore reflection: its games are identical."""
    root = tmp_path_factory.mktemp("reflection")
    for wolves in ("heuristic", "random"):
        for reflection in (False, True):
            run_werewolf_cell(str(root / f"{wolves}-{reflection}"), n_games=12, seed=0, wolf_model=wolves,
                              reflection=reflection)
    return root


@pytest.mark.slow
def test_the_conclusions_open_with_each_grid_variables_effect_unpooled(reflection_study, tmp_path):
    from toolkit.analysis.intervals import paired_difference

    write_report(reflection_study, tmp_path / "out")
    text = (tmp_path / "out" / "summary.md").read_text()
    conclusions_part = text.split("## Conclusions\n")[1].split("\n## ")[0]
    assert conclusions_part.lstrip().startswith("**What each grid variable did**")
    effects = [line for line in conclusions_part.splitlines() if line.startswith("- **")]
    # one line per variable and per value of the other variable: nothing pooled across it
    assert [line.split(":")[0] for line in effects] == [
        "- **wolf_model** random − heuristic at reflection=False", "- **wolf_model** random − heuristic at "
        "reflection=True", "- **reflection** True − False at wolf_model=heuristic",
        "- **reflection** True − False at wolf_model=random"]
    assert all("**no effect: identical games** — all 12 shared seeds" in line for line in effects[2:])
    # the wolf model's effect is the paired difference over the 12 shared seeds, interval and all
    t = load(reflection_study, complete_games=True)
    from toolkit.record.load import games_with_params
    g = games_with_params(t)
    g = g[g["reflection"].astype(str) == "False"].assign(win=lambda d: (d["winner"] == "village").astype(float))
    wins = g.pivot_table(index="seed", columns="wolf_model", values="win")
    d = paired_difference(wins["random"], [1.0] * 12, wins["heuristic"], [1.0] * 12)
    assert f"{100 * d['diff']:+.1f} points [{100 * d['ci_low']:+.1f}, {100 * d['ci_high']:+.1f}] over 12 shared " \
           "seeds" in effects[0]
    # a paragraph that pools the other variable says so; the header no longer claims nothing is pooled
    assert "**reflection False** (24 games; pooling wolf_model (heuristic, random), which the design matrix" in text
    assert "except where a line says what it pools" in text
    rates = text.split("## Win rates by side")[1].split("\n## ")[0]  # split by both variables: one pairing a row
    assert "pools" not in rates
    # one pairing per condition: no 0.000 [0.000, 0.000] ratings, and a line saying why
    assert "ratings_" not in text and "Not rated: wolf_model=heuristic, reflection=False;" in text
    ratings = text.split("## Ratings with a side term")[1].split("\n## ")[0]
    assert not re.search(r"\| 0\.000 \| 0\.000 \| 0\.000 \|", ratings)
    # nor a paired difference of 0.000 [0.000, 0.000] between conditions whose games are identical
    paired = text.split("## Paired comparisons between conditions")[1].split("\n## ")[0]
    assert "played identical games (no effect" in paired and "reflection=False | wolf_model=heuristic, " \
        "reflection=True" not in paired


@pytest.mark.slow
def test_plot_titles_and_axes_say_what_they_show(reflection_study, study):
    from toolkit import analysis as A
    from toolkit.analysis import plots as P
    from toolkit.analysis.werewolf_sections import pooled_note
    from toolkit.record.load import games_with_params

    t = load(reflection_study, complete_games=True)
    g = games_with_params(t)
    assert pooled_note(g, t.players, ["wolf_model", "reflection"]) == ""  # each point is one pairing
    # what a point pools, exactly: its pairings and each one's games (the old title said "up to 2 ... pooled")
    assert pooled_note(g, t.players, ["reflection"]) == ("2 model pairings, 12 games each (the design matrix "
                                                          "splits them)")
    uneven = g[~((g["wolf_model"] == "random") & (g["reflection"] == True))]  # noqa: E712 (a column of bools)
    assert pooled_note(uneven, t.players, ["reflection"]).startswith("1–2 model pairings, 12 games each")
    fig = P.plot_win_rates(g, ["wolf_model", "reflection"])
    assert fig.axes[0].get_ylabel() == "win rate (95% CI: exact)"  # 12 games a point: exact, not Wilson
    _, s = study
    long = "Ratings by side: preset=classic7, reflection=True, a condition with a long name=value"
    fig = P.plot_ratings(A.ratings(s.games, s.players, by_side=True), title=long)
    ax = fig.axes[0]
    assert "curvature" in ax.get_xlabel() and "bootstrap" not in ax.get_xlabel()
    assert all(len(line) <= 60 for line in ax.get_title().split("\n")) and ax.get_title().replace("\n", " ") == long
