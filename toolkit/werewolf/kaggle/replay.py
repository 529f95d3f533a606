"""A Kaggle werewolf replay (its ``env.toJSON()``) read as this engine's terms: the preset its configuration
means, the seats' roles, every decision in order, the rules' random draws and the outcome.

Seats: the i-th id of Kaggle's roster is ``Player{i+1}``. Days: Kaggle's night d precedes its day d + 1, so its
night d is this engine's night of day d + 1 (night N leads into day N here). Decisions come from the moderator's
log (``info.MODERATOR_OBSERVATION``): Doctor heal → protect, Seer inspect → verify, wolf night vote → hunt,
chat → speak, day exile vote → vote. No kaggle-environments import: a replay file is plain JSON.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkit.werewolf.engine import discussions, votes
from toolkit.werewolf.engine.events import MODERATOR
from toolkit.werewolf.engine.preset import Preset
from toolkit.werewolf.engine.roles import event_kinds

ABSTAIN = "-1"  # Kaggle's abstain vote
BIDDERS = {"SimpleBiddingProtocol": "name", "UrgencyBiddingProtocol": "urgency"}
KAGGLE_SIDES = {"Villagers": "village", "Werewolves": "werewolves"}


class Unsupported(ValueError):
    """A replay that uses a Kaggle rule this engine does not play (named in the message)."""


@dataclass(frozen=True)
class Decision:
    day: int  # this engine's day
    action: str  # protect, verify, hunt, speak, vote
    seat: str
    target: str | None = None
    text: str = ""
    reasoning: str = ""
    bid: int | None = None


@dataclass
class KaggleGame:
    preset: Preset
    ids: list[str]  # Kaggle's player ids in roster order: ids[i] is Player{i+1}
    roles: dict[str, str]  # seat → role
    decisions: list[Decision]
    draws: dict[str, str]  # the rules' draws as Game(draws=...) takes them
    eliminations: dict[str, tuple[int, str]]  # seat → (day, "night" | "day")
    winner: str | None  # village | werewolves; None: the game did not finish
    final_day: int | None
    config: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)  # the moderator's log, flattened, as parsed JSON


def load(path: str | Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def moderator_log(replay: dict[str, Any]) -> list[dict[str, Any]]:
    """Every moderator event of the replay in order, each with its ``data_type``."""
    out = []
    for step in replay.get("info", {}).get("MODERATOR_OBSERVATION") or []:
        for entry in step:
            event = json.loads(entry["json_str"]) if "json_str" in entry else dict(entry)
            event["data_type"] = entry.get("data_type")
            out.append(event)
    return out


def kaggle_names(registry) -> dict[str, str]:
    """What of Kaggle's this engine plays among a registry's declarations (discussion protocols, day votes, vote
    tie rules): Kaggle's name → the registered one's."""
    return {d.kaggle: d.name for d in registry.values() if d.kaggle}


def _protocol(config: dict[str, Any], key: str, default: str) -> tuple[str, dict[str, Any]]:
    spec = config.get(key) or {}
    return spec.get("name") or default, dict(spec.get("params") or {})


def preset_from_config(config: dict[str, Any], roles: dict[str, str], name: str = "kaggle") -> Preset:
    """The preset a Kaggle configuration plays (Kaggle's class defaults where a parameter is not given)."""
    discussion, dparams = _protocol(config, "discussion_protocol", "RoundRobinDiscussion")
    plays = kaggle_names(discussions.REGISTRY)
    if discussion not in plays:
        raise Unsupported(f"discussion protocol {discussion} (this engine plays {', '.join(plays)})")
    parallel = discussion == "ParallelDiscussion"
    bidder = (dparams.get("bidding") or {}).get("name", "SimpleBiddingProtocol")
    if bidder not in BIDDERS:
        raise Unsupported(f"bidding protocol {bidder}")
    day_vote, vparams = _protocol(config, "day_voting_protocol", "SimultaneousMajority")
    night_vote, nparams = _protocol(config, "werewolf_night_vote_protocol", "SimultaneousMajority")
    day_votes, day_ties = kaggle_names(votes.REGISTRY), kaggle_names(votes.TIES)
    for proto in (day_vote, night_vote):
        if proto not in day_votes:  # the wolves' night vote plays the same two (the Werewolf's wolf_vote)
            raise Unsupported(f"voting protocol {proto}")
    if vparams.get("tie_break", "random") not in day_ties:
        raise Unsupported(f"day vote tie_break {vparams.get('tie_break')} (this engine plays {', '.join(day_ties)})")
    ties = {"random": "random", "no_elected": "none"}  # the wolves' split vote (the Werewolf's wolf_tie)
    agents = config.get("agents") or []
    params = {a["role"]: a.get("role_params") or {} for a in agents}
    doctor, seer = params.get("Doctor", {}), params.get("Seer", {})
    if seer.get("reveal_level", "role") not in ("role", "team"):
        raise Unsupported(f"Seer reveal_level {seer.get('reveal_level')}")
    counts = Counter(roles.values())
    return Preset(
        name=name, roles={r: counts[r] for r in ("Werewolf", "Villager", "Seer", "Doctor") if counts[r]},
        doctor_self_save=bool(doctor.get("allow_self_save", False)),
        doctor_consecutive_saves=bool(doctor.get("allow_consecutive_saves", True)),
        seer_learns="side" if seer.get("reveal_level") == "team" else "role",
        night_reveal=config.get("night_elimination_reveal_level", "role"),
        exile_reveal=config.get("day_exile_reveal_level", "role"),
        wolf_tie=ties[nparams.get("tie_break", "random")],
        wolf_vote="sequential" if night_vote == "SequentialVoting" else "simultaneous",
        wolf_order=nparams.get("first_to_vote", "rotate") if night_vote == "SequentialVoting" else "fixed",
        discussion=plays[discussion],
        speech_order=dparams.get("first_to_speak", "rotate") if discussion == "RoundRobinDiscussion" else "fixed",
        # Kaggle's defaults (its protocol registry's): 3 ticks, 1 round-robin round, 2 bidding rounds, 8 turns
        speech_rounds=int(dparams.get("ticks", 3)) if parallel else int(dparams.get(
            "max_rounds", 2 if discussion == "RoundByRoundBiddingDiscussion" else 1)),
        speech_turns=int(dparams.get("max_turns", 8)),
        bid_result="public" if dparams.get("bid_result_public", True) else "private",
        bid_tie=BIDDERS[bidder] if discussion == "TurnByTurnBiddingDiscussion" else "name",
        day_vote=day_votes[day_vote],
        vote_order=vparams.get("first_to_vote", "rotate") if day_vote == "SequentialVoting" else "fixed",
        vote_tie=day_ties[vparams.get("tie_break", "random")],
        vote_abstain=True, self_vote=True,  # Kaggle: a day vote may be -1 (abstain); its targets are all the living
        last_words=False, win_rule="parity", max_days=50)  # Kaggle has no day limit; 50 as the kaggle presets


def entries() -> dict[str, str]:
    """Kaggle's log entry of a seat's decision → the decision, as each kind of events row declares its entry
    (``EventKind.kaggle``; a Guard's protection, written as a Doctor's heal, reads back as ``protect`` too).
    A bid's entry is read apart (it holds an amount, not a target)."""
    return {k.kaggle[0]: k.decision for k in event_kinds().values()
            if k.decision and k.kaggle != MODERATOR and k.decision != "bid"}


# Over 60 lines on purpose: one pass over the moderator log in its order, each entry kind a few lines; split,
# the pieces would pass the seat map, the roles and the day's state between them.
def read(replay: dict[str, Any], name: str = "kaggle") -> KaggleGame:
    """A replay as this engine's terms (``Unsupported`` for a rule it does not play)."""
    log = moderator_log(replay)
    start = next(e for e in log if e["data_type"] == "GameStartDataEntry")
    ids = list(start["data"]["player_ids"])
    seat = {pid: f"Player{i + 1}" for i, pid in enumerate(ids)}
    roles = {seat[e["data"]["player_id"]]: e["data"]["role"] for e in log if e["data_type"] == "GameStartRoleDataEntry"}
    config = replay.get("configuration") or {}
    preset = preset_from_config(config, roles, name)

    def day_of(e: dict[str, Any]) -> int:  # Kaggle's night d is this engine's night of day d + 1
        return e["day"] + 1 if e["phase"] == "Night" else e["day"]

    bidding = "bid" in discussions.get(preset.discussion).decisions
    if bidding and [seat[i] for i in sorted(ids)] != sorted(seat.values()):
        raise Unsupported("Kaggle breaks bid ties by player id (A-Z); these ids sort otherwise than the seats here")
    # a speech names Kaggle's ids: as this engine's seats (whole words, longest first, as Kaggle finds mentions)
    names = re.compile(r"\b(" + "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True)) + r")\b")
    decisions: list[Decision] = []
    draws: dict[str, str] = {}
    unspoken = None  # TurnByTurnBidding: a bid's winner not yet heard
    decided = entries()
    for e in log:
        kind, data = e["data_type"], e.get("data") or {}
        if kind == "BidResultDataEntry" or (kind in ("BidDataEntry", "DayExileVoteDataEntry") and unspoken):
            if unspoken:
                raise Unsupported(f"day {day_of(e)}: {unspoken} won the bid and was never asked to speak "
                                  "(kaggle-environments 1.33.2's TurnByTurnBiddingDiscussion, docs/werewolf.md)")
            unspoken = seat[data["winner_player_ids"][0]] if preset.discussion == "bid_turn" else None
        if kind == "ChatDataEntry":
            unspoken = None
        if kind == "BidDataEntry":
            decisions.append(Decision(day_of(e), "bid", seat[data["actor_id"]], bid=int(data["bid_amount"]),
                                      reasoning=data.get("reasoning") or ""))
            continue
        if e["event_name"] == "error" and "submitted an invalid bid amount" in (e.get("description") or ""):
            decisions.append(Decision(day_of(e), "bid", seat[e["visible_to"][0]], bid=0))  # Urgency: counted 0
            continue
        if kind in decided:
            action = decided[kind]
            target = data.get("target_id")
            if action == "vote" and e["event_name"] == "error":  # an invalid day target: Kaggle counts an abstention
                target = ABSTAIN
            if target == ABSTAIN and action != "vote":
                raise Unsupported(f"{seat[data['actor_id']]} abstains ({action}, day {day_of(e)}): this engine's "
                                  "night actions cannot abstain")
            text = names.sub(lambda m: seat[m.group(1)], data.get("message") or "")
            decisions.append(Decision(day_of(e), action, seat[data["actor_id"]], seat.get(target), text,
                                      data.get("reasoning") or ""))
        elif kind == "VoteOrderDataEntry":
            draws[f"{'vote' if e['phase'] == 'Day' else 'wolf'}_start:{day_of(e)}"] = \
                seat[data["vote_order_of_player_ids"][0]]
        elif kind == "DiscussionOrderDataEntry" and preset.discussion == "round_robin":
            draws[f"speech_start:{day_of(e)}"] = seat[data["chat_order_of_player_ids"][0]]
        elif kind == "WerewolfNightEliminationElectedDataEntry" and data.get("elected_target_player_id"):
            draws[f"wolf_tie:{day_of(e)}"] = seat[data["elected_target_player_id"]]
        elif kind == "DayExileElectedDataEntry":
            draws[f"vote_tie:{day_of(e)}"] = seat[data["elected_player_id"]]
        elif e["event_name"] == "vote_action" and kind == "NoneType":  # a NoOp counted as an abstention
            if e["phase"] != "Day":
                raise Unsupported(f"a night abstention: {e.get('description', '')[:80]}")
            decisions.append(Decision(day_of(e), "vote", seat[e["source"]]))
        elif e["event_name"] == "error" and e["phase"] == "Day" and "Not a VoteAction" in (e.get("description") or ""):
            # SimultaneousMajority: an answer that is not a vote, counted as an abstention
            decisions.append(Decision(day_of(e), "vote", seat[e["description"].split('"')[1]]))
    end = (replay.get("info") or {}).get("GAME_END") or {}
    eliminations: dict[str, tuple[int, str]] = {}
    for row in end.get("elimination_info") or []:
        if row["eliminated_during_phase"]:
            d, phase = row["eliminated_during_day"], row["eliminated_during_phase"]
            eliminations[seat[row["player_id"]]] = (d + 1 if phase == "Night" else d, phase.lower())
    winner = KAGGLE_SIDES.get(end.get("winner_team")) if end else None
    return KaggleGame(preset, ids, roles, decisions, draws, eliminations, winner,
                      end.get("last_day") if end else None, config, log)


def to_scripted(kg: KaggleGame) -> dict[str, Any]:
    """The game as a ``scripted:`` file (roles, the rules' draws, every decision matched by day, action and seat,
    in order): ``python -m toolkit play --preset PRESET.yaml --model scripted:FILE`` plays it again here."""
    decisions = []
    for d in kg.decisions:
        row: dict[str, Any] = {"day": d.day, "action": d.action, "seat": d.seat}
        if d.action == "speak":
            row["speech"] = d.text
        elif d.action == "bid":
            row["bid"] = d.bid
        else:
            row["target"] = d.target
        if d.reasoning:
            row["thought"] = d.reasoning[:300]  # the seats' thought field holds 300 characters
        decisions.append(row)
    return {"roles": dict(kg.roles), "draws": dict(kg.draws), "default": "error", "decisions": decisions}
