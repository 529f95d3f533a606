"""Rule-based players: a real baseline opponent that reads the observation, never the prompt.

Seer checks unknown players and reveals a found wolf; Witch saves on night 1 (and later a revealed Seer)
and poisons a player a Seer called a werewolf; Guard protects a revealed Seer; wolves never target each
other, follow their team's first proposal, go for a revealed Seer, rarely vote against a teammate (bus),
and sometimes fake a Seer claim; villagers vote on claims and accusations. All randomness comes from
the request's seed.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

from toolkit.llm import Completion, Request, register

FAKE_CLAIM_RATE = 0.3
BUS_RATE = 0.05


class HeuristicBackend:
    model = "heuristic"
    free = True

    async def complete(self, request: Request) -> Completion:
        obs = request.observation or {}
        if obs.get("game") != "werewolf":
            raise ValueError("the heuristic backend plays werewolf only: it needs a werewolf observation")
        rng = random.Random(f"{request.sampling.seed}:{request.replay_key or ''}")
        return Completion(json.dumps(decide(obs, rng)), self.model)


@register("heuristic")
def _heuristic(arg: str, config: Any) -> HeuristicBackend:
    return HeuristicBackend()


def decide(obs: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    action = obs["action"]
    if action == "speak":
        return {"speech": speak(obs, rng)}
    if action == "reflect":
        top = suspicion(obs, rng)
        return {"reflection": f"Day {obs['day']}: I am {obs['role']}. My main suspect is {top or 'unclear'}."}
    choices = list(obs["choices"])
    return {"target": globals()[f"_{action}"](obs, choices, rng)}


# ------------------------------------------------------------------ reading the table
def seer_claims(obs: dict[str, Any]) -> dict[str, list[str]]:
    """Seer claimant → the players they called werewolves (in order)."""
    claimants: dict[str, list[str]] = {}
    for speaker, kind, value in obs["claims"]:
        if kind == "role" and value == "Seer":
            claimants.setdefault(speaker, [])
    for speaker, kind, value in obs["claims"]:
        if kind == "accuse" and speaker in claimants:
            claimants[speaker].append(value)
    return claimants


def known_good(obs: dict[str, Any]) -> set[str]:
    good = {obs["seat"]}
    if obs["role"] == "Werewolf":
        good |= set(obs.get("teammates", []))
    good |= {p for p, r in obs.get("checks", {}).items() if r == "good"}
    return good


def trusted_seer(obs: dict[str, Any]) -> str | None:
    """The Seer claimant this seat believes: the first to claim, unless it accused this seat (a lie) or is
    known to be a wolf. A later claimant who was accused by an earlier one is the classic wolf counter-claim."""
    good = known_good(obs)
    for claimant, accused in seer_claims(obs).items():
        if obs["seat"] in accused and obs["role"] != "Werewolf":
            continue
        if obs.get("checks", {}).get(claimant) == "werewolf":
            continue
        if claimant == obs["seat"] and obs["role"] != "Seer":
            continue
        if any(a in good and a != obs["seat"] for a in accused) and obs["role"] != "Werewolf":
            continue
        return claimant
    return None


def suspicion(obs: dict[str, Any], rng: random.Random, pool: list[str] | None = None) -> str | None:
    """The most suspected living player by checks, trusted claims and accusations (known-good excluded)."""
    pool = [p for p in (pool or obs["alive"]) if p not in known_good(obs)]
    if not pool:
        return None
    for p, r in obs.get("checks", {}).items():
        if r == "werewolf" and p in pool:
            return p
    score: Counter[str] = Counter()
    claims = seer_claims(obs)
    trusted = trusted_seer(obs)
    for claimant, accused in claims.items():
        for target in accused:
            score[target] += 4 if claimant == trusted else 1
            if target == obs["seat"] and obs["role"] != "Werewolf":
                score[claimant] += 6  # they lied about me: they are a wolf
    for claimant in claims:
        if trusted and claimant != trusted and claimant in claims[trusted]:
            score[claimant] += 2  # counter-claimed after being accused
    if trusted:
        for speaker, kind, value in obs["claims"]:
            if kind == "clear" and speaker == trusted:
                score[value] -= 3
    for speaker, kind, value in obs["claims"]:
        if kind == "suspect":
            score[value] += 0.5
    scored = [p for p in pool if score[p] > 0]
    if scored:
        best = max(score[p] for p in scored)
        return rng.choice([p for p in scored if score[p] == best])
    return rng.choice(pool)


# ------------------------------------------------------------------ night
def _protect(obs: dict[str, Any], choices: list[str], rng: random.Random) -> str | None:
    seer = trusted_seer(obs)
    if seer in choices:
        return seer
    return obs["seat"] if obs["seat"] in choices and rng.random() < 0.5 else rng.choice(choices)


def _hunt(obs: dict[str, Any], choices: list[str], rng: random.Random) -> str:
    proposals = obs.get("proposals") or []
    if proposals and proposals[0][1] in choices and rng.random() < 0.9:
        return proposals[0][1]  # follow the team
    claimed = [p for p in seer_claims(obs) if p in choices]
    if claimed:
        return claimed[0]
    return rng.choice(choices)


def _verify(obs: dict[str, Any], choices: list[str], rng: random.Random) -> str:
    unknown = [p for p in choices if p not in obs.get("checks", {})]
    suspects = [v for s, k, v in obs["claims"] if k in ("accuse", "suspect") and v in unknown]
    return rng.choice(suspects or unknown or choices)


def _save(obs: dict[str, Any], choices: list[str], rng: random.Random) -> str | None:
    victim = obs.get("victim")
    if obs["day"] == 1 or victim == trusted_seer(obs):
        return victim
    return None


def _poison(obs: dict[str, Any], choices: list[str], rng: random.Random) -> str | None:
    seer = trusted_seer(obs)
    if seer is not None:
        for target in seer_claims(obs)[seer]:
            if target in choices:
                return target
    return None


# ------------------------------------------------------------------ day
def _vote(obs: dict[str, Any], choices: list[str], rng: random.Random) -> str:
    if obs["role"] == "Werewolf":
        mates = set(obs.get("teammates", []))
        accused = Counter(v for s, k, v in obs["claims"] if k == "accuse" and v in choices)
        doomed = [m for m in mates if m in choices and accused[m] >= 1]
        if doomed and rng.random() < BUS_RATE:
            return doomed[0]
        village = [p for p in choices if p not in mates]
        claimed = [p for p in seer_claims(obs) if p in village]
        return claimed[0] if claimed else (suspicion(obs, rng, village) or rng.choice(choices))
    return suspicion(obs, rng, choices) or rng.choice(choices)


def speak(obs: dict[str, Any], rng: random.Random) -> str:
    role, seat = obs["role"], obs["seat"]
    if obs["phase"] == "last_words":
        top = suspicion(obs, rng)
        return f"I was on the village side. Watch {top}." if top else "Good luck, everyone."
    if role == "Seer":
        wolves = [p for p, r in obs.get("checks", {}).items() if r == "werewolf" and p in obs["alive"]]
        if wolves:
            good = [p for p, r in obs["checks"].items() if r == "good" and p in obs["alive"]]
            extra = f" {good[0]} is good." if good else ""
            return f"I am the Seer. {wolves[0]} is a werewolf.{extra} Vote for {wolves[0]}."
    if role == "Werewolf":
        mates = set(obs.get("teammates", []))
        village = [p for p in obs["alive"] if p not in mates and p != seat]
        real = [p for p in seer_claims(obs) if p not in mates and p != seat]
        already_claimed = seat in seer_claims(obs)
        if village and (real or already_claimed or rng.random() < FAKE_CLAIM_RATE / max(1, 4 - obs["day"])):
            target = real[0] if real else rng.choice(village)
            return f"I am the Seer. {target} is a werewolf. Vote for {target}."
        if village:
            return f"I am a Villager. I suspect {rng.choice(village)}."
    if seer_claims(obs):
        top = suspicion(obs, rng, [p for p in obs["alive"] if p != seat])
        if top:
            return f"I am a Villager. I suspect {top}."
    return "I am a Villager. I have nothing certain yet; let us listen carefully."
