"""A replay a person can look at: one self-contained HTML file per game or engineer session (no network, no
script or style from elsewhere; it opens from disk).

A game's page: the timeline of phases; who is alive at each dawn; every speech, vote and death; one vote matrix
per day (voter by target, first round and revote); and, behind the god-view toggle, the roles, night actions,
each call's thought, the reflections, the beliefs per seat over days and each model call's prompt and answer
(click a call to open it). A session's page: each step's thought, commands, outputs and the diff each edit made
(``toolkit.export.edits``).
The pages are rendered with Jinja2 from ``toolkit/export/templates/``; all text is escaped.

In a notebook, ``show(results, game=ID)`` (or ``session=ID``) returns a ``Replay`` that displays the page inline
(an iframe holding it, so that its styles and script stay apart from the notebook's).
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

import jinja2

from toolkit.core.secrets import Redactor
from toolkit.export.common import OMITTED, by_key, parse_json, records
from toolkit.export.edits import session_diffs
from toolkit.export.kaggle import seat_order
from toolkit.werewolf.engine.events import EventKind
from toolkit.werewolf.engine.roles import event_kinds

TEMPLATES = Path(__file__).with_name("templates")
PHASE_NAMES = {"night": "Night", "dawn": "Dawn", "day_speech": "Day", "speech": "Speeches", "day_vote": "Vote",
               "day_revote": "Revote", "last_words": "Last words", "over": "Game over"}


def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def _messages(text: Any, content: bool) -> list[dict]:
    if not content:
        return [{"role": "", "content": OMITTED}]
    messages = parse_json(text, []) or []
    return [{"role": m.get("role", ""), "content": m.get("content") if isinstance(m.get("content"), str)
             else json.dumps(m.get("content"), ensure_ascii=False)} for m in messages if isinstance(m, dict)]


def call_view(c: dict, content: bool = True) -> dict:
    parsed = parse_json(c.get("parsed"), {}) or {}
    return {"call_id": c.get("call_id"), "seat": c.get("seat"), "action": c.get("action"), "model": c.get("model"),
            "ok": c.get("ok"), "prompt_tokens": c.get("prompt_tokens"), "completion_tokens": c.get("completion_tokens"),
            "latency_ms": round(c["latency_ms"]) if c.get("latency_ms") is not None else None,
            "thought": (parsed.get("thought") if content else None) if isinstance(parsed, dict) else None,
            "messages": _messages(c.get("messages"), content),
            "answer": (c.get("response_text") or "") if content else OMITTED, "error": c.get("error")}


def game_context(results, game_id: str, content: bool = True) -> dict[str, Any]:
    """Everything the game page shows, as plain data."""
    games = results.games[results.games["game_id"] == game_id]
    if games.empty:
        known = sorted(results.games["game_id"])
        raise ValueError(f"no game {game_id!r} in these results ({len(known)} games, e.g. {', '.join(known[:3])})")
    game = records(games)[0]
    pick = {t: getattr(results, t)[getattr(results, t)["game_id"] == game_id] for t in
            ("players", "events", "calls", "beliefs")}
    seats = sorted(records(pick["players"]), key=seat_order)
    roles = {s["seat"]: s["role"] for s in seats}
    events = sorted(records(pick["events"]), key=lambda e: e["seq"])
    calls_at: dict[str, list[dict]] = {}
    for c in sorted(records(pick["calls"]), key=lambda c: (c.get("seq") or 0, str(c.get("call_id")))):
        calls_at.setdefault(f"{c.get('day')}/{c.get('phase')}", []).append(c)
    blocks: list[dict] = []
    kinds = event_kinds()  # how each kind of row is shown (declared with the kind: toolkit.werewolf.engine.events)
    dead: set[str] = set()
    alive_at_dawn: dict[int, list[str]] = {}
    for e in events:
        day, phase = int(e["day"]), str(e["phase"])
        if not blocks or (blocks[-1]["day"], blocks[-1]["phase"]) != (day, phase):
            block_calls = [call_view(c, content) for c in calls_at.get(f"{day}/{phase}", [])]
            blocks.append({"day": day, "phase": phase, "name": f"{PHASE_NAMES.get(phase, phase)} {day}",
                           "events": [], "calls": block_calls})
        kind = kinds.get(e["kind"]) or EventKind(e["kind"])
        if kind.removes and e["target"]:
            dead.add(e["target"])
        if phase in ("day_speech", "speech") and day not in alive_at_dawn:
            alive_at_dawn[day] = [s["seat"] for s in seats if s["seat"] not in dead]
        text = e["text"] if content or kind.view != "speech" else OMITTED
        blocks[-1]["events"].append({**e, "text": text, "public": e["visibility"] == "public", "view": kind.view,
                                     "died": kind.removes})
    # calls of a (day, phase) with no event (a reflection at the end of a day) get a block of their own
    shown = {f"{b['day']}/{b['phase']}" for b in blocks}
    for key, rows in calls_at.items():
        if key not in shown:
            day, phase = key.split("/", 1)
            blocks.append({"day": int(float(day)) if day not in ("None", "nan") else 0, "phase": phase,
                           "name": f"{PHASE_NAMES.get(phase, phase)} {day}", "events": [],
                           "calls": [call_view(c, content) for c in rows]})
    days = sorted({b["day"] for b in blocks})
    views = {name: kind.view for name, kind in kinds.items()}
    votes = vote_grids(events, seats, days, views)
    beliefs = belief_grids(pick["beliefs"], roles)
    death = {s["seat"]: s for s in seats}
    alive = [{"day": d, "alive": set(alive_at_dawn.get(d, []))} for d in days if d in alive_at_dawn]
    return {"game": game, "seats": seats, "roles": roles, "blocks": blocks, "votes": votes, "beliefs": beliefs,
            "alive": alive, "death": death, "content": content, "n_calls": sum(len(b["calls"]) for b in blocks)}


def vote_grids(events: list[dict], seats: list[dict], days: list[int], views: dict[str, str]) -> list[dict]:
    """Each day's ballots as a grid, voters by targets (first round and revote marked), with the totals."""
    votes = []
    for day in days:
        ballots = [e for e in events if views.get(e["kind"]) == "vote" and int(e["day"]) == day]
        if not ballots:
            continue
        voters = [s["seat"] for s in seats if any(b["actor"] == s["seat"] for b in ballots)]
        targets = [s["seat"] for s in seats if any(b["target"] == s["seat"] for b in ballots)]
        cells = {(b["actor"], b["target"], b["phase"]) for b in ballots}
        exiled = next((e["target"] for e in events if views.get(e["kind"]) == "exile" and int(e["day"]) == day),
                      None)
        votes.append({"day": day, "voters": voters, "targets": targets, "exiled": exiled,
                      "rows": [[("first" if (v, t, "day_vote") in cells else "") +
                                (" revote" if (v, t, "day_revote") in cells else "") for t in targets]
                               for v in voters],
                      "totals": [sum(1 for b in ballots if b["target"] == t and b["phase"] == "day_vote")
                                 for t in targets]})
    return votes


def belief_grids(rows_of_beliefs: Any, roles: dict[str, str]) -> list[dict]:
    """Each seat's last belief about every other seat, day by day, in seat order."""
    beliefs = []
    for seat, rows in by_key(rows_of_beliefs, "seat").items():
        abouts = sorted({r["about"] for r in rows}, key=lambda s: seat_order({"seat": s}))
        last: dict[tuple, dict] = {}
        for r in rows:
            last[(r["day"], r["about"])] = r
        bdays = sorted({r["day"] for r in rows})
        beliefs.append({"seat": seat, "role": roles.get(seat), "abouts": abouts, "rows": [
            {"day": d, "cells": [last.get((d, a)) for a in abouts]} for d in bdays]})
    beliefs.sort(key=lambda b: seat_order({"seat": b["seat"]}))
    return beliefs


def session_context(results, session_id: str, trajectory: dict | None, content: bool = True) -> dict[str, Any]:
    sessions = results.sessions[results.sessions["session_id"] == session_id]
    if sessions.empty:
        known = sorted(results.sessions["session_id"])
        raise ValueError(f"no session {session_id!r} in these results ({len(known)} sessions)")
    session = records(sessions)[0]
    tools = by_key(results.tool_calls[results.tool_calls["session_id"] == session_id], "step")
    calls = records(results.calls[results.calls["session_id"] == session_id])
    memory = (trajectory or {}).get("memory") or []
    ok = {(step, j): bool(row.get("ok")) for step, rows in tools.items() for j, row in enumerate(rows)}
    diffs = session_diffs(memory, ok) if content else {}
    steps = []
    for i, m in enumerate(memory):
        step = m.get("step", i + 1)
        commands = m.get("commands") or []
        outputs = m.get("observations") or []
        items = []
        for j, command in enumerate(commands):
            name = command.get("command_name", "") if isinstance(command, dict) else str(command)
            args = command.get("args", {}) if isinstance(command, dict) else {}
            out = outputs[j] if j < len(outputs) else ""
            items.append({"name": name, "args": json.dumps(args, ensure_ascii=False, indent=1) if content else OMITTED,
                          "output": str(out) if content else OMITTED, "diff": diffs.get((step, j))})
        steps.append({"step": step, "thought": m.get("thought", "") if content else OMITTED, "commands": items,
                      "tools": tools.get(step, [])})
    return {"session": session, "steps": steps, "calls": [call_view(c, content) for c in calls],
            "content": content, "task": session.get("task") or (trajectory or {}).get("task", "")}


def game_page(results, game_id: str, content: bool = True) -> str:
    return Redactor()(_env().get_template("game.html").render(**game_context(results, game_id, content)))


def session_page(results, session_id: str, trajectory: dict | None = None, content: bool = True) -> str:
    return Redactor()(_env().get_template("session.html").render(
        **session_context(results, session_id, trajectory, content)))


def find_trajectory(folder: str | Path, session_id: str) -> dict | None:
    """The trajectory JSON the session saved in its workspace (``.agent/trajectories/<id>.json``), if any."""
    for path in Path(folder).rglob(f"trajectories/{session_id}.json"):
        return json.loads(path.read_text(encoding="utf-8"))
    return None


class Replay:
    """A replay page that shows itself inline in a notebook: its ``_repr_html_`` (the ``text/html`` output Jupyter
    displays) is a sandboxed iframe whose ``srcdoc`` is the whole page. ``link()`` is a link that saves the page
    (a ``data:`` URL, so that it needs no file server); ``save(path)`` writes it."""

    def __init__(self, page: str, name: str, height: int = 720):
        self.page, self.name, self.height = page, name, height

    def _repr_html_(self) -> str:
        return (f'<iframe class="toolkit-replay" title="{html.escape(self.name)}" srcdoc="{html.escape(self.page)}" '
                f'sandbox="allow-scripts" style="width:100%;height:{int(self.height)}px;border:1px solid #ccc">'
                "</iframe>")

    def link(self, text: str | None = None) -> str:
        data = base64.b64encode(self.page.encode()).decode()
        return (f'<a class="toolkit-replay-link" download="{html.escape(self.name)}.html" '
                f'href="data:text/html;charset=utf-8;base64,{data}">{html.escape(text or self.name + ".html")}</a>')

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.page, encoding="utf-8")
        return path


def show(results, game: str | None = None, session: str | None = None, folder: str | Path | None = None,
         content: bool = True, height: int = 720) -> Replay:
    """A game's (``game=``) or an engineer session's (``session=``) replay, for a notebook cell to display.
    A session's page reads its trajectory from under ``folder`` (the results folder), as ``view`` does."""
    if (game is None) == (session is None):
        raise ValueError("give one of game= or session=")
    if game is not None:
        return Replay(game_page(results, game, content), game, height)
    trajectory = find_trajectory(folder, session) if folder is not None else None
    return Replay(session_page(results, session, trajectory, content), session, height)
