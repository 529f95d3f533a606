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

import numpy as np
import pandas as pd

from toolkit.analysis.bars import BARS
from toolkit.analysis.intervals import Draws, cluster_mean, cluster_rate, groups, paired_difference
from toolkit.analysis.metrics import N_BOOT, rate_rows, annotate, votes
from toolkit.werewolf.engine.claims import extract
from toolkit.werewolf.engine.roles import removing_kinds

BELIEF_COLUMNS = ("game_id", "seq", "day", "phase", "seat", "about", "guessed_role", "confidence", "call_id")


def _truth(players: pd.DataFrame) -> pd.DataFrame:
    return players[["game_id", "seat", "role", "side", "spec"]]


def belief_table(beliefs: pd.DataFrame, players: pd.DataFrame) -> pd.DataFrame:
    """Beliefs joined to the truth: the believer's role/side/spec, the true role of ``about``, ``correct``
    (the guessed role is the true role), ``wolf_guess``/``is_wolf``, and two no-information levels:

    - ``random``: the accuracy of a uniformly random guess among the preset's roles (1 / number of roles);
    - ``chance``: the bar (``bars.BARS["identity"]``), the best constant guess for the believer's model, role
      and day — the role that is most often the true one among those rows (``bar_guess``; a tie shares the
      hit, 1 / tied roles, so no tie is broken by the alphabet) — scored on this row. No guess that ignores the
      game beats it on those rows (it is the best of the constants in hindsight); a lift over ``random`` that
      is not a lift over it is that constant guess.

    Rows of a wolf about a teammate are dropped."""
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
    roles = players.groupby("game_id")["role"].nunique()
    b["random"] = 1.0 / b["game_id"].map(roles).astype(float)  # float even when b is empty
    cell = ["spec", "role", "day"] if "day" in b.columns else ["spec", "role"]
    counts = b.groupby(cell + ["true_role"], dropna=False).size().rename("c").reset_index()
    counts["top"] = counts.groupby(cell, dropna=False)["c"].transform("max")
    best = counts[counts["c"] == counts["top"]]
    tied = best.groupby(cell, dropna=False)["true_role"].agg(lambda r: "/".join(sorted(r))).rename("bar_guess")
    b = b.join(tied, on=cell)
    share = best.assign(share=1.0 / best.groupby(cell, dropna=False)["true_role"].transform("size"))
    b = b.merge(share[cell + ["true_role", "share"]], on=cell + ["true_role"], how="left")
    b["chance"] = b["share"].fillna(0.0)
    b["confidence"] = pd.to_numeric(b.get("confidence"), errors="coerce")
    return b.drop(columns="share").reset_index(drop=True)


def identity_accuracy(beliefs: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Identity-inference accuracy: the share of belief rows whose guessed role is the true role, against
    the bar (``chance``: the best constant guess per believer model, role and day, ``belief_table``) with
    the lift over it and its interval (resampling games), and ``random`` = a random guess among the roles;
    ``by`` e.g. ``["spec", "day"]`` or ``["seat"]``."""
    b = belief_table(beliefs, players)
    b["hit"] = b["correct"]
    return pd.DataFrame(rate_rows(b, by, chance="chance", random="random", bar=BARS["identity"]))


def balanced_accuracy(beliefs: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Identity inference per true role: the recall for each true role (share of rows about a player of
    that role that guess it) and their mean, the balanced accuracy. A constant guess scores 1 / roles on it
    (full recall on one role, none on the others), as does a random guess — so its chance level is the same
    for both; intervals resample games (the balanced accuracy is recomputed per resample)."""
    b = belief_table(beliefs, players)
    rows = []
    for key, g in groups(b, by):
        roles = sorted(g["true_role"].unique())
        per = g.groupby(["game_id", "true_role"])["correct"].agg(["sum", "size"]).unstack(fill_value=0)
        k, n = per["sum"].reindex(columns=roles, fill_value=0), per["size"].reindex(columns=roles, fill_value=0)
        with np.errstate(invalid="ignore", divide="ignore"):  # a block of replicates at a time (Draws)
            boots = np.concatenate([np.nanmean((W @ k.to_numpy()) / (W @ n.to_numpy()), axis=1)
                                    for W in Draws(len(per), N_BOOT, 0).blocks()])
        recall = k.sum() / n.sum()
        low, high = np.nanpercentile(boots, [2.5, 97.5])
        rows.append({**key, "n": int(n.to_numpy().sum()), "n_games": int(len(per)),
                     "balanced_accuracy": float(recall.mean()), "ci_low": float(low), "ci_high": float(high),
                     "chance": 1.0 / len(roles), **{f"recall_{r}": float(recall[r]) for r in roles}})
    return pd.DataFrame(rows)


def brier(beliefs: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Proper scores of the stated confidence in each guess (the forecast that the guess is right):
    Brier = mean((confidence − correct)²) and log-loss = −mean(correct·log c + (1 − correct)·log(1 − c))
    (c clipped to [0.01, 0.99]); lower is better. Both relative to the no-skill forecast that always states
    the observed accuracy (Brier reference accuracy·(1 − accuracy), log-loss reference the binary entropy
    of the accuracy): ``brier_skill`` = 1 − Brier / reference, ``log_skill`` likewise; above 0 the
    confidences carry information, at or below 0 they do not. Rows without a confidence are left out."""
    b = belief_table(beliefs, players).dropna(subset=["confidence"])
    c = b["confidence"].clip(0, 1)
    b["sq"] = (c - b["correct"]) ** 2
    cl = c.clip(0.01, 0.99)
    b["ll"] = -(b["correct"] * np.log(cl) + (1 - b["correct"]) * np.log(1 - cl))
    rows = []
    for key, g in groups(b, by):
        acc = g["correct"].mean()
        ref = acc * (1 - acc)
        a = min(max(acc, 1e-9), 1 - 1e-9)
        ref_ll = -(a * np.log(a) + (1 - a) * np.log(1 - a))
        m = cluster_mean(g["sq"], g["game_id"], n_boot=N_BOOT, bounds=(0, 1))
        rows.append({**key, **m, "reference": ref, "brier_skill": 1 - m["mean"] / ref if ref > 0 else np.nan,
                     "log_loss": float(g["ll"].mean()),
                     "log_skill": 1 - float(g["ll"].mean()) / ref_ll if ref_ll > 0 else np.nan})
    return pd.DataFrame(rows)


def wolf_detection(beliefs: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """The village's detection of the wolves over time, per ``day`` by default: among village-side belief
    rows about a werewolf, the share that guess Werewolf (``rate``, the recall) and, among village-side rows
    about a village player, the share that guess Werewolf (``false_positive``, with its interval). The bar
    (``chance``) is the false-positive rate: a guess that ignores the game calls a wolf "Werewolf" exactly as
    often as a villager (calling everyone a wolf: recall 1, false positives 1), so detection is ``lift`` =
    recall − false-positive rate, with a paired interval resampling games (``intervals.paired_difference``)."""
    b = belief_table(beliefs, players)
    b = b[b["side"] == "village"].copy()
    b["hit"] = b["wolf_guess"]
    wolves, good = b[b["is_wolf"] == 1], b[b["is_wolf"] == 0]
    rows = []
    for key, g in groups(wolves, by or ["day"]):
        per = g.groupby("game_id").agg(k=("hit", "sum"), n=("hit", "size"))
        r = cluster_rate(per["k"], per["n"], n_boot=N_BOOT)
        mask = np.ones(len(good), bool)
        for col, value in key.items():
            mask &= (good[col] == value).to_numpy()
        fp = good[mask].groupby("game_id").agg(k=("hit", "sum"), n=("hit", "size"))
        f = cluster_rate(fp["k"], fp["n"], n_boot=N_BOOT)
        both = per.merge(fp, left_index=True, right_index=True, suffixes=("_w", "_g"))
        d = (paired_difference(both["k_w"], both["n_w"], both["k_g"], both["n_g"], n_boot=N_BOOT) if len(both) > 1
             else {"ci_low": float("nan"), "ci_high": float("nan")})
        rows.append({**key, **r, "chance": f["rate"], "lift": r["rate"] - f["rate"], "lift_ci_low": d["ci_low"],
                     "lift_ci_high": d["ci_high"], "false_positive": f["rate"], "fp_ci_low": f["ci_low"],
                     "fp_ci_high": f["ci_high"], "n_good": f["n"], "bar": BARS["detection"]})
    return pd.DataFrame(rows)


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
    speeches = ev.loc[(ev["kind"] == "speech") & ev["text"].notna() & ev["role"].notna(),  # the columns read
                      ["game_id", "seq", "day", "actor", "spec", "role", "side", "text"]]
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
    """Share of claims that are false, per ``kind`` and the speaker's ``side`` and ``role`` by default.
    ``by_construction`` flags rows that are (nearly) constant by the rules rather than by choice — a wolf
    claiming a village role always lies — or constant in the data; read those as counts, not as rates."""
    c = claims(events, players)
    c["hit"] = c["lie"]
    out = pd.DataFrame(rate_rows(c, by or ["kind", "side", "role"]))
    if out.empty:
        return out
    out["by_construction"] = [_constant_claim(r) for r in out.to_dict("records")]
    return out


def _constant_claim(row: dict) -> str:
    """Why a lie rate cannot be anything else, or "" when it measures a choice."""
    if row.get("kind") == "role" and row.get("side") == "werewolves":
        return "a wolf's role claim is false unless it names Werewolf"
    if row.get("kind") == "check" and row.get("role") == "Seer":
        return "the Seer's check claims are true unless it misreports"
    if row.get("k") in (0, row.get("n")):
        return "constant in these data"
    return ""


def false_claims_followed(events: pd.DataFrame, players: pd.DataFrame, beliefs: pd.DataFrame | None = None,
                          by: list[str] | None = None, games: pd.DataFrame | None = None) -> pd.DataFrame:
    """How often a claim was believed, false against true claims. For each check claim accusing X on day d:
    the share of that day's first-round ballots by other village-side voters cast after the claim for X
    (``followed``; chance = 1 / (living − 1), a voter who ignores the claim; ``random`` = 1 / the voter's
    legal answers under ``games``' rules); neither the speaker's nor X's own ballot counts.
    When ``beliefs`` has rows, also for each role claim: the share of the other seats' later beliefs about
    the speaker that guess the claimed role (``believed``; chance = 1 / roles, a random guess).

    In offline play every false check claim is a wolf's and every true one the Seer's, so "false vs true"
    is also "wolf vs Seer": ``claim_falsity_within_side`` says, per side, whether both kinds occur there
    (only then does a difference measure falsity rather than who spoke)."""
    c = claims(events, players)
    c["claim"] = np.where(c["true"].astype(bool), "true", "false")
    v = votes(events, players, games)
    v = v[(v["round"] == "first") & (v["side"] == "village")]
    acc = c[(c["kind"] == "check") & (c["value"] == "werewolf")]
    joined = acc.merge(v[["game_id", "seq", "day", "actor", "target", "alive", "choices"]].rename(
        columns={"actor": "voter", "target": "voted", "seq": "vote_seq"}), on=["game_id", "day"])
    # a ballot cast before the claim (a claim in last words, after the vote) cannot have followed it
    joined = joined[(joined["voter"] != joined["speaker"]) & (joined["voter"] != joined["target"])
                    & (joined["seq"] < joined["vote_seq"])]
    joined["hit"] = (joined["voted"] == joined["target"]).astype(int)
    joined["chance"] = 1.0 / (joined["alive"] - 1).clip(lower=1)
    joined["random"] = 1.0 / joined["choices"].clip(lower=1)
    rows = rate_rows(joined, (by or ["side"]) + ["claim"], chance="chance", random="random", measure="followed",
                      bar=BARS["followed"])
    mixed = {side: g["claim"].nunique() > 1 for side, g in acc.groupby("side")}
    for row in rows:
        row["claim_falsity_within_side"] = bool(mixed.get(row.get("side"), False))
    if beliefs is not None and len(beliefs):
        b = belief_table(beliefs, players)
        rc = c[c["kind"] == "role"]
        j = rc.merge(b[["game_id", "seq", "seat", "about", "guessed_role", "random"]].rename(
            columns={"seq": "bseq", "random": "chance"}), left_on=["game_id", "speaker"], right_on=["game_id", "about"])
        j = j[(j["bseq"] > j["seq"]) & (j["seat"] != j["speaker"])]
        j["hit"] = (j["guessed_role"] == j["value"]).astype(int)
        rows += rate_rows(j, (by or ["side"]) + ["claim"], chance="chance", random="chance", measure="believed",
                           bar=BARS["believed"])
    return pd.DataFrame(rows)


def vote_swing(events: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None,
               games: pd.DataFrame | None = None) -> pd.DataFrame:
    """How votes move after a speech: for each day speech that accuses or suspects a player X (the first
    one it names), the share of that day's first-round ballots by the other living players that went to X
    (``rate``), against chance = 1 / (living − 1), the share X gets from a voter who ignores the speech
    (``random`` = 1 / the voter's legal answers under ``games``' rules, self-votes and abstentions included);
    ``lift`` is the swing towards X. Per the speaker's ``spec`` and ``side`` by default. A wolf speaker's
    fellow wolves are left out (they know whom they follow: coordination, not persuasion); X's own ballot
    too."""
    ev = annotate(events, players)
    sp = ev.loc[(ev["kind"] == "speech") & (ev["phase"] == "speech") & ev["text"].notna(),  # the columns read
                ["game_id", "day", "seq", "actor", "spec", "role", "side", "text"]]
    rows = []
    for e in sp.itertuples(index=False):
        named = [v for _, k, v in extract(e.actor, e.text) if k in ("accuse", "suspect")]
        if named:
            rows.append({"game_id": e.game_id, "day": e.day, "seq": e.seq, "speaker": e.actor, "spec": e.spec,
                         "role": e.role, "side": e.side, "named": named[0]})
    s = pd.DataFrame(rows, columns=["game_id", "day", "seq", "speaker", "spec", "role", "side", "named"])
    v = votes(events, players, games)
    v = v[v["round"] == "first"][["game_id", "seq", "day", "actor", "target", "alive", "choices"]].rename(
        columns={"actor": "voter", "seq": "vote_seq"})
    j = s.merge(v, on=["game_id", "day"])
    # each voter's role by a left merge on the keys (rows in order; was a Series of (game, voter) tuples mapped
    # through an index: one Python tuple per row of j, the speeches times the day's ballots)
    voter_role = j[["game_id", "voter"]].merge(players[["game_id", "seat", "role"]].rename(columns={"seat": "voter"}),
                                               on=["game_id", "voter"], how="left")["role"]
    voter_wolf = voter_role.eq("Werewolf").to_numpy()
    del voter_role
    teammate = voter_wolf & (j["side"] == "werewolves").to_numpy()  # a wolf hearing a wolf knows its ally
    j = j[(j["voter"] != j["speaker"]) & (j["voter"] != j["named"]) & ~teammate]
    j["hit"] = (j["target"] == j["named"]).astype(int)
    dead = ev[ev["kind"].isin(removing_kinds())][["game_id", "seq", "target"]].rename(
        columns={"seq": "death_seq", "target": "named"})
    gone = j[["game_id", "named", "vote_seq"]].reset_index().merge(dead, on=["game_id", "named"])
    gone = set(gone.loc[gone["death_seq"] < gone["vote_seq"], "index"])
    # a speech may name a player who is dead by the vote (killed that night in its story): nobody can vote
    # for them, so their chance is 0, not 1 / (living − 1)
    j["chance"] = np.where(j.index.isin(gone), 0.0, 1.0 / (j["alive"] - 1).clip(lower=1))
    j["random"] = np.where(j.index.isin(gone), 0.0, 1.0 / j["choices"].clip(lower=1))
    return pd.DataFrame(rate_rows(j, by or ["spec", "side"], chance="chance", random="random",
                                   bar=BARS["vote_swing"]))
