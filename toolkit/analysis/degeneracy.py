"""Degenerate play that "0 fallbacks" does not show: a model whose every answer parses can still be playing
nonsense. Four checks, per model spec, each a rate with its n and a 95% cluster-bootstrap interval (whole
games resampled):

- ``template echo``: an answer's text (a thought, a speech, a reflection) holds a placeholder such as
  ``<brief private reasoning>`` (with or without words around it), or is mostly copied from its own prompt's
  instructions (the rules, the answer's description; the players' quoted words left out): at least
  ``similarity.ECHO`` of its character 5-grams are in one stretch of them — words changed, added or dropped do
  not hide it.
  n = text answers with content.
- ``repeated speech``: a speech that is a near-duplicate of an earlier speech of the same game (at least
  ``similarity.NEAR`` of its character 5-grams in one earlier speech: another seat's words reworded, padded,
  cut or reordered, a repeat of one's own), unless it is shorter than ``similarity.MIN_WORDS`` words ("I have
  no information yet.") or the speaker is a scripted player and the text one of its stock lines — a text it
  says (seat names aside: ``similarity.template``) in at least ``STOCK_GAMES`` games ("I am a Villager. I
  suspect Player3."). A model has no stock lines: one that says one fixed speech at every turn is flagged.
  n = speeches.
- ``wolf votes wolf``: a werewolf's day vote for a fellow werewolf when it had a village player to vote for
  (rarely a strategy; for a weak model it is usually not knowing its side); a vote for itself (where the rules
  allow it) is not one — it is a unit, not a flag; a ballot whose only legal candidates were wolves is no unit.
  n = werewolves' votes with a choice.
- ``contradicting potions``: a Witch poisoning a player she saved earlier in the game. n = Witches' poisons.

Every comparison is near-linear in the answers (``similarity``: shingle hashes and an inverted index per game;
a prompt is indexed once per answer). ``benchmarks/degeneracy_curve.py`` measures the detection rate on
perturbed copies and the false-flag rate on sound play. Scripted players (heuristic, random, mixed) repeat
fixed sentences by design; the report says they are scripted, and only their stock lines are exempt."""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

import pandas as pd

from toolkit.analysis.intervals import cluster_rate
from toolkit.analysis.similarity import ECHO, MIN_WORDS, NEAR, Earlier, Told, template, words

CHECKS = ("template echo", "repeated speech", "wolf votes wolf", "contradicting potions")
PLACEHOLDER = re.compile(r"<[a-z][a-z ,;:'/-]{3,120}>", re.IGNORECASE)
STOCK_GAMES = 2  # a text a model says unprompted in this many games is one of its stock lines
TEXT_FIELDS = ("thought", "speech", "summary", "reflection")
SCRIPTED = ("heuristic", "random", "mixed", "chaos")
UNIT_COLUMNS = ["spec", "game_id", "check", "k", "n"]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _prompt_text(messages: Any) -> str:
    try:
        items = json.loads(messages) if isinstance(messages, str) else list(messages or [])
    except (TypeError, ValueError):
        return ""
    return _norm(" ".join(str(m.get("content", "")) for m in items if isinstance(m, dict)))


def echoes(text: str, prompt: str, told: Told | None = None) -> bool:
    """True when ``text`` holds a placeholder, or (at least ``MIN_WORDS`` words) at least ``ECHO`` of its
    character 5-grams are in one stretch of ``prompt``'s instructions (``similarity.Told``; ``told``: the
    prompt already indexed)."""
    if PLACEHOLDER.search(text):
        return True
    if len(words(text)) < MIN_WORDS:
        return False
    told = Told(prompt) if told is None else told
    return told.contains(text) >= ECHO


def _texts(parsed: Any) -> list[str]:
    try:
        obj = json.loads(parsed) if isinstance(parsed, str) else parsed
    except (TypeError, ValueError):
        return []
    if not isinstance(obj, dict):
        return []
    return [obj[k] for k in TEXT_FIELDS if isinstance(obj.get(k), str) and obj[k].strip()]


def _repeats(events: pd.DataFrame, spec_of: dict) -> list[dict]:
    """The ``repeated speech`` units: each speech's best containment in one earlier speech of its game; a
    scripted player's stock line (its text, seat names aside, said by that player in ``STOCK_GAMES`` games or
    more) is not flagged. A model gets no such exemption: one that says the same speech at every turn is
    flagged from its second turn of each game."""
    speeches = events[events["kind"] == "speech"].sort_values(["game_id", "seq"])
    found, games_of = [], {}
    for game_id, g in speeches.groupby("game_id", sort=False):
        earlier = Earlier()
        for e in g.itertuples(index=False):
            text, spec = str(e.text), spec_of.get((game_id, e.actor))
            score, _ = earlier.best(text)
            key = template(text)
            games_of.setdefault((spec, key), set()).add(game_id)
            found.append((spec, game_id, key, score))
            earlier.add(text)
    return [{"spec": spec, "game_id": g, "check": "repeated speech",
             "hit": score >= NEAR and not (scripted(spec) and len(games_of[(spec, key)]) >= STOCK_GAMES)}
            for spec, g, key, score in found]


def scripted(spec: Any) -> bool:
    """A scripted player (heuristic, random, mixed, chaos): its fixed sentences repeat by design."""
    return str(spec).split(":")[0] in SCRIPTED


def _wolf_ballots(tables, spec_of: dict) -> list[dict]:
    """``wolf votes wolf`` units: wolves' day ballots on someone, when a village player was a legal choice."""
    from toolkit.analysis.metrics import votes

    events = tables.events.assign(**{c: tables.events.get(c, d) for c, d in (("phase", "day_vote"), ("day", 0))})
    v = votes(events, tables.players[["game_id", "seat", "role", "spec"]].assign(
        side=lambda p: p["role"].eq("Werewolf").map({True: "werewolves", False: "village"})),
        getattr(tables, "games", None))
    v = v[(v["role"] == "Werewolf") & v["target"].notna() & (v["candidates"] > v["wolf_candidates"])]
    return [{"spec": spec_of.get((g, a)), "game_id": g, "check": "wolf votes wolf", "hit": r == "Werewolf" and t != a}
            for g, a, t, r in zip(v["game_id"], v["actor"], v["target"], v["target_role"])]


def echo_counts(calls: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """The ``template echo`` units per model spec and game: ``k`` flagged of ``n`` text answers, from calls
    frames read a batch at a time (each needs ``spec``, ``game_id``, ``ok``, ``fallback``, ``parsed`` and
    ``messages``): only one batch's prompts are ever held."""
    counts: dict[tuple, list[int]] = {}
    for batch in calls:
        answered = batch[batch["ok"].fillna(False).astype(bool) & ~batch["fallback"].fillna(False).astype(bool)]
        for spec, game_id, parsed, messages in zip(answered["spec"], answered["game_id"], answered["parsed"],
                                                   answered["messages"]):
            texts = _texts(parsed)
            if texts:
                told = Told(_prompt_text(messages))
                kn = counts.setdefault((spec, game_id), [0, 0])
                kn[0] += sum(echoes(text, "", told) for text in texts)
                kn[1] += len(texts)
    return pd.DataFrame([(spec, g, "template echo", k, n) for (spec, g), (k, n) in counts.items()],
                        columns=UNIT_COLUMNS)


def _counted(units: list[dict]) -> pd.DataFrame:
    """Unit rows (spec, game_id, check, hit) as ``k`` hits of ``n`` units per spec, game and check."""
    frame = pd.DataFrame(units, columns=["spec", "game_id", "check", "hit"])
    grouped = frame.assign(hit=frame["hit"].astype(int)).groupby(["spec", "game_id", "check"], sort=False,
                                                                 dropna=False)
    return grouped["hit"].agg(k="sum", n="size").reset_index()


def _unit_rows(tables, echo: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per model spec, game and check: ``k`` units flagged of ``n`` checked. ``echo``: the template-echo counts
    already computed (``echo_counts``, as the report does a batch of calls at a time); else they come from
    ``tables.calls``' prompts, when it has them."""
    parts = []
    calls = tables.calls
    if echo is not None:
        parts.append(echo)
    elif len(calls) and "messages" in calls.columns:
        parts.append(echo_counts([calls]))
    rows: list[dict] = []
    events, players = tables.events, tables.players
    if len(events) and len(players):
        seat = players.set_index(["game_id", "seat"])
        spec_of = seat["spec"].to_dict()
        rows += _repeats(events, spec_of)
        rows += _wolf_ballots(tables, spec_of)
        ev = events.sort_values(["game_id", "seq"])
        potions = ev[ev["kind"].isin(["save", "poison"])]
        for game_id, g in potions.groupby("game_id", sort=False):
            saved: dict[str, set] = {}
            for e in g.itertuples(index=False):
                if not isinstance(e.target, str):
                    continue
                if e.kind == "save":
                    saved.setdefault(e.actor, set()).add(e.target)
                else:
                    rows.append({"spec": spec_of.get((game_id, e.actor)), "game_id": game_id,
                                 "check": "contradicting potions", "hit": e.target in saved.get(e.actor, set())})
    parts.append(_counted(rows))
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=UNIT_COLUMNS)


def degeneracy(tables, n_boot: int = 2000, seed: int = 0, echo: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per model spec and check: k flagged of n units, the rate and its 95% interval over games. ``echo``: the
    template-echo counts of these games, already computed (``echo_counts``); without it they come from
    ``tables.calls``' prompts (none when it has no ``messages`` column)."""
    units = _unit_rows(tables, echo)
    out = []
    for (spec, check), u in units.groupby(["spec", "check"], sort=True):
        per_game = u.groupby("game_id")[["k", "n"]].sum()
        r = cluster_rate(per_game["k"], per_game["n"], n_boot=n_boot, seed=seed)
        out.append({"spec": spec, "check": check, "k": r["k"], "n": r["n"], "n_games": r["n_games"],
                    "rate": r["rate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                    "scripted": scripted(spec)})
    columns = ["spec", "check", "k", "n", "n_games", "rate", "ci_low", "ci_high", "scripted"]
    frame = pd.DataFrame(out, columns=columns)
    order = {c: i for i, c in enumerate(CHECKS)}
    return frame.sort_values(["spec", "check"], key=lambda s: s.map(order) if s.name == "check" else s,
                             ignore_index=True)


def summary_line(tables) -> str:
    """One line for ``toolkit play``: every check's k/n for the game (all seats together). Scripted players'
    fixed sentences repeat by design: when every flag is theirs the line says so first and reads as a note, not
    as a fault."""
    units = _unit_rows(tables)
    if units.empty:
        return "degeneracy checks: nothing to check"
    parts = []
    for check in CHECKS:
        u = units[units["check"] == check]
        if len(u):
            parts.append(f"{check} {int(u['k'].sum())}/{int(u['n'].sum())}")
    flagged = int(units["k"].sum())
    family = units["spec"].astype(str).str.split(":").str[0]
    if not flagged:
        return "degeneracy checks: none flagged (" + ", ".join(parts) + ")"
    if family[units["k"] > 0].isin(SCRIPTED).all():
        models = "" if family.isin(SCRIPTED).all() else "; the models' answers: none flagged"
        return (f"degeneracy checks: only the scripted players' fixed sentences repeat, as designed{models} "
                f"({', '.join(parts)})")
    return f"degeneracy checks: {flagged} flagged (" + ", ".join(parts) + ")"
