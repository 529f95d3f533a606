"""Rule-based players: a real baseline opponent that reads the observation, never the prompt.

Seer checks unknown players and reveals a found wolf; Witch saves on night 1 (and later a revealed Seer)
and poisons a player a Seer called a werewolf; Guard protects a revealed Seer; an eliminated Hunter shoots
the player it suspects most; wolves never target each
other, follow their team's first proposal, go for a revealed Seer, rarely vote against a teammate (bus),
and sometimes fake a Seer claim; villagers vote on claims and accusations. All randomness comes from
the request's seed.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from typing import Any

from toolkit.core.registry import resolve
from toolkit.llm import Backend, Completion, Provider, Request
from toolkit.werewolf.engine.roles import REGISTRY

FAKE_CLAIM_RATE = 0.3
BUS_RATE = 0.05


class HeuristicBackend(Backend):
    model = "heuristic"
    free = True

    async def complete(self, request: Request) -> Completion:
        obs = request.observation or {}
        if obs.get("game") != "werewolf":
            raise ValueError("the heuristic backend plays werewolf only: it needs a werewolf observation")
        rng = random.Random(f"{request.sampling.seed}:{request.replay_key or ''}")
        return Completion(json.dumps(decide(obs, rng)), self.model)


# The `heuristic` spec: an entry point in pyproject.toml points here.
PROVIDER = Provider("heuristic", lambda arg, config: HeuristicBackend(), about="the rule-based werewolf players",
                    example="heuristic")


def decide(obs: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    action = obs["action"]
    if action == "speak":
        return {"speech": speak(obs, rng)}
    if action == "bid":
        return {"bid": bid(obs, rng)}
    if action == "reflect":
        guesses = beliefs(obs)
        top = max((s for s in guesses if guesses[s][0] == "Werewolf"), key=lambda s: guesses[s][1], default=None)
        return {"summary": f"Day {obs['day']}: I am {obs['role']}. My main suspect is {top or 'unclear'}.",
                "beliefs": [{"about": s, "role": r, "confidence": c} for s, (r, c) in guesses.items()]}
    choices = list(obs["choices"])
    play = _vote if action == "vote" else role_play(obs.get("role"), action)
    return {"target": play(obs, choices, rng)}


def role_play(role_name: str | None, action: str) -> Any:
    """The play of a decision: the one its role declares (the asked seat's role's, else that of a role whose
    decision it is, the wolves' hunt: ``Role.plays``, else its ``heuristic``), else this player's own of a shipped
    decision (``PLAYS``)."""
    owner = REGISTRY.get(role_name) if action in getattr(REGISTRY.get(role_name), "actions", ()) else \
        next((r for r in REGISTRY.values() if action in r.actions), None)
    if owner is not None and action in owner.plays:
        return resolve(owner.plays[action])
    if owner is not None and owner.heuristic is not None:
        return lambda obs, choices, rng: owner.heuristic(action, obs, choices, rng)
    if action in PLAYS:
        return PLAYS[action]
    raise ValueError(f"the heuristic player has no play for {action!r} (nor does a registered role)")


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


# ------------------------------------------------------------------ beliefs
def votes_cast(obs: dict[str, Any]) -> list[tuple[str, str]]:
    """Every (voter, target) of the game record in the observation, condensed days included."""
    record = obs.get("record") or {}
    out = [(v, t) for d in record.get("days", []) for r in d["rounds"] for v, t in r["votes"]]
    condensed = record.get("condensed") or {}
    out += [(v, t) for v, t, n in condensed.get("votes", []) for _ in range(n)]
    return out


def wolf_scores(obs: dict[str, Any]) -> Counter[str]:
    """Evidence that a seat is a werewolf, from claims (as ``suspicion`` weighs them) and votes: voting
    against a player this seat knows or trusts to be good counts against the voter, voting against a
    known werewolf counts for them."""
    score: Counter[str] = Counter()
    claims = seer_claims(obs)
    trusted = trusted_seer(obs)
    me, wolf = obs["seat"], obs["role"] == "Werewolf"
    for claimant, accused in claims.items():
        for target in accused:
            score[target] += 4 if claimant == trusted else 1
            if target == me and not wolf:
                score[claimant] += 6  # they lied about me
        if trusted and claimant != trusted and claimant in claims.get(trusted, []):
            score[claimant] += 2  # counter-claimed after being accused
    for speaker, kind, value in obs["claims"]:
        if kind == "clear" and speaker == trusted:
            score[value] -= 3
        elif kind == "suspect":
            score[value] += 0.5
    checks = obs.get("checks", {})
    good = known_good(obs) | ({trusted} if trusted else set())
    record = obs.get("record") or {}
    # killed at night: almost always by the werewolves, who never attack their own
    night_victims = {s for d in record.get("days", []) for s in d["night_deaths"]}
    night_victims |= {s for _, s in (record.get("condensed") or {}).get("deaths", [])}
    for voter, target in votes_cast(obs):
        if checks.get(target) == "werewolf":
            score[voter] -= 1
        elif target == trusted and voter != target:
            score[voter] += 2  # voting out the seer the village trusts is what the wolves want
        elif (target in good or target in night_victims) and voter != target:
            score[voter] += 1
    return score


def beliefs(obs: dict[str, Any]) -> dict[str, tuple[str, float]]:
    """For every other living seat, a guessed role and a confidence in [0, 1], from what this seat knows
    (own role, teammates, checks, the witch's victim) and its claim/vote bookkeeping. Roles are those of the
    game (``obs['roles_in_game']``)."""
    counts: dict[str, int] = dict(obs.get("roles_in_game") or {"Werewolf": 2, "Villager": 2, "Guard": 1,
                                                                 "Witch": 1, "Seer": 1})
    me, role = obs["seat"], obs["role"]
    others = [s for s in obs["alive"] if s != me]
    checks = obs.get("checks", {})
    wolves_known = {me} if role == "Werewolf" else set()
    wolves_known |= set(obs.get("teammates", [])) | {p for p, r in checks.items() if r == "werewolf"}
    good_known = (set(others) - wolves_known) if role == "Werewolf" else {p for p, r in checks.items() if r == "good"}
    if obs.get("victim"):
        good_known.add(obs["victim"])  # the werewolves never attack one of their own
    unknown = [s for s in others if s not in wolves_known and s not in good_known]
    wolves_left = max(0, counts.get("Werewolf", 0) - len(wolves_known & set(obs["alive"])) - len(
        [s for s in obs.get("dead", []) if s in wolves_known]))
    # P(werewolf) over the unknown seats: weights from the evidence, scaled so they sum to the wolves left;
    # the most suspected ``wolves_left`` seats are guessed Werewolf, the rest a village role
    score = wolf_scores(obs)
    weight = {s: math.exp(max(-20.0, min(20.0, 0.6 * score[s]))) for s in unknown}
    total = sum(weight.values())
    p = {s: min(0.99, wolves_left * weight[s] / total) for s in unknown} if total else {}
    ranked = sorted(unknown, key=lambda s: (-p[s], s))
    wolf_guess = set(ranked[:wolves_left])
    claimed: dict[str, str] = {}
    for speaker, kind, value in obs["claims"]:
        if kind == "role":
            claimed[speaker] = value  # the latest claim counts
    contested = Counter(claimed.values())
    village_roles = {r: n for r, n in counts.items() if r != "Werewolf" and n > 0}
    out: dict[str, tuple[str, float]] = {}
    for seat in others:
        if seat in wolves_known:
            out[seat] = ("Werewolf", 1.0)
            continue
        p_wolf = p.get(seat, 0.0)
        if seat in wolf_guess:
            out[seat] = ("Werewolf", round(p_wolf, 3))
            continue
        guess = claimed.get(seat)
        if guess in village_roles and guess != role and contested[guess] <= village_roles[guess]:
            share = 0.8  # an uncontested claim of a role this seat does not hold
        else:
            guess = "Villager" if "Villager" in village_roles else max(village_roles, key=village_roles.get)
            share = village_roles.get(guess, 0) / max(1, sum(village_roles.values()) - (role in village_roles))
        out[seat] = (guess, round((1 - p_wolf) * min(1.0, share), 3))
    return out


# ------------------------------------------------------------------ night
def protect(obs: dict[str, Any], choices: list[str], rng: random.Random) -> str | None:
    seer = trusted_seer(obs)
    if seer in choices:
        return seer
    return obs["seat"] if obs["seat"] in choices and rng.random() < 0.5 else rng.choice(choices)


def hunt(obs: dict[str, Any], choices: list[str], rng: random.Random) -> str:
    proposals = obs.get("proposals") or []
    if proposals and proposals[0][1] in choices and rng.random() < 0.9:
        return proposals[0][1]  # follow the team
    claimed = [p for p in seer_claims(obs) if p in choices]
    if claimed:
        return claimed[0]
    return rng.choice(choices)


def shoot(obs: dict[str, Any], choices: list[str], rng: random.Random) -> str:
    """The Hunter's shot: the seat this player suspects most (``suspicion``), among the living."""
    return suspicion(obs, rng, choices) or rng.choice(choices)


def verify(obs: dict[str, Any], choices: list[str], rng: random.Random) -> str:
    unknown = [p for p in choices if p not in obs.get("checks", {})]
    suspects = [v for s, k, v in obs["claims"] if k in ("accuse", "suspect") and v in unknown]
    return rng.choice(suspects or unknown or choices)


def save(obs: dict[str, Any], choices: list[str], rng: random.Random) -> str | None:
    victim = obs.get("victim")
    if obs["day"] == 1 or victim == trusted_seer(obs):
        return victim
    return None


def poison(obs: dict[str, Any], choices: list[str], rng: random.Random) -> str | None:
    seer = trusted_seer(obs)
    if seer is not None:
        for target in seer_claims(obs)[seer]:
            if target in choices:
                return target
    return None


# ------------------------------------------------------------------ day
def _vote(obs: dict[str, Any], choices: list[str], rng: random.Random) -> str:
    choices = [c for c in choices if c != obs["seat"]] or choices  # never itself (self_vote), never abstains
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


# This player's play of each shipped decision (``werewolf_names.TARGETED_ACTIONS``; the vote is every seat's), each
# a function named after its decision; a role's new decision brings its own (``Role.plays``).
PLAYS = {play.__name__: play for play in (hunt, protect, verify, save, poison, shoot)}


def bid(obs: dict[str, Any], rng: random.Random) -> int:
    """A bidding discussion's urgency (0-4): a Seer with a living wolf found must speak (4), a seat accused
    today or named in the last speech needs to answer (3), a seat that has not spoken today has something to
    say (1-2); one that has spoken listens more (0-1)."""
    seat = obs["seat"]
    if obs["role"] == "Seer" and any(r == "werewolf" and p in obs["alive"] for p, r in obs.get("checks", {}).items()):
        return 4
    today = [m for m in obs["speeches"] if m["day"] == obs["day"]]
    if seat in obs.get("bidding", {}).get("named", []) or any(k == "accuse" and v == seat for _, k, v in obs["claims"]):
        return 3
    spoken = sum(m["actor"] == seat for m in today)
    return rng.randint(1, 2) if not spoken else rng.randint(0, 1)


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
