"""Belief and deception metrics, against the game's ground truth.

- ``beliefs`` table (one row per reflection and other seat: game_id, seq, day, phase, seat, about,
  guessed_role, confidence, call_id): identity-inference accuracy against chance, Brier score of the
  stated confidences, the village's detection of the wolves over the days.
- speeches: role claims ("I am the Seer") and check claims ("Player3 is a werewolf" by a Seer claimant),
  read with ``toolkit.werewolf.engine.claims.extract`` and checked against the truth → lie rates by role and side,
  how often a false claim was followed by the other players' votes (and believed in their beliefs), and
  the vote swing after an accusing speech.

Every rate has a cluster-bootstrap interval over games (``cluster_rate``).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from toolkit.analysis.intervals import cluster_mean, groups
from toolkit.analysis.metrics import N_BOOT, _rate_rows, annotate, votes
from toolkit.werewolf.engine.claims import extract

BELIEF_COLUMNS = ("game_id", "seq", "day", "phase", "seat", "about", "guessed_role", "confidence", "call_id")


def _truth(players: pd.DataFrame) -> pd.DataFrame:
    return players[["game_id", "seat", "role", "side", "spec"]]


def belief_table(beliefs: pd.DataFrame, players: pd.DataFrame) -> pd.DataFrame:
    """Beliefs joined to the truth: the believer's role/side/spec, the true role of ``about``, ``correct``
    (the guessed role is the true role), ``wolf_guess``/``is_wolf`` and ``chance`` — the accuracy of a guesser
    who draws roles in proportion to the roles it cannot see (every role but its own among the others; a
    wolf also knows its teammates, whose rows are left out). Rows of a wolf about a teammate are dropped."""
    missing = [c for c in ("game_id", "seat", "about", "guessed_role") if c not in beliefs.columns]
    if missing:
        raise ValueError(f"beliefs table lacks columns {missing}")
    t = _truth(players)
    b = beliefs.merge(t, on=["game_id", "seat"], how="inner")
    b = b.merge(t[["game_id", "seat", "role"]].rename(columns={"seat": "about", "role": "true_role"}),
                on=["game_id", "about"], how="inner")
    b = b[~((b["role"] == "Werewolf") & (b["true_role"] == "Werewolf"))].copy()
    b["guessed_role"] = b["guessed_role"].astype(str).str.strip().str.capitalize()
    b["correct"] = (b["guessed_role"] == b["true_role"]).astype(int)
    b["wolf_guess"] = (b["guessed_role"] == "Werewolf").astype(int)
    b["is_wolf"] = (b["true_role"] == "Werewolf").astype(int)
    counts = {g: Counter(p["role"]) for g, p in players.groupby("game_id")}

    def chance(game, own):
        c = counts[game].copy()
        c[own] -= 1
        if own == "Werewolf":
            c["Werewolf"] = 0
        total = sum(c.values())
        return sum((v / total) ** 2 for v in c.values()) if total else np.nan

    b["chance"] = [chance(g, r) for g, r in zip(b["game_id"], b["role"])]
    b["confidence"] = pd.to_numeric(b.get("confidence"), errors="coerce")
    return b.reset_index(drop=True)


def identity_accuracy(beliefs: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Identity-inference accuracy: the share of belief rows whose guessed role is the true role, with its
    chance level (``belief_table``), lift over chance and cluster intervals; ``by`` e.g. ``["spec", "day"]``
    or ``["seat"]``."""
    b = belief_table(beliefs, players)
    b["hit"] = b["correct"]
    return pd.DataFrame(_rate_rows(b, by, chance="chance"))


def brier(beliefs: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Brier score of the stated confidence in each guess: mean((confidence − correct)²); 0 is perfect,
    lower is better. ``reference`` is the Brier of a guesser that always states the observed accuracy
    (accuracy·(1 − accuracy)): a score above it means the confidences carry no information. Rows without a
    confidence are left out (``n`` counts the rest)."""
    b = belief_table(beliefs, players).dropna(subset=["confidence"])
    b["sq"] = (b["confidence"].clip(0, 1) - b["correct"]) ** 2
    rows = []
    for key, g in groups(b, by):
        acc = g["correct"].mean()
        rows.append({**key, **cluster_mean(g["sq"], g["game_id"], n_boot=N_BOOT), "reference": acc * (1 - acc)})
    return pd.DataFrame(rows)


def wolf_detection(beliefs: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """The village's detection of the wolves over time: among village-side belief rows about a werewolf,
    the share that guess Werewolf, per ``day`` by default; chance = the wolves' share of the seats the
    believer cannot see."""
    b = belief_table(beliefs, players)
    b = b[(b["side"] == "village") & (b["is_wolf"] == 1)].copy()
    counts = {g: Counter(p["role"]) for g, p in players.groupby("game_id")}
    b["chance"] = [counts[g]["Werewolf"] / (sum(counts[g].values()) - 1) for g in b["game_id"]]
    b["hit"] = b["wolf_guess"]
    return pd.DataFrame(_rate_rows(b, by or ["day"], chance="chance"))


# ------------------------------------------------------------------ claims and deception
def claims(events: pd.DataFrame, players: pd.DataFrame) -> pd.DataFrame:
    """Claims in speeches, checked against the truth. One row per claim: ``kind`` ``role`` (the speaker's
    own role: true when it is the speaker's role) or ``check`` (a check result stated by a Seer claimant,
    "X is a werewolf"/"X is good": true only when the speaker is the Seer and had checked X with that
    result before speaking — a fabricated check is a lie even when it happens to be right)."""
    ev = annotate(events, players)
    checks = ev[ev["kind"] == "check"][["game_id", "seq", "target", "target_role"]]
    done: dict[str, list[tuple[int, str, bool]]] = {}
    for g, s, t, r in checks.itertuples(index=False):
        done.setdefault(g, []).append((s, t, r == "Werewolf"))
    roles = {(g, s): r for g, s, r in zip(players["game_id"], players["seat"], players["role"])}
    speeches = ev[(ev["kind"] == "speech") & ev["text"].notna() & ev["role"].notna()]
    rows = []
    claimed_seer: set[tuple[str, str]] = set()
    for e in speeches.itertuples(index=False):
        base = {"game_id": e.game_id, "seq": e.seq, "day": e.day, "speaker": e.actor, "spec": e.spec,
                "role": e.role, "side": e.side}
        found = extract(e.actor, e.text)
        for _, kind, value in found:
            if kind == "role":
                if value == "Seer":
                    claimed_seer.add((e.game_id, e.actor))
                rows.append({**base, "kind": "role", "value": value, "target": None, "true": value == e.role})
        for _, kind, value in found:
            if kind in ("accuse", "clear") and (e.game_id, e.actor) in claimed_seer:
                wolf = kind == "accuse"
                checked = any(s < e.seq and t == value and w == wolf for s, t, w in done.get(e.game_id, []))
                truth = e.role == "Seer" and checked
                rows.append({**base, "kind": "check", "value": "werewolf" if wolf else "good", "target": value,
                             "true": bool(truth), "target_role": roles.get((e.game_id, value))})
    cols = ["game_id", "seq", "day", "speaker", "spec", "role", "side", "kind", "value", "target", "true",
            "target_role"]
    out = pd.DataFrame(rows, columns=cols)
    out["lie"] = (~out["true"].astype(bool)).astype(int)
    return out


def lie_rates(events: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Share of claims that are false, per ``kind`` and the speaker's ``side`` and ``role`` by default."""
    c = claims(events, players)
    c["hit"] = c["lie"]
    return pd.DataFrame(_rate_rows(c, by or ["kind", "side", "role"]))


def false_claims_followed(events: pd.DataFrame, players: pd.DataFrame, beliefs: pd.DataFrame | None = None,
                          by: list[str] | None = None) -> pd.DataFrame:
    """How often a claim was believed, false against true claims. For each check claim accusing X on day d:
    the share of that day's first-round ballots by other village-side voters cast for X (``followed``;
    chance = 1 / (living − 1)). When ``beliefs`` has rows, also for each role claim: the share of the
    other seats' later beliefs about the speaker that guess the claimed role (``believed``)."""
    c = claims(events, players)
    c["claim"] = np.where(c["true"].astype(bool), "true", "false")
    v = votes(events, players)
    v = v[(v["round"] == "first") & (v["side"] == "village")]
    acc = c[(c["kind"] == "check") & (c["value"] == "werewolf")]
    joined = acc.merge(v[["game_id", "day", "actor", "target", "alive"]].rename(
        columns={"actor": "voter", "target": "voted"}), on=["game_id", "day"])
    joined = joined[joined["voter"] != joined["speaker"]]
    joined["hit"] = (joined["voted"] == joined["target"]).astype(int)
    joined["chance"] = 1.0 / (joined["alive"] - 1).clip(lower=1)
    rows = _rate_rows(joined, (by or ["side"]) + ["claim"], chance="chance", measure="followed")
    if beliefs is not None and len(beliefs):
        b = belief_table(beliefs, players)
        rc = c[c["kind"] == "role"]
        j = rc.merge(b[["game_id", "seq", "seat", "about", "guessed_role"]].rename(columns={"seq": "bseq"}),
                     left_on=["game_id", "speaker"], right_on=["game_id", "about"])
        j = j[(j["bseq"] > j["seq"]) & (j["seat"] != j["speaker"])]
        j["hit"] = (j["guessed_role"] == j["value"]).astype(int)
        rows += _rate_rows(j, (by or ["side"]) + ["claim"], measure="believed")
    return pd.DataFrame(rows)


def vote_swing(events: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """How votes move after a speech: for each day speech that accuses or suspects a player X (the first
    one it names), the share of that day's first-round ballots by the other living players that went to X
    (``rate``), against chance = 1 / (living − 1), the share X gets from a voter who ignores the speech;
    ``lift`` is the swing towards X. Per the speaker's ``spec`` and ``side`` by default."""
    ev = annotate(events, players)
    sp = ev[(ev["kind"] == "speech") & (ev["phase"] == "speech") & ev["text"].notna()]
    rows = []
    for e in sp.itertuples(index=False):
        named = [v for _, k, v in extract(e.actor, e.text) if k in ("accuse", "suspect")]
        if named:
            rows.append({"game_id": e.game_id, "day": e.day, "seq": e.seq, "speaker": e.actor, "spec": e.spec,
                         "role": e.role, "side": e.side, "named": named[0]})
    s = pd.DataFrame(rows, columns=["game_id", "day", "seq", "speaker", "spec", "role", "side", "named"])
    v = votes(events, players)
    v = v[v["round"] == "first"][["game_id", "day", "actor", "target", "alive"]].rename(columns={"actor": "voter"})
    j = s.merge(v, on=["game_id", "day"])
    j = j[(j["voter"] != j["speaker"]) & (j["voter"] != j["named"])]
    j["hit"] = (j["target"] == j["named"]).astype(int)
    j["chance"] = 1.0 / (j["alive"] - 1).clip(lower=1)
    return pd.DataFrame(_rate_rows(j, by or ["spec", "side"], chance="chance"))
