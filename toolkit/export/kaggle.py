"""Werewolf games as Kaggle Game Arena replay JSON (``kaggle-environments`` 1.33.2, ``envs/werewolf``), one file
per game, in the shape its own loader (``envs/werewolf/eval/loaders.py``, ``GameResult``) and visualizer read:

- ``configuration.agents``: one entry per seat, the seat's model spec as ``display_name`` and ``agent_id``;
- ``info.GAME_END``: the fields of its ``GameEndResultsDataEntry`` (winner team and ids, scores, survivors,
  ``all_players`` with each seat's role and display name, ``elimination_info``) and, when the run logged
  calls, a ``cost_summary`` per seat;
- ``info.MODERATOR_OBSERVATION``: one list per phase of the moderator's events, each ``{data_type,
  json_str}`` as its ``Event.serialize`` writes them: day ballots as ``DayExileVoteDataEntry``, exiles as
  ``DayExileElectedDataEntry``, night deaths as ``WerewolfNightEliminationDataEntry``, speeches as
  ``ChatDataEntry``, Doctor heals as ``DoctorHealActionDataEntry``, and so on (each kind of row declares its
  entry: ``toolkit.werewolf.engine.events``); events Kaggle's game has no type for (the witch's potions, the
  Hunter's shot) as ``dict``;
- ``info.TOOLKIT``: what the study knows of the game and Kaggle has no field for: its run, the run's
  ``conditions`` (a sweep or tournament cell's parameters) and the game's tokens (``tokens_estimated`` when
  any count is an estimate).

Kaggle numbers the first night day 0 and a night after day N night N; this toolkit calls that night N + 1.
Its ``ROLE_TO_TEAM`` knows Villager, Werewolf, Seer and Doctor only: a reader must add Guard and Witch to the
village (``Team.VILLAGERS``), or its loader prints a warning and leaves their ballots out of IRP and VSS.
Only decided games (a side won) can be written: its ``GameResult`` needs a winning team.

Every text in a replay is made inert (``inert``): Kaggle's visualizer puts ``display_name``, a speech's
``description`` and other texts into its page as HTML (``innerHTML``, and double-quoted attributes such as
``title="…"``), elsewhere as plain text, so a model spec, a speech or an imported agent id holding markup would
run script in whoever opens the replay. ``<``, ``>`` and ``"`` become their full-width look-alikes (``＜``, ``＞``,
``＂``), which show the same as HTML and as text, and start no tag and end no attribute (HTML entities would show
as ``&lt;`` where it renders text). ``&`` and ``'`` stay: an entity in a text is text, and no attribute is
single-quoted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from toolkit.core.files import inside
from toolkit.core.secrets import Redactor
from toolkit.export.common import OMITTED, by_key, conditions_by_run, parse_json, records, tokens, write_json
from toolkit.export.study import parts
from toolkit.werewolf.engine.events import MODERATOR, EventKind
from toolkit.werewolf.engine.roles import event_kinds

TEAM = {"village": "Villagers", "werewolves": "Werewolves"}
DETAILED = {"night": "NIGHT_AWAIT_ACTIONS", "dawn": "DAY_START", "day_speech": "DAY_CHAT_AWAIT",
            "speech": "DAY_CHAT_AWAIT", "day_vote": "DAY_VOTING_AWAIT", "day_revote": "DAY_VOTING_AWAIT",
            "last_words": "DAY_CHAT_AWAIT", "over": "GAME_OVER"}


def kaggle_day(day: int, phase: str) -> int:
    """Kaggle's day number of a toolkit (day, phase): its night 0 is this toolkit's night 1."""
    return day - 1 if phase == "night" else day


def kaggle_phase(phase: str) -> str:
    return "Game Over" if phase == "over" else "Night" if phase == "night" else "Day"


def _targeted(e: dict, roles: dict, sides: dict, text: str) -> dict[str, Any]:
    return {"actor_id": e["actor"], "target_id": e["target"], "reasoning": None, "perceived_threat_level": "SAFE",
            "action": None}


def _exiled(e: dict, roles: dict, sides: dict, text: str) -> dict[str, Any]:
    target = e["target"]
    return {"elected_player_id": target, "elected_player_role_name": roles.get(target),
            "elected_player_team_name": TEAM.get(sides.get(target, ""))}


def _died(e: dict, roles: dict, sides: dict, text: str) -> dict[str, Any]:
    target = e["target"]
    return {"eliminated_player_id": target, "eliminated_player_role_name": roles.get(target),
            "eliminated_player_team_name": TEAM.get(sides.get(target, ""))}


def _chat(e: dict, roles: dict, sides: dict, text: str) -> dict[str, Any]:
    return {"actor_id": e["actor"], "reasoning": None, "perceived_threat_level": "SAFE", "action": None,
            "message": text, "mentioned_player_ids": [s for s in roles if text != OMITTED and s in (text or "")]}


# Kaggle's data entry type (kaggle-environments' envs/werewolf/game/records.py) -> its fields from a toolkit row.
# Which kind of row is which entry is declared with the kind (toolkit.werewolf.engine.events, Role.events).
DATA = {"DoctorHealActionDataEntry": _targeted, "SeerInspectActionDataEntry": _targeted,
        "WerewolfNightVoteDataEntry": _targeted, "DayExileVoteDataEntry": _targeted,
        "DayExileElectedDataEntry": _exiled, "WerewolfNightEliminationDataEntry": _died,
        "WerewolfNightEliminationElectedDataEntry": lambda e, roles, sides, text: {
            "elected_target_player_id": e["target"]},
        "ChatDataEntry": _chat,
        MODERATOR[0]: lambda e, roles, sides, text: {"kind": e["kind"], "actor_id": e["actor"],
                                                     "target_id": e["target"]}}
# Kaggle's night actions have no pass: a pass (the Doctor or the Guard protecting nobody) is a moderator entry.
# A day ballot without a target stays a ballot: Kaggle's abstention, which its GameResult counts.
NEEDS_TARGET = {"DoctorHealActionDataEntry", "SeerInspectActionDataEntry", "WerewolfNightVoteDataEntry"}


def moderator_observation(events: list[dict], roles: dict[str, str], sides: dict[str, str],
                          content: bool = True) -> list[list[dict]]:
    """The game's events as Kaggle's moderator log: one list per (day, phase) block, in order."""
    from json import dumps

    steps: list[list[dict]] = []
    last = None
    kinds = event_kinds()
    for e in sorted(events, key=lambda e: e["seq"]):
        day, phase = int(e["day"]), str(e["phase"])
        block = (day, phase)
        if block != last:
            steps.append([])
            last = block
        data_type, name = kinds.get(e["kind"], EventKind(e["kind"])).kaggle
        if data_type in NEEDS_TARGET and not e["target"]:
            data_type, name = MODERATOR
        public = e["visibility"] == "public"
        visible = sorted(roles) if public else [s for s in roles if s == e["visibility"] or
                                                (e["visibility"] == "werewolves" and roles[s] == "Werewolf")]
        event = {"day": kaggle_day(day, phase), "phase": kaggle_phase(phase), "detailed_phase": DETAILED.get(
                 phase, "DAY_START"), "event_name": name, "description": e["text"] if content else OMITTED,
                 "public": public, "visible_to": visible,
                 "data": DATA[data_type](e, roles, sides, e["text"] if content else OMITTED),
                 "source": "MODERATOR", "created_at": "", "visible_in_ui": True}
        steps[-1].append({"data_type": data_type, "json_str": dumps(inert(event), ensure_ascii=False)})
    return steps


def game_end(game: dict, players: list[dict], costs: dict[str, dict] | None) -> dict[str, Any]:
    winner = game["winner"]
    winners = [p["seat"] for p in players if p["side"] == winner]
    survivors = {p["seat"]: p["role"] for p in players if p["survived"]}
    end = {
        "winner_team": TEAM[winner], "winner_ids": winners,
        "loser_ids": [p["seat"] for p in players if p["seat"] not in winners],
        "scores": {p["seat"]: int(p["seat"] in winners) for p in players},
        "reason": game["win_reason"] or "", "last_day": int(game["days"]), "last_phase": "Game Over",
        "survivors_until_last_round_and_role": survivors,
        "all_players_and_role": {p["seat"]: p["role"] for p in players},
        "elimination_info": [{"player_id": p["seat"], "eliminated_during_day": p["death_day"],
                              "eliminated_during_phase": p["death_cause"]} for p in players],
        "all_players": [{"id": p["seat"], "alive": bool(p["survived"]),
                         "agent": {"id": p["seat"], "agent_id": p["spec"], "display_name": p["spec"],
                                   "role": p["role"]},
                         "role": {"name": p["role"], "team": TEAM[p["side"]]}} for p in players],
        "terminated_with_agent_error": False,
    }
    if costs:
        end["cost_summary"] = {"cost_per_agent": [
            {"agent_config": {"id": seat}, "costs": c} for seat, c in costs.items()]}
    return end


def seat_costs(calls: list[dict]) -> dict[str, dict]:
    """Cost and tokens per seat of one game's calls (Kaggle's ``AgentCost``; an unknown cost counts 0)."""
    per: dict[str, dict] = {}
    for c in calls:
        if not c.get("seat"):
            continue
        s = per.setdefault(c["seat"], {"total_cost": 0.0, "prompt_tokens": 0, "completion_tokens": 0})
        s["total_cost"] += float(c.get("cost_usd") or 0.0)
        s["prompt_tokens"] += int(c.get("prompt_tokens") or 0)
        s["completion_tokens"] += int(c.get("completion_tokens") or 0)
    return per


INERT = str.maketrans({"<": "\uff1c", ">": "\uff1e", '"': "\uff02"})


def inert(obj: Any) -> Any:
    """Every string inside ``obj`` (nested dicts and lists, keys too) with ``<``, ``>`` and ``"`` as their
    full-width look-alikes: shown as it reads by Kaggle's visualizer, as HTML or as text, and never markup."""
    if isinstance(obj, str):
        return obj.translate(INERT)
    if isinstance(obj, dict):
        return {inert(k): inert(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [inert(v) for v in obj]
    return obj


def game_replay(game: dict, players: list[dict], events: list[dict], calls: list[dict] = (),
                content: bool = True, conditions: dict[str, Any] | None = None) -> dict[str, Any]:
    """One decided game as a Kaggle werewolf replay (a dict ready for ``json.dump``), from its rows; every text
    made inert (``inert``; the moderator log's ``json_str`` entries inside)."""
    seats = sorted(players, key=seat_order)
    roles = {p["seat"]: p["role"] for p in seats}
    sides = {p["seat"]: p["side"] for p in seats}
    observation = moderator_observation(events, roles, sides, content)
    end = game_end(game, seats, seat_costs(calls))
    config = parse_json(game.get("config"), {}) or {}
    n = len(observation)
    steps = [[{"action": {}, "reward": None if i < n - 1 else end["scores"][p["seat"]],
               "status": "ACTIVE" if i < n - 1 else "DONE", "observation": {}, "info": {}} for p in seats]
             for i in range(n)]
    replay = inert({
        "id": game["game_id"], "name": "werewolf", "title": "Werewolf",
        "description": f"toolkit game {game['game_id']} (run {game.get('run_id')}, preset {game.get('preset')})",
        "version": "1.0.0", "schema_version": 1,
        "configuration": {"seed": game.get("seed"), "randomize_roles": False, "randomize_ids": False,
                          "preset": (config.get("preset") or {}).get("name") if isinstance(config, dict) else None,
                          "agents": [{"id": p["seat"], "role": p["role"], "agent_id": p["spec"],
                                      "display_name": p["spec"], "thumbnail": ""} for p in seats]},
        "info": {"GAME_END": end, "MODERATOR_OBSERVATION": [],
                 "Agents": [{"name": p["spec"], "index": i} for i, p in enumerate(seats)],
                 "TOOLKIT": {"run_id": game.get("run_id"), "conditions": conditions or {}, **tokens(list(calls))}},
        "steps": steps, "rewards": [end["scores"][p["seat"]] for p in seats],
        "statuses": ["DONE"] * len(seats),
    })
    replay["info"]["MODERATOR_OBSERVATION"] = observation  # escaped inside each entry's json_str
    return replay


def seat_order(player: dict) -> tuple[int, str]:
    """Player2 before Player10."""
    seat = str(player["seat"])
    digits = seat[len(seat.rstrip("0123456789")):]
    return (int(digits) if digits else 0, seat)


def decided(games: pd.DataFrame) -> pd.DataFrame:
    return games[games["winner"].isin(list(TEAM))]


def write(results, out: Path, content: bool = True, game_ids: list[str] | None = None) -> list[Path]:
    """One ``<game_id>.json`` per decided game of ``results`` (a ``Results``, or a ``Study`` read a batch of games
    at a time) under ``out``; the paths written."""
    mask = Redactor()
    cells = conditions_by_run(results, mask)
    written = []
    for part in parts(results, sessions=False):
        written += _write(part, out, content, game_ids, mask, cells)
        del part  # before the next batch is read: one batch in memory, not two
    return written


def _write(results, out: Path, content: bool, game_ids: list[str] | None, mask: Redactor, cells: dict) -> list[Path]:
    games = decided(results.games)
    if game_ids is not None:
        games = games[games["game_id"].isin(game_ids)]
    ids = set(games["game_id"])
    players, events, calls = (by_key(t[t["game_id"].isin(ids)], "game_id") for t in
                              (results.players, results.events, results.calls))
    written = []
    for game in records(games):
        gid = game["game_id"]
        replay = game_replay(game, players[gid], events.get(gid, []), calls.get(gid, []), content,
                             cells.get(str(game.get("run_id"))))
        written.append(write_json(inside(out, gid, ".json"), replay, mask))
    return written


def visualizer_page() -> Path:
    """Kaggle's werewolf visualizer, as its wheel ships it (one built HTML page)."""
    import importlib.util

    spec = importlib.util.find_spec("kaggle_environments")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("kaggle-environments is not installed (extra: interop)", name="kaggle_environments")
    return Path(list(spec.submodule_search_locations)[0]) / "envs/werewolf/visualizer/default/dist/index.html"


def write_html(paths: list[Path], out: Path) -> list[Path]:
    """Each replay injected into Kaggle's own visualizer page as it expects (``window.kaggle.environment``,
    set before its module runs): ``<game_id>.kaggle.html``, which opens from disk (its web fonts aside)."""
    page = visualizer_page().read_text(encoding="utf-8")
    head = page.index("<head>") + len("<head>")
    written = []
    for path in paths:
        replay = path.read_text(encoding="utf-8").strip().replace("</", "<\\/")
        script = f"<script>window.kaggle = {{environment: {replay}, step: 0, playing: false}};</script>"
        target = inside(out, path.stem, ".kaggle.html")
        target.write_text(page[:head] + script + page[head:], encoding="utf-8")
        written.append(target)
    return written
