"""The reference harness against this engine: seeded games played by Kaggle's own werewolf engine
(kaggle-environments 1.33.2) with its ``random`` agent (or, in four settings, harness.abstaining_agent: day
abstentions, NoOps, votes for oneself and bids of 0, which Kaggle's rules allow and its random agent never does),
across eight rule settings (toolkit/werewolf/kaggle/harness.py CONFIGS: its 7-seat default, the Game Arena's 8
seats, 6 seats with three rounds of talk and simultaneous votes, a parallel discussion, 10 seats with a random first
speaker and no-exile ties, and three bidding discussions, played as their rules say: harness._fixed_bidding), each
one's decisions played through this engine with the preset its configuration means (toolkit.werewolf.kaggle):
identical eliminations (seat, day, night or day), winner and final day, in every game.

Cost: the 200 Kaggle games are played once per session (the ``kaggle_games`` fixture of conftest.py, 2 worker
processes): ~125 s of CPU; replaying them here takes a few seconds. The last two tests play three more games in a
fresh process (Kaggle as shipped, its runner's checks on): they need a process without the harness's changes.
docs/werewolf.md has the count from benchmarks/kaggle_differential.py."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
from collections import Counter

import pytest
import yaml

pytest.importorskip("kaggle_environments", reason="needs kaggle-environments (make test installs it, --no-deps)")

from toolkit.werewolf.kaggle import differential, harness, replay  # noqa: E402

pytestmark = pytest.mark.interop


def test_every_kaggle_game_replays_here_to_the_same_eliminations_winner_and_final_day(kaggle_games):
    assert len(kaggle_games) >= 200
    diverged, splits, ballots = [], Counter(), Counter()
    for (name, seed), rep in kaggle_games:
        kg = replay.read(rep)
        assert kg.winner in ("village", "werewolves"), f"{name} seed {seed} did not finish"
        try:
            game = differential.compare(kg)
        except differential.Divergence as err:
            diverged.append(f"{name} seed {seed}: {err}")
            continue
        splits[name] += sum(e.text.startswith("The werewolves' votes are tied") for e in game.events)
        splits[name] += sum(key.startswith("wolf_tie") for key in game.drawn)
        for e in game.events:
            if e.kind == "vote":
                ballots["abstain" if e.target is None else "self" if e.target == e.actor else "other"] += 1
        ballots["bid"] += sum(e.kind == "bid" for e in game.events)
        ballots["bid ties"] += sum(" wins the bid" in e.text and e.text.count(": 4") > 1 for e in game.events)
        ballots["talk ended"] += sum(e.text == "Everyone bid 0: the talk ends." for e in game.events)
    assert diverged == [], "\n".join(diverged[:5])
    assert ballots["bid"] > 1000 and ballots["bid ties"] > 50
    # the abstaining agent's abstentions (-1, and a NoOp counted as one) and votes for oneself came up and played
    assert ballots["abstain"] > 100 and ballots["self"] > 30
    # the split wolf votes, where the engines once parted, came up under both tie rules
    assert splits["default7"] > 0 and splits["arena8"] > 0 and splits["random10"] > 0


def test_the_settings_cover_every_value_of_the_kaggle_options_played(kaggle_games):
    presets = {name: replay.read(rep).preset for (name, seed), rep in kaggle_games if seed == 0}
    seen = {field: {getattr(p, field) for p in presets.values()} for field in (
        "wolf_tie", "vote_tie", "speech_order", "day_vote", "vote_order", "night_reveal", "exile_reveal",
        "seer_learns", "doctor_self_save", "doctor_consecutive_saves")}
    assert seen["wolf_tie"] == {"random", "none"} and seen["vote_tie"] == {"random", "none"}
    assert seen["speech_order"] == {"rotate", "fixed", "random"} and seen["day_vote"] == {"sequential", "simultaneous"}
    assert {"random", "rotate", "fixed"} <= seen["vote_order"]
    assert seen["night_reveal"] == seen["exile_reveal"] == {"role", "team", "no_reveal"}
    assert seen["seer_learns"] == {"role", "side"}
    assert seen["doctor_self_save"] == seen["doctor_consecutive_saves"] == {True, False}
    assert {p.n_players for p in presets.values()} == {6, 7, 8, 10}
    assert {p.speech_rounds for p in presets.values()} == {1, 2, 3}
    assert {p.discussion for p in presets.values()} == {"round_robin", "parallel", "bid_turn", "bid_round"}
    bidding = [p for p in presets.values() if p.discussion.startswith("bid")]
    assert {p.bid_result for p in bidding} == {"public", "private"}
    assert {p.bid_tie for p in bidding if p.discussion == "bid_turn"} == {"name", "urgency"}
    assert all(p.vote_abstain and p.self_vote for p in presets.values())
    assert {p.wolf_vote for p in presets.values()} == {"sequential", "simultaneous"}


def test_a_changed_kaggle_decision_is_caught_as_a_divergence(kaggle_games):
    """The comparison can fail: every day-1 vote moved onto a seat Kaggle did not exile that day exiles it here,
    and the check says the engines parted."""
    (name, seed), rep = next((job, rep) for job, rep in kaggle_games if job[0] == "default7")
    kg = replay.read(rep)
    voters = [d.seat for d in kg.decisions if d.action == "vote" and d.day == 1]
    target = next(s for s in voters if kg.eliminations.get(s) != (1, "day"))
    kg.decisions = [replay.Decision(1, "vote", d.seat, target if d.seat != target else voters[0] if voters[0] != target
                                    else voters[1]) if d.action == "vote" and d.day == 1 else d for d in kg.decisions]
    with pytest.raises(differential.Divergence):
        differential.compare(kg)


def test_a_kaggle_game_plays_again_here_as_a_scripted_game_through_the_command_line(kaggle_games, tmp_path):
    """The scripted route a researcher takes: the replay as a scripted file (roles, draws, decisions) and the
    preset as a YAML file; ``python -m toolkit play`` gives the same winner, days and deaths."""
    import pandas as pd

    for want in ("default7", "arena8"):
        (name, seed), rep = next((job, rep) for job, rep in kaggle_games if job[0] == want and job[1] == 3)
        kg = replay.read(rep)
        folder = tmp_path / want
        folder.mkdir()
        (folder / "preset.yaml").write_text(yaml.safe_dump(kg.preset.model_dump(), sort_keys=False))
        (folder / "game.yaml").write_text(yaml.safe_dump(replay.to_scripted(kg), sort_keys=False))
        done = subprocess.run([sys.executable, "-m", "toolkit", "play", "--preset", str(folder / "preset.yaml"),
                               "--model", f"scripted:{folder / 'game.yaml'}", "--out", str(folder / "out"),
                               "--quiet"], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        (run,) = (folder / "out").iterdir()
        games, players = pd.read_parquet(run / "games.parquet"), pd.read_parquet(run / "players.parquet")
        assert (games.winner[0], int(games.days[0])) == (kg.winner, kg.final_day)
        assert int(games.n_fallbacks[0]) == 0
        deaths = {r.seat: (int(r.death_day), "day" if r.death_cause == "vote" else "night")
                  for r in players.itertuples() if not r.survived}
        assert deaths == kg.eliminations


def test_skipping_the_schema_re_checks_gives_the_same_kaggle_game():
    """harness.play(fast=True) replaces how Kaggle validates (a validator built once per schema), not what: a
    game played in a fresh process without the change has the same moderator log and result (but for the
    timestamps, and the order of ``visible_to``, which Kaggle builds from a set: string hashing differs between
    processes)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        slow = pool.apply(harness.play, ("default7", 7, False))
    fast = harness.play("default7", 7, True)

    def log(rep):
        return [json.dumps({k: sorted(v) if k == "visible_to" else v for k, v in e.items() if k != "created_at"},
                           sort_keys=True) for e in replay.moderator_log(rep)]

    assert log(slow) == log(fast) and len(log(fast)) > 50
    assert slow["info"]["GAME_END"] == fast["info"]["GAME_END"]
    assert slow["rewards"] == fast["rewards"] and len(slow["steps"]) == len(fast["steps"])


def test_kaggle_as_shipped_never_hears_a_turn_by_turn_bid_winner_and_gives_round_by_round_bids_of_0():
    """The two bugs harness._fixed_bidding mends, in a fresh process without the fix: a TurnByTurnBidding
    replay (no speech at all) is refused as Kaggle's bug, named; a RoundByRoundBidding one (every bid 0, never
    asked) replays here identically, as the bids it records."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        turn = pool.apply(harness.play, ("bidturn7", 0, True, False))
        rounds = pool.apply(harness.play, ("bidround6", 0, True, False))
    assert not any(e["data_type"] == "ChatDataEntry" for e in replay.moderator_log(turn))
    with pytest.raises(replay.Unsupported, match="never asked to speak"):
        replay.read(turn)
    kg = replay.read(rounds)
    assert {d.bid for d in kg.decisions if d.action == "bid"} == {0}
    differential.compare(kg)
