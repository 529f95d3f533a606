"""The degeneracy checks' detection curve and false-flag rate (toolkit.analysis.degeneracy, issue 45).

Detection: a later speech of a game is replaced by another seat's earlier speech (at least 12 words) with a
share p of its words edited — ``substitute`` (each edited word replaced by a game word), ``insert`` (a filler
word after each edited word), ``drop`` (each edited word removed), ``reorder`` (the copy's sentences shuffled,
then p of its words substituted) — and the game goes through ``degeneracy._repeats`` with the copier a model
(not scripted). ``echo``: a sentence of at least 8 words of a real prompt's instructions (heuristic games
played here) with p of its words substituted, as a thought, through ``degeneracy.echoes``. Each point is
caught / tried with its Wilson 95% interval.

Sound play: every speech of ``--sound`` model-like games (``model_like_game``: each speech three to six
sentences drawn from 30 frames with random seats, reasons, roles, leads, tails and synonyms — speeches that share
topic, names and phrasing but are each composed anew, as a model's are) and of the example study's 1,746 scripted games
(heuristic, mixed, random); template echo on model-like thoughts against real prompts, and on the heuristic
games' own answers. Then a model that says one fixed speech at every turn of every game.

    .venv/bin/python benchmarks/degeneracy_curve.py [--n 150] [--sound 300] [--games 10]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SEATS = [f"Player{i}" for i in range(1, 8)]
ROLES = ["Seer", "Witch", "Guard", "Villager", "werewolf"]
REASONS = ["voted against the Seer yesterday", "stayed quiet the whole day", "changed the vote at the last moment",
           "defended a player who turned out to be a wolf", "accused me without any evidence",
           "keeps pushing suspicion onto others", "claimed a role nobody can confirm", "was attacked last night",
           "spoke very little about the night", "followed the majority every time", "contradicted an earlier claim",
           "seemed eager to end the discussion"]
FRAMES = [
    "I think {a} is suspicious because {a} {r}.", "My vote goes to {a} today.", "{a}, can you explain why you {r}?",
    "Honestly I trust {b} more than {a} right now.", "If {a} is the {role}, why did {a} wait so long to say it?",
    "Last night {b} died, which tells us the wolves fear the {role}.", "We should not rush this vote.",
    "I am a plain {role} and I have nothing to hide.", "Let us compare what {a} and {b} said on day {d}.",
    "The pattern of votes points at {a} and maybe {b}.", "{b} has been consistent, so I will not vote for {b}.",
    "I noticed that {a} {r}, and that worries me.", "Please, {role}, reveal yourself if you found a wolf.",
    "I changed my mind about {b} after hearing {a}.", "Nobody has mentioned {a} yet, which is strange.",
    "If we exile {a} and the game goes on, {b} is next on my list.", "Day {d} and we still have no confirmed wolf.",
    "I would rather lose a villager than let {a} walk free.", "The wolves want us divided, so let us agree on {a}.",
    "My read is that {b} is honest and {a} is not.", "I checked the votes again and {a} always follows {b}.",
    "Someone who {r} is rarely a villager.", "I am not sure about {a}, but {b} seems fine.",
    "Think about who gained from the death of {b}.", "I will watch how {a} votes before I decide.",
    "There is a real chance {a} is the {role} we need to protect.", "Either {a} or {b} is lying to us.",
    "Let us hear from {b} before we vote.", "I suspected {a} on day {d} and nothing has changed.",
    "It is too early to be certain about {a}.",
]
HEDGES = ["", "", "Well, ", "To be honest, ", "Okay everyone. ", "Listen. ", "So, "]
FILLER = ["um", "well", "like", "actually", "honestly", "so", "basically", "really"]
VOCAB = ["wolf", "village", "player", "night", "vote", "quiet", "seer", "always", "never", "today", "maybe",
         "strange", "trust", "claim", "guard", "witch", "dead", "alive", "suspect", "clear"]


SYNONYMS = {"think": ["believe", "feel", "suspect", "guess"], "suspicious": ["shady", "odd", "off", "fishy"],
            "because": ["since", "as", "given that"], "vote": ["ballot", "pick", "choice"],
            "today": ["this round", "now"],
            "honestly": ["frankly", "truly"], "trust": ["believe", "rely on"], "strange": ["odd", "weird", "curious"],
            "quiet": ["silent", "passive", "reserved"], "we": ["we all", "the village"], "should": ["ought to", "must"],
            "worries": ["bothers", "concerns"], "seems": ["looks", "appears"], "rush": ["hurry", "force"],
            "certain": ["sure", "confident"], "nothing": ["little", "not much"], "real": ["serious", "fair"],
            "watch": ["observe", "track"], "explain": ["tell us", "justify"], "lying": ["not honest", "deceiving us"]}


def reword(rng: random.Random, sentence: str) -> str:
    """Each word with a synonym half of the time: two speakers rarely phrase a thought alike."""
    return " ".join(rng.choice(SYNONYMS[w.lower()]) if w.lower() in SYNONYMS and rng.random() < 0.5 else w
                    for w in sentence.split())


LEADS = ["", "", "", "I think", "In my view,", "From what I saw,", "Looking back,", "Right now", "For the record,",
         "As I said before,", "Frankly,"]
TAILS = ["", "", "", "and I stand by that", "for now at least", "unless someone shows otherwise",
         "as far as I can tell", "and that is my honest read", "if I remember the votes right"]


def sentence(rng: random.Random, others: list[str], day: int) -> str:
    a, b = rng.sample(others, 2)
    core = rng.choice(FRAMES).format(a=a, b=b, r=rng.choice(REASONS), role=rng.choice(ROLES), d=day)
    lead, tail = rng.choice(LEADS), rng.choice(TAILS)
    core = (lead + " " + core[0].lower() + core[1:]) if lead else core
    return reword(rng, core[:-1] + (", " + tail if tail else "") + core[-1])


def speech(rng: random.Random, speaker: str, day: int) -> str:
    """Three to six sentences, each a frame with random seats, reasons, roles, a lead, a tail and synonyms."""
    others = [s for s in SEATS if s != speaker]
    return rng.choice(HEDGES) + " ".join(sentence(rng, others, day) for _ in range(rng.randint(3, 6)))


def model_like_game(rng: random.Random, days: int = 4) -> list[tuple[str, str]]:
    """(seat, speech) in speaking order: every seat speaks once a day, each speech composed anew."""
    return [(seat, speech(rng, seat, d)) for d in range(1, days + 1) for seat in SEATS]


def edit(rng: random.Random, text: str, kind: str, share: float) -> str:
    w = text.split()
    if kind == "reorder":
        sentences = re.split(r"(?<=[.!?])\s+", text)
        rng.shuffle(sentences)
        w, kind = " ".join(sentences).split(), "substitute"
    k = round(share * len(w))
    chosen = set(rng.sample(range(len(w)), k))
    out = []
    for i, word in enumerate(w):
        if i not in chosen:
            out.append(word)
        elif kind == "substitute":
            out.append(rng.choice([v for v in VOCAB if v != word.lower()]))
        elif kind == "insert":
            out += [word, rng.choice(FILLER)]
    return " ".join(out)


def frames(games: list[list[tuple[str, str]]], spec: str, prefix: str):
    import pandas as pd

    events = pd.DataFrame([{"game_id": f"{prefix}{g}", "seq": i, "kind": "speech", "actor": seat, "text": text}
                           for g, game in enumerate(games) for i, (seat, text) in enumerate(game)])
    players = {(f"{prefix}{g}", seat): spec for g in range(len(games)) for seat in SEATS}
    return events, players


def wilson_text(k: int, n: int) -> str:
    from toolkit.analysis import wilson

    low, high = wilson(k, n)
    return f"{k}/{n} = {k / n:.2f} [{low:.2f}, {high:.2f}]" if n else "0/0"


def copy_curve(rng: random.Random, n: int, kinds, shares) -> dict:
    """caught/tried per (kind, share): each trial a fresh model-like game whose last speech copies, edited,
    another seat's earlier speech of at least 12 words."""
    from toolkit.analysis.degeneracy import _repeats

    games, keys = [], []
    for kind in kinds:
        for share in shares:
            for _ in range(n):
                game = model_like_game(rng)
                last_seat = game[-1][0]
                sources = [t for s, t in game[:-1] if s != last_seat and len(t.split()) >= 12]
                game[-1] = (last_seat, edit(rng, rng.choice(sources), kind, share))
                games.append(game)
                keys.append((kind, share))
    events, spec_of = frames(games, "model", "c")
    units = _repeats(events, spec_of)
    last = {u["game_id"]: u["hit"] for u in units}  # units come in speaking order within a game
    out: dict = {}
    for key, hit in zip(keys, (last[f"c{g}"] for g in range(len(games)))):
        k, t = out.get(key, (0, 0))
        out[key] = (k + int(hit), t + 1)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=150, help="trials per point of the curve")
    ap.add_argument("--sound", type=int, default=300, help="model-like sound games")
    ap.add_argument("--games", type=int, default=10, help="heuristic games played for their prompts")
    args = ap.parse_args()
    from toolkit.analysis.degeneracy import _prompt_text, _repeats, degeneracy, echoes
    from toolkit.analysis.similarity import NEAR, instructions, words
    from toolkit.record.load import load
    from toolkit.record.run_log import Run
    from toolkit.werewolf.game import GameConfig, play_games

    rng = random.Random(45)
    shares = [0.0, 0.1, 0.2, 0.25, 0.33, 0.4, 0.5]
    kinds = ["substitute", "insert", "drop", "reorder"]
    started = time.perf_counter()
    curve = copy_curve(rng, args.n, kinds, shares)
    with tempfile.TemporaryDirectory() as tmp:
        with Run(Path(tmp), "sound") as run:
            asyncio.run(play_games([GameConfig(seed=s, model="heuristic") for s in range(args.games)], run))
        heuristic = load(Path(tmp))
    prompts = [_prompt_text(m) for m in heuristic.calls["messages"]]
    echo = {}
    for share in shares:
        k = 0
        for _ in range(args.n):
            prompt = rng.choice(prompts)
            sentences = [s for s in re.split(r"(?<=[.!?:])\s+", instructions(prompt)) if len(words(s)) >= 8]
            k += echoes(edit(rng, rng.choice(sentences), "substitute", share), prompt)
        echo[share] = (k, args.n)
    print(f"detection: caught / tried [Wilson 95%], {args.n} trials a point, NEAR = {NEAR} "
          f"(share of a copy's character 5-grams in the earlier text)\n")
    print("| words edited | " + " | ".join(kinds) + " | template echo (substitute) |")
    print("|---|" + "---|" * (len(kinds) + 1))
    for share in shares:
        cells = [wilson_text(*curve[(kind, share)]) for kind in kinds]
        print(f"| {share:.0%} | " + " | ".join(cells) + f" | {wilson_text(*echo[share])} |")

    print("\nfalse flags on sound play (speeches flagged / speeches, games):")
    sound_games = [model_like_game(rng) for _ in range(args.sound)]
    events, spec_of = frames(sound_games, "model", "s")
    t0 = time.perf_counter()
    units = _repeats(events, spec_of)
    took = time.perf_counter() - t0
    flags = sum(u["hit"] for u in units)
    print(f"- model-like games: repeated speech {wilson_text(flags, len(units))} ({args.sound} games)")
    thoughts = [speech(rng, "Player1", 1) for _ in range(len(prompts))]
    k = sum(echoes(t, p) for t, p in zip(thoughts, prompts))
    print(f"- model-like thoughts against the heuristic games' prompts: template echo {wilson_text(k, len(prompts))}")
    example = load(REPO / "results" / "examples" / "tables", complete_games=True)
    d = degeneracy(example)
    for r in d[d["check"] == "repeated speech"].itertuples():
        print(f"- example study, {r.spec} (scripted: stock lines exempt): repeated speech "
              f"{wilson_text(int(r.k), int(r.n))}")
    e = degeneracy(heuristic).set_index("check").loc["template echo"]
    print(f"- heuristic answers ({args.games} games): template echo {wilson_text(int(e['k']), int(e['n']))}")
    fixed = " ".join(rng.choice(FRAMES).format(a="Player3", b="Player5", r=REASONS[0], role="Seer", d=1)
                     for _ in range(3))
    events, spec_of = frames([[(s, fixed) for _, s in model_like_game(rng)] for _ in range(54)], "model", "f")
    rep = _repeats(events, spec_of)
    print(f"\none fixed speech at every turn of 54 games (a model): {wilson_text(sum(u['hit'] for u in rep), len(rep))}"
          " flagged (the first speech of each game has nothing earlier)")
    n_speech = len(events) + len(units)
    print(f"\nrepeated-speech check: {len(units)} sound speeches in {took:.2f} s; whole run "
          f"{time.perf_counter() - started:.0f} s ({n_speech} speeches checked in the copy and sound games)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
