"""Near-duplicate degeneracy detection (toolkit.analysis.degeneracy), measured: the detection rate on perturbed
copies and the false-flag rate on sound play, each with its 95% Wilson interval, and the time it takes.

Detection (``--n`` perturbations of each kind, seeded):

- placeholder: a placeholder of the old answer templates plus a few words ("<brief private reasoning> I will
  watch Player3.") as a thought;
- instruction: a sentence of at least 8 words of a real prompt's instructions (offline heuristic games played
  here, their calls' prompts), one word replaced by another, as a thought — checked against that prompt;
- copy: in a game of the example study (results/examples/tables), a later speech of another seat replaced by an
  earlier speech of at least 6 words plus " I agree." — the replaced seat given a model of its own for that game
  (a model that does this once; a model that says the same text in two games has made it its stock line).

False flags: every check on the example study's 1,746 games (repeated speech, wolf votes wolf, contradicting
potions per model) and template echo on the answers of the heuristic games played here (``--games``).

    .venv/bin/python benchmarks/degeneracy_paraphrase.py [--n 200] [--games 20]
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


def wilson_text(k: int, n: int) -> str:
    from toolkit.analysis import wilson

    low, high = wilson(k, n)
    return f"{k}/{n} = {k / n:.3f} [{low:.3f}, {high:.3f}]" if n else "0/0"


def heuristic_calls(games: int, folder: Path):
    from toolkit.record.load import load
    from toolkit.record.run_log import Run
    from toolkit.werewolf.game import GameConfig, play_games

    with Run(folder, "sound") as run:
        asyncio.run(play_games([GameConfig(seed=s, model="heuristic") for s in range(games)], run))
    return load(folder)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200, help="perturbations of each kind")
    ap.add_argument("--games", type=int, default=20, help="heuristic games played for their prompts")
    args = ap.parse_args()
    import pandas as pd

    from toolkit.analysis.degeneracy import _prompt_text, degeneracy, echoes
    from toolkit.analysis.similarity import MIN_WORDS, instructions, words
    from toolkit.record.load import load

    rng = random.Random(31)
    example = load(REPO / "results" / "examples" / "tables", complete_games=True)
    with tempfile.TemporaryDirectory() as tmp:
        sound = heuristic_calls(args.games, Path(tmp))
    calls = sound.calls[sound.calls["ok"].astype(bool)]

    # placeholder and instruction perturbations, against real prompts
    placeholders = ["<brief private reasoning>", "<what you say, one paragraph>", "<your reasoning here>"]
    tails = ["I will watch Player3.", "Vote carefully.", "Player2 seems quiet today.", ""]
    vocab = ["wolf", "village", "player", "night", "vote", "quiet", "seer", "always", "never", "today"]
    hits = {"placeholder": 0, "instruction": 0}
    sample = calls.sample(n=min(args.n, len(calls)), random_state=31)
    tried = {"placeholder": 0, "instruction": 0}
    for messages in sample["messages"]:
        prompt = _prompt_text(messages)
        text = f"{rng.choice(placeholders)} {rng.choice(tails)}".strip()
        tried["placeholder"] += 1
        hits["placeholder"] += echoes(text, prompt)
        sentences = [s for s in re.split(r"(?<=[.!?:])\s+", instructions(prompt)) if len(words(s)) >= 8]
        if sentences:
            w = rng.choice(sentences).split()
            i = rng.randrange(len(w))
            w[i] = rng.choice([v for v in vocab if v != w[i].lower()])
            tried["instruction"] += 1
            hits["instruction"] += echoes(" ".join(w), prompt)

    # copy perturbations in the example's games
    ev = example.events.copy()
    players = example.players.copy()
    speeches = ev[ev["kind"] == "speech"].sort_values(["game_id", "seq"])
    game_ids = sorted(set(speeches["game_id"]))
    rng.shuffle(game_ids)
    copied = []
    for gid in game_ids:
        g = speeches[speeches["game_id"] == gid]
        options = [(a, b) for a in range(len(g)) for b in range(a + 1, len(g))
                   if g.iloc[a]["actor"] != g.iloc[b]["actor"] and len(words(g.iloc[a]["text"])) >= MIN_WORDS]
        if not options:
            continue
        a, b = rng.choice(options)
        src, dst = g.iloc[a], g.iloc[b]
        ev.loc[(ev["game_id"] == gid) & (ev["seq"] == dst["seq"]), "text"] = src["text"] + " I agree."
        spec = f"copier-{len(copied)}"
        players.loc[(players["game_id"] == gid) & (players["seat"] == dst["actor"]), "spec"] = spec
        copied.append((gid, int(dst["seq"]), spec))
        if len(copied) >= args.n:
            break
    from toolkit.analysis.degeneracy import _repeats

    spec_of = players.set_index(["game_id", "seat"])["spec"].to_dict()
    started = time.perf_counter()
    units = pd.DataFrame(_repeats(ev, spec_of))  # every speech of the 1,746 games, in game and seq order
    elapsed = time.perf_counter() - started
    order = ev[ev["kind"] == "speech"].sort_values(["game_id", "seq"])
    units["seq"] = order["seq"].to_numpy()
    flagged = units.set_index(["game_id", "seq"])["hit"]
    flagged_copy = sum(bool(flagged.loc[(gid, seq)]) for gid, seq, _ in copied)

    print(f"detection on perturbed copies (seeded; {args.games} heuristic games' prompts, the example's games):")
    print(f"  placeholder + a few words        {wilson_text(hits['placeholder'], tried['placeholder'])}")
    print(f"  instruction, one word changed    {wilson_text(hits['instruction'], tried['instruction'])}")
    print(f"  another seat's speech + I agree. {wilson_text(flagged_copy, len(copied))}")
    print("false flags on sound play:")
    clean = degeneracy(example)
    for r in clean.itertuples():
        print(f"  example {r.spec:<10} {r.check:<22} {wilson_text(int(r.k), int(r.n))}")
    echo = degeneracy(sound).set_index("check").loc["template echo"]
    print(f"  heuristic template echo ({args.games} games' answers) {wilson_text(int(echo['k']), int(echo['n']))}")
    print(f"repeated-speech check on the example's {len(example.games)} games ({len(units)} speeches): {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
