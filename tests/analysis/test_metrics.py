"""Intervals by game, chance baselines, the harness metrics, beliefs and claims — on hand-made tables whose
answers are known, on seeded synthetic data, and on real offline games."""

import numpy as np
import pandas as pd
import pytest

from toolkit import analysis as A

ROLES = {"P1": "Werewolf", "P2": "Werewolf", "P3": "Villager", "P4": "Seer", "P5": "Witch", "P6": "Guard"}


def players(game_ids=("g1",), spec="m", survived=()):
    return pd.DataFrame([{"game_id": g, "seat": s, "role": r, "side": "werewolves" if r == "Werewolf" else "village",
                          "spec": spec, "survived": (g, s) in survived} for g in game_ids for s, r in ROLES.items()])


def ev(seq, day, kind, actor, target, phase="x", text="", game="g1"):
    return {"game_id": game, "seq": seq, "day": day, "phase": phase, "kind": kind, "actor": actor, "target": target,
            "text": text, "visibility": "public", "fallback": False}


# ------------------------------------------------------------------ intervals by game
def independent_cluster_bootstrap(k, n, n_boot, seed):
    """A second, plain implementation: resample game indices with replacement, pool, take percentiles."""
    rng = np.random.default_rng(seed)
    stats = []
    for _ in range(n_boot):
        pick = rng.integers(0, len(k), len(k))
        stats.append(k[pick].sum() / n[pick].sum())
    return np.percentile(stats, [2.5, 97.5])


def test_cluster_interval_matches_an_independent_cluster_bootstrap_and_is_wider_than_wilson():
    rng = np.random.default_rng(7)
    p_game = rng.beta(2, 2, 150)  # each game has its own hit rate: votes within a game are correlated
    n = rng.integers(5, 15, 150)
    k = rng.binomial(n, p_game)
    ours = A.cluster_rate(k, n, n_boot=4000, seed=1)
    theirs = independent_cluster_bootstrap(k, n, 4000, seed=99)
    width, other = ours["ci_high"] - ours["ci_low"], theirs[1] - theirs[0]
    assert width == pytest.approx(other, rel=0.1)
    assert ours["ci_low"] == pytest.approx(theirs[0], abs=0.01)
    assert ours["ci_high"] == pytest.approx(theirs[1], abs=0.01)
    low, high = A.wilson(int(k.sum()), int(n.sum()))
    assert width > 1.5 * (high - low)  # treating votes as independent would be far too narrow
    assert A.cluster_rate(k, n, seed=3) == A.cluster_rate(k, n, seed=3)  # seeded


def test_a_rate_with_all_hits_never_gets_a_zero_width_interval():
    r = A.cluster_rate([3, 4, 2], [3, 4, 2])
    assert r["rate"] == 1.0 and r["ci_high"] - r["ci_low"] > 0.2


def test_sample_size_rejects_nonsense():
    with pytest.raises(ValueError, match="half_width"):
        A.sample_size(0)
    assert A.sample_size(0.05) == 385 and A.sample_size(0.05, design_effect=2) == 769


# ------------------------------------------------------------------ chance baselines
def test_vote_chance_counts_living_wolves_and_revote_candidates():
    events = pd.DataFrame([
        ev(1, 1, "death", None, "P6"),  # night 1: the guard died → 5 alive, 2 wolves
        ev(2, 1, "vote", "P3", "P1", "day_vote"), ev(3, 1, "vote", "P4", "P2", "day_vote"),
        ev(4, 1, "vote", "P5", "P3", "day_vote"), ev(5, 1, "vote", "P1", "P4", "day_vote"),
        ev(6, 1, "vote", "P2", "P5", "day_vote"),
    ])
    v = A.votes(events, players()).set_index("actor")
    assert v.loc["P3", "chance"] == pytest.approx(2 / 4) and v.loc["P1", "chance"] == pytest.approx(1 / 4)
    revote = pd.DataFrame([
        ev(2, 1, "vote", "P3", "P1", "day_vote"), ev(3, 1, "vote", "P4", "P1", "day_vote"),
        ev(4, 1, "vote", "P5", "P3", "day_vote"), ev(5, 1, "vote", "P1", "P3", "day_vote"),
        ev(6, 1, "vote", "P2", "P4", "day_vote"), ev(7, 1, "vote", "P6", "P5", "day_vote"),
        ev(8, 1, "vote", "P4", "P1", "day_revote"), ev(9, 1, "vote", "P3", "P1", "day_revote"),
    ])
    v = A.votes(revote, players())
    second = v[v["round"] == "revote"].set_index("actor")
    assert second.loc["P4", "chance"] == 0.5  # candidates P1 (wolf) and P3
    assert second.loc["P3", "chance"] == 1.0  # P3 cannot vote for itself: only P1 is left
    assert second.loc["P3", "forced"] and not second.loc["P4", "forced"]
    table = A.vote_accuracy(revote, players(), ["round"]).set_index("round")
    assert table.loc["first", "n"] == 4 and table.loc["revote", "n"] == 1  # P3's forced ballot left out


def test_an_abstention_is_no_ballot_for_vote_accuracy_and_a_miss_for_irp_as_kaggle_counts_it():
    events = pd.DataFrame([
        ev(2, 1, "vote", "P3", "P1", "day_vote"), ev(3, 1, "vote", "P4", None, "day_vote"),  # P4 abstains
        ev(4, 1, "vote", "P5", "P3", "day_vote"), ev(5, 1, "vote", "P6", None, "day_vote"),  # so does P6
    ])
    v = A.votes(events, players()).set_index("actor")
    assert v["abstain"].to_dict() == {"P3": False, "P4": True, "P5": False, "P6": True}
    ours = A.vote_accuracy(events, players()).iloc[0]
    assert (ours["k"], ours["n"]) == (1, 2)  # P3's hit, P5's miss; the two abstentions are no ballots
    kaggle = A.irp(events, players()).iloc[0]
    assert (kaggle["k"], kaggle["n"]) == (1, 4)  # the harness: every vote event, an abstention a miss


def test_guard_chance_counts_passing_self_protection_and_no_repeat():
    events = pd.DataFrame([
        ev(1, 1, "protect", "P6", "P4", "night"), ev(2, 1, "kill", "P1", "P3", "night"),
        ev(3, 1, "death", None, "P3", "night"),
        ev(4, 2, "protect", "P6", "P5", "night"), ev(5, 2, "kill", "P1", "P5", "night"),  # saved by the guard
        ev(6, 3, "protect", "P6", None, "night"), ev(7, 3, "kill", "P1", "P5", "night"),
    ])
    free = A.night_actions(events, players()).set_index("metric").loc["guard_save_rate"]
    # 6, 5, 5 alive; each night the guard may protect any living player (itself included) or pass
    assert free["random"] == pytest.approx((1 / 7 + 1 / 6 + 1 / 6) / 3)
    assert free["chance"] == 0.0  # the bar, protecting itself: the wolves never attacked the guard P6
    games = pd.DataFrame({"game_id": ["g1"], "preset": ["standard9"]})  # guard_no_repeat: true
    ruled = A.night_actions(events, players(), games=games).set_index("metric").loc["guard_save_rate"]
    # night 2: P4 (last night's) is blocked → 4 candidates + pass; night 3: P5 blocked and it is the victim
    assert free["k"] == 1 and ruled["k"] == 1
    assert ruled["random"] == pytest.approx((1 / 7 + 1 / 5 + 0) / 3)


def test_the_guard_bar_is_protecting_itself_and_a_dead_last_choice_blocks_nothing():
    """Under guard_no_repeat, last night's choice is out only while it lives (the engine offers the living: a
    dead player is no choice to remove); the bar protects the guard itself whenever that is legal."""
    events = pd.DataFrame([
        ev(1, 1, "protect", "P6", "P4", "night"), ev(2, 1, "kill", "P1", "P3", "night"),
        ev(3, 1, "death", None, "P3", "night"), ev(4, 1, "elimination", None, "P4", "day_vote"),  # P4 exiled
        ev(5, 2, "protect", "P6", "P6", "night"), ev(6, 2, "kill", "P1", "P6", "night"),  # self-protection saves
        ev(7, 3, "protect", "P6", "P5", "night"), ev(8, 3, "kill", "P1", "P6", "night"),  # P6 blocked, attacked
    ])
    games = pd.DataFrame({"game_id": ["g1"], "preset": ["standard9"]})
    r = A.night_actions(events, players(), games=games).set_index("metric").loc["guard_save_rate"]
    # night 2: P4 is dead, nothing removed: 4 living + pass (the old level removed a choice: 1/4);
    # night 3: P6 (itself) is blocked and is the victim: no legal answer saves it
    assert r["random"] == pytest.approx((1 / 7 + 1 / 5 + 0) / 3)
    # the bar: night 1 self-protection misses (P3 attacked), night 2 hits, night 3 self is blocked: 0
    assert r["chance"] == pytest.approx((0 + 1 + 0) / 3) and r["k"] == 1


def test_the_witchs_bar_leaves_out_the_victims_she_was_told_of():
    """Issue 45: the Witch is told the wolves' victim (never a wolf), so the best information-free poison is a
    random living player other than herself and those victims; the old bar (any other living player) was
    below it. Night 1: told P3, saves P3 (alive); night 2: told nothing (no antidote), poisons: 6 alive, 2
    wolves, P3 still known → 2 / (6 − 1 − 1). A told victim who died or is herself clears no one."""
    told = {"visibility": "P5"}
    events = pd.DataFrame([
        ev(1, 1, "kill", "P1", "P3", "night"), {**ev(2, 1, "announcement", None, "P3", "night"), **told},
        ev(3, 1, "save", "P5", "P3", "night"),
        ev(4, 2, "kill", "P1", "P4", "night"), ev(5, 2, "poison", "P5", "P2", "night"),
        ev(6, 1, "kill", "P1", "P4", "night", game="g2"), {**ev(7, 1, "announcement", None, "P4", "night",
                                                              game="g2"), **told},
        ev(8, 1, "death", None, "P4", "night", game="g2"), ev(9, 2, "kill", "P1", "P5", "night", game="g2"),
        {**ev(10, 2, "announcement", None, "P5", "night", game="g2"), **told},
        ev(11, 2, "poison", "P5", "P3", "night", game="g2"),
    ])
    r = A.night_actions(events, players(("g1", "g2"))).set_index("metric").loc["witch_poison_on_wolf"]
    # g1: 2 / 4 (P3 cleared); g2: P4 died, P5 is herself: 2 / (5 − 1)
    assert r["chance"] == pytest.approx((2 / 4 + 2 / 4) / 2)
    assert r["random"] == pytest.approx((2 / 5 + 2 / 4) / 2)
    assert BARS_WITCH in A.night_actions(events, players(("g1", "g2"))).set_index("metric").loc[
        "witch_poison_on_wolf", "bar"]


BARS_WITCH = "other than herself and the victims"


@pytest.mark.slow
def test_random_villagers_vote_at_chance_and_heuristic_lift_has_an_interval(tmp_path):
    from toolkit.study.experiments import run_werewolf_cell

    t = run_werewolf_cell(str(tmp_path / "r"), n_games=120, seed=0, model="random")
    r = A.vote_accuracy(t.events, t.players).iloc[0]
    assert r["ci_low"] <= r["chance"] <= r["ci_high"] and r["lift_ci_low"] < 0 < r["lift_ci_high"]
    t2 = run_werewolf_cell(str(tmp_path / "h"), n_games=120, seed=0)
    h = A.vote_accuracy(t2.events, t2.players, ["round"]).set_index("round")
    assert h.loc["first", "lift_ci_low"] < h.loc["first", "lift"] < h.loc["first", "lift_ci_high"]
    assert h.loc["first", "n_games"] == 120


# ------------------------------------------------------------------ harness metrics
def test_vss_ksr_margin_and_speed():
    events = pd.DataFrame([
        ev(1, 1, "vote", "P3", "P1", "day_vote"), ev(2, 1, "vote", "P4", "P1", "day_vote"),
        ev(3, 1, "vote", "P5", "P2", "day_vote"), ev(4, 1, "vote", "P1", "P3", "day_vote"),
        ev(5, 1, "elimination", None, "P1"),
        ev(6, 2, "vote", "P3", "P2", "day_vote"), ev(7, 2, "vote", "P4", "P5", "day_vote"),
    ])
    vss = A.vss(events, players()).iloc[0]
    assert (vss["k"], vss["n"]) == (2, 3)  # day 1 only (a wolf was exiled); P5 voted the other wolf
    games = pd.DataFrame({"game_id": ["g1"], "winner": ["village"], "days": [4]})
    alive = {("g1", "P3"), ("g1", "P4"), ("g1", "P5")}
    ps = players(survived=alive)
    k = A.ksr(games, ps, ["role"]).set_index("role")
    assert k.loc["Werewolf", "rate"] == 0.0 and k.loc["Seer", "rate"] == 1.0 and k.loc["Guard", "rate"] == 0.0
    ms = A.win_margin_speed(games, ps, ["side"]).set_index("metric")
    assert ms.loc["margin_of_win", "mean"] == pytest.approx(3 / 4) and ms.loc["speed_of_win", "mean"] == 0.25
    assert set(ms["side"]) == {"village"}  # only the winners' seats count


def test_role_adjusted_wins_subtract_what_the_role_wins_on_average():
    games = pd.DataFrame({"game_id": ["g1", "g2", "g3"], "winner": ["village", "werewolves", "werewolves"],
                          "days": [2, 3, 1]})
    ps = pd.concat([players(("g1", "g2"), spec="a"), players(("g3",), spec="b")], ignore_index=True)
    r = A.role_adjusted_wins(games, ps).set_index(["spec", "side"])
    # wolves win 2 of 3 games: model a's wolves won 1 of 2 (0.5 against 2/3), b's wolves 1 of 1
    assert r.loc[("a", "werewolves"), "baseline"] == pytest.approx(2 / 3)
    assert r.loc[("a", "werewolves"), "adjusted"] == pytest.approx(0.5 - 2 / 3)
    assert r.loc[("b", "werewolves"), "adjusted"] == pytest.approx(1 / 3)


def test_role_win_rates_cluster_by_game():
    games = pd.DataFrame({"game_id": ["g1", "g2"], "winner": ["village", "werewolves"], "days": [2, 3]})
    r = A.role_win_rates(games, players(("g1", "g2")), ["role"]).set_index("role")
    assert r.loc["Werewolf", "rate"] == 0.5 and r.loc["Werewolf", "n"] == 4 and r.loc["Werewolf", "n_games"] == 2


# ------------------------------------------------------------------ beliefs
def beliefs_table():
    rows = []
    # day 1: P3 (Villager) guesses P1 right, P2 wrong; day 2: both right. P1 (wolf) about its mate: dropped.
    for day, guesses in ((1, {"P1": ("Werewolf", 0.9), "P2": ("Seer", 0.6)}),
                         (2, {"P1": ("Werewolf", 0.8), "P2": ("Werewolf", 0.7)})):
        for about, (role, conf) in guesses.items():
            rows.append({"game_id": "g1", "seq": day * 10, "day": day, "phase": "day_speech", "seat": "P3",
                         "about": about, "guessed_role": role, "confidence": conf, "call_id": "c"})
    rows.append({"game_id": "g1", "seq": 10, "day": 1, "phase": "day_speech", "seat": "P1", "about": "P2",
                 "guessed_role": "Werewolf", "confidence": 1.0, "call_id": "c"})
    return pd.DataFrame(rows)


def test_identity_accuracy_brier_and_detection():
    b = beliefs_table()
    acc = A.identity_accuracy(b, players(), ["day"]).set_index("day")
    assert acc.loc[1, "rate"] == 0.5 and acc.loc[2, "rate"] == 1.0 and acc.loc[1, "n"] == 2  # mate row dropped
    assert acc.loc[1, "random"] == pytest.approx(1 / 5)  # a random guess among the five roles
    # the bar: the best constant guess of the only Villager on day 1 over the rows it has (about P1 and P2,
    # both wolves) is Werewolf, right on both
    assert acc.loc[1, "chance"] == 1.0 and acc.loc[1, "lift"] == -0.5
    bal = A.balanced_accuracy(b, players()).iloc[0]
    assert bal["balanced_accuracy"] == pytest.approx(3 / 4) and bal["chance"] == 1.0  # one true role seen
    br = A.brier(b, players()).iloc[0]
    assert br["mean"] == pytest.approx(((0.9 - 1) ** 2 + 0.6 ** 2 + (0.8 - 1) ** 2 + (0.7 - 1) ** 2) / 4)
    assert br["brier_skill"] == pytest.approx(1 - br["mean"] / br["reference"])
    det = A.wolf_detection(b, players()).set_index("day")
    assert det.loc[1, "rate"] == 0.5 and det.loc[2, "rate"] == 1.0
    assert (det["n_good"] == 0).all()  # P3 was asked only about the wolves: no false-positive rows...
    assert det["chance"].isna().all()  # ... so no bar: detection is recall minus the false-positive rate
    with pytest.raises(ValueError, match="lacks columns"):
        A.identity_accuracy(b.drop(columns=["about"]), players())


# ------------------------------------------------------------------ claims and deception
def test_claims_are_checked_against_the_truth():
    events = pd.DataFrame([
        ev(1, 1, "check", "P4", "P2"),
        ev(2, 1, "speech", "P1", None, "speech", "I am the Seer. Player3 is a werewolf. Vote for Player3."),
        ev(3, 1, "speech", "P4", None, "speech", "I am the Seer. Player2 is a werewolf."),
        ev(4, 1, "speech", "P5", None, "speech", "I am a Villager. I suspect Player1."),
        ev(5, 1, "speech", "P3", None, "speech", "I am a Villager."),
        ev(6, 1, "vote", "P3", "P2", "day_vote"), ev(7, 1, "vote", "P4", "P2", "day_vote"),
        ev(8, 1, "vote", "P5", "P3", "day_vote"), ev(9, 1, "vote", "P6", "P3", "day_vote"),
        ev(10, 1, "vote", "P1", "P3", "day_vote"), ev(11, 1, "vote", "P2", "P3", "day_vote"),
    ])
    ps = players()
    ps["seat"] = ps["seat"].str.replace("P", "Player")
    events["actor"] = events["actor"].str.replace("P", "Player")
    events["target"] = events["target"].str.replace("P", "Player")
    c = A.claims(events, ps)
    role = c[c["kind"] == "role"].set_index("speaker")
    assert not role.loc["Player1", "true"] and role.loc["Player4", "true"] and role.loc["Player3", "true"]
    assert not role.loc["Player5", "true"]  # the Witch hides as a Villager: a lie (concealment)
    check = c[c["kind"] == "check"].set_index("speaker")
    assert not check.loc["Player1", "true"] and check.loc["Player4", "true"]
    lies = A.lie_rates(events, ps, ["side", "kind"]).set_index(["side", "kind"])
    assert lies.loc[("werewolves", "role"), "rate"] == 1.0 and lies.loc[("village", "check"), "rate"] == 0.0
    assert lies.loc[("werewolves", "role"), "by_construction"].startswith("a wolf's role claim")
    f = A.false_claims_followed(events, ps).set_index(["side", "claim"])
    # the wolf's false check on Player3: village voters other than the speaker and the accused (who cannot
    # vote for itself): P4 → P2, P5 → P3, P6 → P3 — 2 of 3 followed
    assert f.loc[("werewolves", "false"), "rate"] == pytest.approx(2 / 3)
    assert not f["claim_falsity_within_side"].any()  # false = wolf's, true = Seer's: no within-side contrast
    assert f.loc[("village", "true"), "rate"] == pytest.approx(1 / 3)  # the Seer's true check: P3 of P3, P5, P6
    swing = A.vote_swing(events, ps, ["side"]).set_index("side")
    # the wolf P1 accused Player3: ballots of P4, P5, P6 count — not P1's mate P2, not Player3's own
    assert swing.loc["werewolves", "n"] == 3 and "lift" in swing.columns


def test_belief_metrics_on_a_synthetic_table_with_known_skill():
    """200 seeded games; each village seat guesses every other seat's role right with probability 0.7 (else a
    uniformly wrong role) and states a calibrated confidence of 0.7: accuracy ≈ 0.7 above chance, Brier ≈
    0.21 and not below the informed reference; a believer who states 0.95 is worse calibrated."""
    rng = np.random.default_rng(11)
    games = [f"s{i}" for i in range(200)]
    ps = players(games)
    roles = sorted(set(ROLES.values()))
    rows = []
    for g in games:
        for seat, role in ROLES.items():
            if role == "Werewolf":
                continue
            for about, truth in ROLES.items():
                if about == seat:
                    continue
                right = rng.random() < 0.7
                guess = truth if right else rng.choice([r for r in roles if r != truth])
                rows.append({"game_id": g, "seq": 1, "day": 1, "phase": "day_speech", "seat": seat, "about": about,
                             "guessed_role": guess, "confidence": 0.7, "call_id": "c"})
    b = pd.DataFrame(rows)
    acc = A.identity_accuracy(b, ps).iloc[0]
    assert acc["ci_low"] < 0.7 < acc["ci_high"] and acc["rate"] - acc["random"] > 0.4
    assert acc["lift_ci_low"] > 0.2  # above the best constant guess (Werewolf: 2 of the 5 others) too
    br = A.brier(b, ps).iloc[0]
    assert br["ci_low"] < 0.21 < br["ci_high"]
    over = A.brier(b.assign(confidence=0.95), ps).iloc[0]
    assert over["mean"] > br["mean"] + 0.05
    det = A.wolf_detection(b, ps).iloc[0]
    assert det["ci_low"] < 0.7 < det["ci_high"]


def exact_day(wolf, wolf_targets, rule):
    """What ``_simulate_day`` estimates, by enumerating every combination of random village ballots (and, in a
    revote, every voter's second ballot): P(wolf exiled), E[hits; wolf exiled], E[ballots; wolf exiled]."""
    import itertools

    n = len(wolf)
    village = [i for i in range(n) if not wolf[i]]
    out = np.zeros(3)

    def result(first, second=None):
        counts = np.bincount(list(second if second is not None else first), minlength=n)
        lead = np.flatnonzero(counts == counts.max())
        return lead

    for picks in itertools.product(*[[j for j in range(n) if j != i] for i in village]):
        first = dict(zip(village, picks)) | {i: t for i, t in zip(np.flatnonzero(wolf), wolf_targets)}
        lead = result(first.values())
        weight = 1.0 / np.prod([n - 1] * len(village))
        outcomes = []  # (probability, exiled or None, village hits on each player, village ballots)
        hits = np.bincount(list(picks), minlength=n)
        if len(lead) == 1:
            outcomes.append((1.0, lead[0], hits, len(village)))
        elif rule == "random":
            outcomes += [(1.0 / len(lead), x, hits, len(village)) for x in lead]
        elif rule == "revote":
            options = [[c for c in lead if c != i] for i in range(n)]
            combos = list(itertools.product(*options))
            for second in combos:
                lead2 = result(None, second)
                hits2 = hits + np.bincount([second[i] for i in village], minlength=n)
                outcomes.append((1.0 / len(combos), lead2[0] if len(lead2) == 1 else None, hits2, 2 * len(village)))
        for p, x, h, b in outcomes:
            if x is not None and wolf[x]:
                out += weight * p * np.array([1.0, h[x], b])
    return out


@pytest.mark.parametrize("rule", ["none", "random", "revote"])
def test_the_exile_chance_simulation_matches_exact_enumeration(rule):
    """Five players, one wolf voting for Player index 2: the simulated chance levels of voting success and
    VSS equal the exact ones (every combination of random ballots enumerated) within Monte-Carlo error."""
    from toolkit.analysis.metrics import _simulate_day

    wolf = np.array([True, False, False, False, False])
    exact = exact_day(wolf, [2], rule)
    sim = _simulate_day(wolf, np.flatnonzero(~wolf), np.array([2]), rule, np.random.default_rng(0), draws=40_000)
    assert exact[0] > 0.05
    assert np.allclose(sim, exact, rtol=0.05), (sim, exact)  # 3-5 Monte-Carlo standard errors
    assert abs(sim[1] / sim[2] - exact[1] / exact[2]) < 0.02
    assert sim[1] / sim[2] > 0.5  # given the exile, random ballots for that wolf are far above 1 / 4


def test_a_claim_made_after_the_ballots_cannot_have_been_followed():
    """Last words come after the day's vote: a check claim made there is not "followed" by that day's ballots
    (the ballots were cast before it)."""
    ps = players().assign(seat=lambda p: p["seat"].str.replace("P", "Player"))
    votes = [ev(s, 1, "vote", f"Player{v}", "Player3", "day_vote") for s, v in ((2, 4), (3, 5), (4, 6))]
    claim = "I am the Seer. Player3 is a werewolf."
    before = pd.DataFrame([ev(1, 1, "speech", "Player1", None, "speech", claim), *votes])
    after = pd.DataFrame([*votes, ev(5, 1, "elimination", None, "Player3", "day_vote"),
                          ev(6, 1, "speech", "Player1", None, "last_words", claim)])
    assert A.false_claims_followed(before, ps)["n"].sum() == 3
    assert A.false_claims_followed(after, ps).empty or A.false_claims_followed(after, ps)["n"].sum() == 0


def test_balanced_accuracy_resamples_a_block_of_replicates_at_a_time_with_the_same_numbers(monkeypatch):
    """The balanced accuracy's bootstrap takes its replicate weights a block at a time (the whole matrix is
    1.6 GB at 100,000 games; the old code built it at once): the interval is the whole matrix's, to the last
    bit, and the peak stays well under that matrix's size."""
    import tracemalloc

    from toolkit.analysis import intervals

    rng = np.random.default_rng(11)
    ids = [f"g{i}" for i in range(3000)]
    guesses = rng.choice(["Werewolf", "Villager", "Seer"], (len(ids), 3))
    b = pd.DataFrame([{"game_id": g, "seq": 10, "day": 1, "phase": "day_speech", "seat": "P3", "about": about,
                       "guessed_role": guesses[i, j], "confidence": 0.5, "call_id": "c"}
                      for i, g in enumerate(ids) for j, about in enumerate(("P1", "P4", "P5"))])
    p = players(ids)
    monkeypatch.setattr(intervals, "BLOCK", 1 << 40)  # one block: the whole matrix at once, as the old code drew it
    whole = A.balanced_accuracy(b, p)
    monkeypatch.setattr(intervals, "BLOCK", 1 << 16)  # 21 replicates a block
    tracemalloc.start()
    try:
        blocks = A.balanced_accuracy(b, p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    pd.testing.assert_frame_equal(blocks, whole, check_exact=True)
    assert 0.2 < whole.iloc[0]["ci_low"] < whole.iloc[0]["balanced_accuracy"] < whole.iloc[0]["ci_high"] < 0.25  # 2/9
    matrix = 2000 * len(ids) * 8
    assert peak < matrix / 3, (peak, matrix)


# ------------------------------------------------------------------ what the joins copy
def annotate_by_whole_merges(events, players):
    """``annotate``'s joins as f803ca9 made them: the whole events frame merged twice (every column copied,
    the speeches' text too); the rest as today."""
    from toolkit.werewolf.engine.roles import removing_kinds

    p = players[["game_id", "seat", "role", "spec"]]
    ev = events[events["game_id"].isin(set(p["game_id"]))].sort_values(["game_id", "seq"]).copy()
    ev = ev.merge(p.rename(columns={"seat": "actor"}), on=["game_id", "actor"], how="left")
    ev = ev.merge(p[["game_id", "seat", "role"]].rename(columns={"seat": "target", "role": "target_role"}),
                  on=["game_id", "target"], how="left")
    ev["side"] = np.where(ev["role"].isna(), None, np.where(ev["role"] == "Werewolf", "werewolves", "village"))
    ev["target_side"] = np.where(ev["target_role"].isna(), None,
                                 np.where(ev["target_role"] == "Werewolf", "werewolves", "village"))
    died = ev["kind"].isin(removing_kinds()).astype(int)
    wolf_died = died * (ev["target_role"] == "Werewolf").astype(int)
    ev["_d"], ev["_w"] = died, wolf_died
    dead_before = ev.groupby("game_id")["_d"].cumsum() - died
    wolves_dead_before = ev.groupby("game_id")["_w"].cumsum() - wolf_died
    size = players.groupby("game_id").size()
    wolves = players[players["role"] == "Werewolf"].groupby("game_id").size().reindex(size.index, fill_value=0)
    ev["alive"] = ev["game_id"].map(size).to_numpy() - dead_before.to_numpy()
    ev["wolves_alive"] = ev["game_id"].map(wolves).to_numpy() - wolves_dead_before.to_numpy()
    return ev.drop(columns=["_d", "_w"]).reset_index(drop=True)


@pytest.mark.slow
def test_the_joins_copy_only_the_columns_they_read_with_the_same_frames(tmp_path):
    """At 100,000 games the report's largest spikes were joins copying columns nobody reads (fifth session):
    ``player_games`` copied each game's config (its JSON, ~1.7 KB) to every seat, 1.2 GB a call, and
    ``annotate`` merged the whole events frame twice. On real offline games: the config is left out and every
    other column is the whole join's; ``annotate`` is the whole-frame merges' frame to the bit."""
    from toolkit.analysis import metrics as M
    from toolkit.record.load import games_with_params, load
    from toolkit.study.experiments import run_werewolf_cell

    run_werewolf_cell(str(tmp_path / "h"), n_games=30, seed=0)
    t = load(tmp_path / "h", complete_games=True)
    games = games_with_params(t)
    assert games["config"].str.len().min() > 1000  # the column left out is there, and long
    pd.testing.assert_frame_equal(M.annotate.__wrapped__(t.events, t.players),
                                  annotate_by_whole_merges(t.events, t.players), check_exact=True)
    pg = A.player_games(games, t.players)
    whole = t.players.merge(games[games["winner"].isin(["village", "werewolves"])]
                            [[c for c in games.columns if c not in t.players.columns or c == "game_id"]],
                            on="game_id")
    assert "config" not in pg.columns and len(pg) == len(whole) == 7 * 30
    pd.testing.assert_frame_equal(pg.drop(columns=["won"]), whole.drop(columns="config").assign(
        survived=whole["survived"].astype(bool)), check_exact=True)
    assert list(pg["won"]) == list(whole["side"] == whole["winner"])
