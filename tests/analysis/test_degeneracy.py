"""The degeneracy checks: each flags what it names and nothing else, per model, with n and an interval."""

import asyncio
import json
from types import SimpleNamespace

import pandas as pd

import pytest
from toolkit.analysis.degeneracy import degeneracy, echoes, summary_line
from toolkit.record.load import load
from toolkit.record.run_log import Run
from toolkit.werewolf.game import GameConfig, play_games

PROMPT = json.dumps([{"role": "user", "content": 'Rules: the village wins when no werewolf is alive.\nAnswer with '
                      'one JSON object: {"thought": "<brief private reasoning>", "speech": "<what you say>"}'}])


def call(game, seat, spec, parsed, ok=True, fallback=False):
    return {"game_id": game, "seat": seat, "spec": spec, "parsed": json.dumps(parsed), "messages": PROMPT,
            "ok": ok, "fallback": fallback}


def event(game, seq, kind, actor, target=None, text=""):
    return {"game_id": game, "seq": seq, "kind": kind, "actor": actor, "target": target, "text": text}


SEER = "I am the seer and I checked P4 last night: good."


def tables():
    players = pd.DataFrame([{"game_id": g, "seat": s, "role": r, "spec": spec}
                            for g in ("g1", "g2")
                            for s, r, spec in (("P1", "Werewolf", "local"), ("P2", "Werewolf", "local"),
                                               ("P3", "Witch", "local"), ("P4", "Villager", "openai:m"))])
    calls = pd.DataFrame([
        call("g1", "P1", "local", {"thought": "<brief private reasoning>", "target": "P4"}),  # placeholder
        call("g1", "P2", "local", {"thought": "the village wins when no werewolf is alive", "target": "P4"}),  # copied
        call("g1", "P3", "local", {"thought": "P1 lied about the seer check yesterday", "target": "P1"}),
        call("g1", "P4", "openai:m", {"thought": "", "speech": "I think P2 is hiding something big."}),
        call("g2", "P1", "local", {"thought": "<brief private reasoning>"}, ok=False, fallback=True),  # not an answer
        call("g2", "P4", "openai:m", {"thought": "Rules"}),  # too short to count as copied
    ])
    events = pd.DataFrame([
        event("g1", 1, "speech", "P1", text=SEER), event("g1", 2, "speech", "P2", text=SEER.upper() + " I agree."),
        event("g1", 3, "speech", "P4", text="Vote P2."), event("g2", 1, "speech", "P1", text=SEER),
        event("g1", 4, "vote", "P1", "P2"), event("g1", 5, "vote", "P2", "P4"), event("g1", 6, "vote", "P4", "P1"),
        event("g1", 7, "save", "P3", "P4"), event("g1", 8, "poison", "P3", "P4"),
        event("g2", 2, "poison", "P3", "P1"), event("g2", 3, "save", "P3", "P2"),
    ])
    return SimpleNamespace(calls=calls, events=events, players=players)


def test_each_check_counts_its_own_units():
    d = degeneracy(tables()).set_index(["spec", "check"])
    assert d.loc[("local", "template echo"), ["k", "n"]].tolist() == [2, 3]  # the fallback is not an answer
    assert d.loc[("openai:m", "template echo"), ["k", "n"]].tolist() == [0, 2]
    # near-duplicates within a game only (case, punctuation and an added "I agree." aside): g1's second, not
    # g2's first
    assert d.loc[("local", "repeated speech"), ["k", "n", "n_games"]].tolist() == [1, 3, 2]
    assert d.loc[("local", "wolf votes wolf"), ["k", "n"]].tolist() == [1, 2]  # the villager's vote is no unit
    assert ("openai:m", "wolf votes wolf") not in d.index
    # a poison on a player saved before; a save after the poison is no contradiction
    assert d.loc[("local", "contradicting potions"), ["k", "n", "n_games"]].tolist() == [1, 2, 2]
    row = d.loc[("local", "template echo")]
    assert row["rate"] == 2 / 3 and 0 <= row["ci_low"] <= row["rate"] <= row["ci_high"] <= 1
    assert not row["scripted"]


def test_a_wolfs_vote_for_itself_is_not_a_vote_for_a_fellow_wolf():
    """Issue 45: under ``self_vote`` (kaggle7) a wolf may vote for itself; the old check flagged it as a vote
    for a fellow wolf (123 of 229 flags in random kaggle7 games). It is a unit, not a flag."""
    t = tables()
    t.events = pd.DataFrame([event("g1", 4, "vote", "P1", "P1"), event("g1", 5, "vote", "P2", "P1"),
                             event("g1", 6, "vote", "P1", "P4")]).assign(phase="day_vote", day=1)
    t.games = pd.DataFrame({"game_id": ["g1"], "preset": ["kaggle7"]})
    d = degeneracy(t).set_index(["spec", "check"])
    assert d.loc[("local", "wolf votes wolf"), ["k", "n"]].tolist() == [1, 3]  # P2 → P1 only


def test_echoes_needs_a_placeholder_or_a_long_copy():
    prompt = "answer with one json object: the village wins when no werewolf is alive"
    assert echoes("<what you say, one paragraph>", prompt)
    assert echoes("The village   wins when no werewolf is alive", prompt)
    assert echoes("The village wins when no wolf is alive", prompt)  # one word changed
    assert echoes("I think <brief private reasoning> so", prompt)  # a placeholder with words around it
    assert not echoes("no werewolf", prompt)  # shorter than a chance match
    assert not echoes("the village wins «when no werewolf is alive»", "the village wins «when no werewolf is alive»")
    assert not echoes("I saw Player3 hesitate before the vote", prompt)
    assert not echoes("<b>bold</b> text", prompt)


def test_the_play_summary_line_names_every_check():
    line = summary_line(tables())
    assert line.startswith("degeneracy checks: 5 flagged (")
    assert "template echo 2/5" in line and "repeated speech 1/4" in line and "wolf votes wolf 1/2" in line
    assert "contradicting potions 1/2" in line


def test_real_games_of_scripted_players_are_checked_and_marked_scripted(tmp_path):
    with Run(tmp_path, "x") as run:
        asyncio.run(play_games([GameConfig(seed=s, model="heuristic") for s in range(3)], run))
    d = degeneracy(load(tmp_path))
    assert set(d["spec"]) == {"heuristic"} and d["scripted"].all()
    speeches = d.set_index("check").loc["repeated speech"]
    events = load(tmp_path).events
    # every speech is a unit; the heuristic's fixed sentences are its stock lines (said unprompted in two
    # games or more), so their repeats are not flagged
    assert speeches["n"] == (events["kind"] == "speech").sum() and speeches["rate"] <= 0.05
    assert speeches["n_games"] == 3


def test_play_prints_the_checks_in_its_summary_line(tmp_path, capsys):
    from toolkit.cli import main

    assert main(["play", "--seed", "2", "--model", "random", "--out", str(tmp_path), "--quiet"]) == 0
    tables_line, last = capsys.readouterr().out.strip().splitlines()[-2:]
    assert tables_line.startswith("tables: ") and tables_line.endswith("fallbacks)")
    assert last.startswith("degeneracy checks: ") and "repeated speech" in last


@pytest.mark.slow
def test_the_report_has_a_degeneracy_section_per_model(tmp_path):
    from toolkit.analysis.report import write_report

    with Run(tmp_path, "x") as run:
        asyncio.run(play_games([GameConfig(seed=s, model="random") for s in range(3)], run))
    text = next(p for p in write_report(tmp_path, tmp_path / "out") if p.suffix == ".md").read_text()
    section = text.split("## Degenerate play per model")[1].split("\n## ")[0]
    rows = [line.split(" | ")[:2] for line in section.splitlines() if line.startswith("| random |")]
    assert [check for _, check in rows] == ["template echo", "repeated speech", "wolf votes wolf",
                                            "contradicting potions"][:len(rows)] and len(rows) >= 3


def test_the_summary_line_says_when_every_flag_is_a_scripted_players(tmp_path):
    """make play's first line must not read as a broken model: heuristic speeches repeat by design."""
    with Run(tmp_path, "x") as run:
        asyncio.run(play_games([GameConfig(seed=0, model="heuristic")], run))
    line = summary_line(load(tmp_path))
    assert line.startswith("degeneracy checks: only the scripted players' fixed sentences repeat, as designed (")
    assert "repeated speech" in line and "flagged" not in line and len(line) < 160
    assert "scripted" not in summary_line(tables())  # a model's flags get no such note


@pytest.mark.slow
def test_the_echo_check_reads_the_prompts_a_batch_of_calls_at_a_time(tmp_path):
    """The report's path: the tables without the prompts, the template-echo counts from the files a batch of
    calls at a time (only the kept games', each call once); the same rates as from the prompts in memory, and
    the pass holds a fraction of the prompts (tracemalloc: the Python strings of one batch)."""
    import tracemalloc

    from toolkit.analysis.degeneracy import echo_counts
    from toolkit.record.load import scan

    with Run(tmp_path, "x") as run:
        asyncio.run(play_games([GameConfig(seed=s, model="heuristic") for s in range(4)], run))
    whole = load(tmp_path)
    kept = set(whole.games["game_id"][:3])
    cut = SimpleNamespace(**{t: getattr(whole, t)[getattr(whole, t)["game_id"].isin(kept)]
                             for t in ("calls", "events", "players", "games")})
    columns = ["spec", "game_id", "ok", "fallback", "parsed", "messages"]

    def pass_over(games):
        tracemalloc.start()
        counts = echo_counts(scan(tmp_path, "calls", columns, games=games, rows=16))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return counts, peak

    echo, peak = pass_over(kept)
    _, peak_one = pass_over(set(sorted(kept)[:1]))
    prompts = int(cut.calls["messages"].str.len().sum())
    assert set(echo["game_id"]) == kept and echo["n"].sum() > 0
    # two more games cost less than half their prompts (holding them: all of them, 2/3 of ``prompts``)
    assert peak - peak_one < prompts / 3, (peak, peak_one, prompts)
    batches = list(scan(tmp_path, "calls", ["game_id"], games=kept, rows=16))
    assert len(batches) > 3 and max(map(len, batches)) < 32 and sum(map(len, batches)) == len(cut.calls)
    lean = SimpleNamespace(**{**vars(cut), "calls": cut.calls.drop(columns="messages")})
    pd.testing.assert_frame_equal(degeneracy(lean, echo=echo), degeneracy(cut))
    assert "template echo" not in set(degeneracy(lean)["check"])  # no prompts, no counts: not zeros


LONG = ("I think Player3 is suspicious because he changed his vote at the last moment yesterday, and nobody has "
        "asked him why he defended Player5 before the night")


def _speeches(games, spec):
    events = pd.DataFrame([event(g, i, "speech", seat, text=text) for g, game in enumerate(games)
                           for i, (seat, text) in enumerate(game)])
    players = pd.DataFrame([{"game_id": g, "seat": s, "role": "Villager", "spec": spec}
                            for g in range(len(games)) for s in ("P1", "P2", "P3")])
    return SimpleNamespace(calls=pd.DataFrame(), events=events, players=players)


def test_a_copy_survives_words_changed_added_dropped_or_moved():
    """Issue 45: a copy with one word in three replaced, a filler word every three words or every fourth word
    dropped was never caught (the old check needed half of its word 3-grams); each is caught now, and a
    sound reply on the same topic is not."""
    w = LONG.split()
    substituted = " ".join("vote" if i % 3 == 2 else x for i, x in enumerate(w))
    filler = " ".join(x + (" um" if i % 3 == 2 else "") for i, x in enumerate(w))
    dropped = " ".join(x for i, x in enumerate(w) if i % 4 != 3)
    moved = "And nobody has asked him why he defended Player5 before the night. " + LONG.split(", and")[0]
    reply = "Player3 changed nothing for me; I am watching Player5, who stayed silent through the whole night"
    for copy in (substituted, filler, dropped, moved):
        d = degeneracy(_speeches([[("P1", LONG), ("P2", copy), ("P3", reply)]], "openai:m"))
        assert d.set_index("check").loc["repeated speech", ["k", "n"]].tolist() == [1, 3], copy


def test_a_model_saying_one_fixed_speech_in_every_game_is_flagged_a_scripted_player_is_not():
    """Issue 45: the stock-line exemption (a text said in two games or more) exempted a model that says one
    fixed speech at every turn (0 of 54 flagged); it now covers scripted players only."""
    games = [[("P1", LONG), ("P2", LONG), ("P3", LONG)] for _ in range(3)]
    model = degeneracy(_speeches(games, "openai:m")).set_index("check").loc["repeated speech"]
    assert [model["k"], model["n"]] == [6, 9]  # every speech after each game's first
    scripted = degeneracy(_speeches(games, "heuristic")).set_index("check").loc["repeated speech"]
    assert [scripted["k"], scripted["n"]] == [0, 9]


def test_a_reworded_instruction_is_template_echo():
    """Instruction sentences with one word in five or six replaced are caught (the old check: half of the
    text's word 3-grams, which such edits break); the model's own words on the rules' topic are not."""
    prompt = json.loads(PROMPT)[0]["content"] + " Each night the werewolves choose one living player to attack."
    assert echoes("Each night the wolves choose one sleeping player to attack and the town wins when no werewolf "
                  "is left.", prompt)
    assert echoes("Every night the werewolves pick one living player to attack; the village wins when no wolf is "
                  "alive.", prompt)
    assert not echoes("Player4 attacked nobody last night, so I doubt Player4 is on the werewolves' side.", prompt)
