"""Degenerate play that "0 fallbacks" does not show: a model whose every answer parses can still be playing
nonsense. Four checks, per model spec, each a rate with its n and a 95% cluster-bootstrap interval (whole
games resampled):

- ``template echo``: an answer's text (a thought, a speech, a reflection) is a placeholder such as
  ``<brief private reasoning>`` or a stretch copied from its own prompt (the answer template, the rules,
  another player's quoted speech). n = text answers with content.
- ``identical speech``: a speech word for word the same as an earlier speech in the same game. n = speeches.
- ``wolf votes wolf``: a werewolf's day vote for a fellow werewolf (rarely a strategy; for a weak model it
  is usually not knowing its side). n = werewolves' votes.
- ``contradicting potions``: a Witch poisoning a player she saved earlier in the game. n = Witches' poisons.

Scripted players (heuristic, random, mixed) repeat fixed sentences by design: their identical speeches are
listed like any model's, and the report says they are scripted."""

from __future__ import annotations

import json
import re
from typing import Any

import pandas as pd

from toolkit.analysis.intervals import cluster_rate

CHECKS = ("template echo", "identical speech", "wolf votes wolf", "contradicting potions")
PLACEHOLDER = re.compile(r"^\s*<[^<>]{1,200}>\s*$")
MIN_COPIED = 24  # characters: a shorter answer can match a prompt by chance ("I am a Villager.")
TEXT_FIELDS = ("thought", "speech", "summary", "reflection")
SCRIPTED = ("heuristic", "random", "mixed", "chaos")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _prompt_text(messages: Any) -> str:
    try:
        items = json.loads(messages) if isinstance(messages, str) else list(messages or [])
    except (TypeError, ValueError):
        return ""
    return _norm(" ".join(str(m.get("content", "")) for m in items if isinstance(m, dict)))


def echoes(text: str, prompt: str) -> bool:
    """True when ``text`` is a placeholder or (normalised, at least MIN_COPIED characters) part of ``prompt``."""
    if PLACEHOLDER.match(text):
        return True
    t = _norm(text)
    return len(t) >= MIN_COPIED and t in prompt


def _texts(parsed: Any) -> list[str]:
    try:
        obj = json.loads(parsed) if isinstance(parsed, str) else parsed
    except (TypeError, ValueError):
        return []
    if not isinstance(obj, dict):
        return []
    return [obj[k] for k in TEXT_FIELDS if isinstance(obj.get(k), str) and obj[k].strip()]


def _unit_rows(tables) -> pd.DataFrame:
    """One row per checked unit: spec, game_id, check, hit."""
    rows: list[dict] = []
    calls = tables.calls
    if len(calls):
        for c in calls[calls["ok"].astype(bool) & ~calls["fallback"].astype(bool)].itertuples(index=False):
            texts = _texts(c.parsed)
            if texts:
                prompt = _prompt_text(c.messages)
                for text in texts:
                    rows.append({"spec": c.spec, "game_id": c.game_id, "check": "template echo",
                                 "hit": echoes(text, prompt)})
    events, players = tables.events, tables.players
    if len(events) and len(players):
        seat = players.set_index(["game_id", "seat"])
        spec_of = seat["spec"].to_dict()
        role_of = seat["role"].to_dict()
        ev = events.sort_values(["game_id", "seq"])
        for game_id, g in ev.groupby("game_id", sort=False):
            seen: set[str] = set()
            for e in g[g["kind"] == "speech"].itertuples(index=False):
                text = _norm(str(e.text))
                rows.append({"spec": spec_of.get((game_id, e.actor)), "game_id": game_id,
                             "check": "identical speech", "hit": text in seen})
                seen.add(text)
            for e in g[g["kind"] == "vote"].itertuples(index=False):
                if role_of.get((game_id, e.actor)) == "Werewolf" and isinstance(e.target, str):
                    rows.append({"spec": spec_of.get((game_id, e.actor)), "game_id": game_id,
                                 "check": "wolf votes wolf", "hit": role_of.get((game_id, e.target)) == "Werewolf"})
            saved: dict[str, set] = {}
            for e in g[g["kind"].isin(["save", "poison"])].itertuples(index=False):
                if not isinstance(e.target, str):
                    continue
                if e.kind == "save":
                    saved.setdefault(e.actor, set()).add(e.target)
                else:
                    rows.append({"spec": spec_of.get((game_id, e.actor)), "game_id": game_id,
                                 "check": "contradicting potions", "hit": e.target in saved.get(e.actor, set())})
    return pd.DataFrame(rows, columns=["spec", "game_id", "check", "hit"])


def degeneracy(tables, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Per model spec and check: k flagged of n units, the rate and its 95% interval over games."""
    units = _unit_rows(tables)
    out = []
    for (spec, check), u in units.groupby(["spec", "check"], sort=True):
        per_game = u.groupby("game_id")["hit"].agg(["sum", "count"])
        r = cluster_rate(per_game["sum"], per_game["count"], n_boot=n_boot, seed=seed)
        out.append({"spec": spec, "check": check, "k": r["k"], "n": r["n"], "n_games": r["n_games"],
                    "rate": r["rate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                    "scripted": str(spec).split(":")[0] in SCRIPTED})
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
            parts.append(f"{check} {int(u['hit'].sum())}/{len(u)}")
    flagged = int(units["hit"].sum())
    family = units["spec"].astype(str).str.split(":").str[0]
    if not flagged:
        return "degeneracy checks: none flagged (" + ", ".join(parts) + ")"
    if family[units["hit"].astype(bool)].isin(SCRIPTED).all():
        models = "" if family.isin(SCRIPTED).all() else "; the models' answers: none flagged"
        return (f"degeneracy checks: only the scripted players' fixed sentences repeat, as designed{models} "
                f"({', '.join(parts)})")
    return f"degeneracy checks: {flagged} flagged (" + ", ".join(parts) + ")"
