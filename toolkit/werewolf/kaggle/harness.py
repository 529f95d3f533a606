"""Kaggle werewolf games played by Kaggle's own engine and its ``random`` agent (needs ``kaggle-environments``,
installed with --no-deps, and the small packages of the ``kaggle`` extra). Seeded: Kaggle's ``seed`` only permutes
roles, so Python's global ``random`` (its tie-breaks, random first speakers and its random agent) is seeded too.

``fast=True`` changes two costs of Kaggle's runner in this process, not what it does (profiled: they were ~80 % of
a game's time): ``kaggle_environments.core.process_schema`` validates with a validator built once per schema
instead of re-checking the schema itself against the meta-schema on every call (``jsonschema.validate`` does),
and the deep copy of the whole state made for every agent at every step is skipped for agents that are not
ACTIVE (the runner never calls them). The same checks, the same replay (tests/werewolf/test_kaggle_differential.py
compares a game played both ways)."""

from __future__ import annotations

import random
from copy import deepcopy
from typing import Any

# The rule settings the differential test and script cycle through: Kaggle's default (kaggle7), the Game Arena's
# 8 seats (kaggle8), and two variants covering the other values of every option this engine plays (the three
# rounds of talk at 6 seats: a Kaggle game's cost grows with seats x speeches; 10 seats x 3 rounds was ~2.4 s).
CONFIGS: dict[str, dict[str, Any]] = {
    "default7": {"roles": ["Werewolf", "Werewolf", "Seer", "Doctor", "Villager", "Villager", "Villager"]},
    "arena8": {
        "agent": "abstaining",
        "roles": ["Werewolf", "Werewolf", "Doctor", "Seer", "Villager", "Villager", "Villager", "Villager"],
        "role_params": {"Doctor": {"allow_self_save": False, "allow_consecutive_saves": False}},
        "discussion_protocol": {"name": "RoundRobinDiscussion",
                                "params": {"max_rounds": 2, "first_to_speak": "rotate"}},
        "day_voting_protocol": {"name": "SequentialVoting", "params": {"first_to_vote": "rotate",
                                                                       "tie_break": "no_elected"}},
        "werewolf_night_vote_protocol": {"name": "SequentialVoting", "params": {"first_to_vote": "rotate",
                                                                                "tie_break": "no_elected"}}},
    "simultaneous6": {
        "agent": "abstaining",
        "roles": ["Werewolf", "Werewolf", "Seer", "Doctor", "Villager", "Villager"],
        "role_params": {"Doctor": {"allow_self_save": True}, "Seer": {"reveal_level": "team"}},
        "night_elimination_reveal_level": "team", "day_exile_reveal_level": "no_reveal",
        "discussion_protocol": {"name": "RoundRobinDiscussion",
                                "params": {"max_rounds": 3, "first_to_speak": "fixed"}},
        # no tie_break given: Kaggle's SimultaneousMajority refuses any on Python 3.11 (`str in EnumType` raises
        # TypeError in vote.py), so only its default (random) runs here; docs/werewolf.md names the bug
        "day_voting_protocol": {"name": "SimultaneousMajority", "params": {}},
        "werewolf_night_vote_protocol": {"name": "SimultaneousMajority", "params": {}}},
    "parallel7": {
        "roles": ["Werewolf", "Werewolf", "Seer", "Doctor", "Villager", "Villager", "Villager"],
        "discussion_protocol": {"name": "ParallelDiscussion", "params": {"ticks": 2}},
        "day_voting_protocol": {"name": "SequentialVoting", "params": {"first_to_vote": "fixed",
                                                                       "tie_break": "random"}}},
    "random10": {
        "agent": "abstaining",
        "roles": ["Werewolf", "Werewolf", "Werewolf", "Seer", "Doctor"] + ["Villager"] * 5,
        "role_params": {"Doctor": {"allow_self_save": True, "allow_consecutive_saves": False}},
        "night_elimination_reveal_level": "no_reveal", "day_exile_reveal_level": "team",
        "discussion_protocol": {"name": "RoundRobinDiscussion",
                                "params": {"max_rounds": 1, "first_to_speak": "random"}},
        "day_voting_protocol": {"name": "SequentialVoting", "params": {"first_to_vote": "fixed",
                                                                       "tie_break": "no_elected"}},
        "werewolf_night_vote_protocol": {"name": "SequentialVoting", "params": {"first_to_vote": "fixed",
                                                                                "tie_break": "random"}}},
    # the bidding discussions (played as their rules say: _fixed_bidding): turn by turn with Kaggle's urgency
    # tie-break and the bids kept private; turn by turn with its name tie-break, bids of 0 and abstentions; round
    # by round. Few turns and seats: a Kaggle game's cost grows with its steps (every bidding is one)
    "bidturn7": {
        "roles": ["Werewolf", "Werewolf", "Seer", "Doctor", "Villager", "Villager", "Villager"],
        "discussion_protocol": {"name": "TurnByTurnBiddingDiscussion", "params": {
            "max_turns": 4, "bid_result_public": False, "bidding": {"name": "UrgencyBiddingProtocol"}}}},
    "bidname6": {
        "agent": "abstaining",
        "roles": ["Werewolf", "Werewolf", "Seer", "Doctor", "Villager", "Villager"],
        "discussion_protocol": {"name": "TurnByTurnBiddingDiscussion", "params": {"max_turns": 3}},
        "day_voting_protocol": {"name": "SequentialVoting", "params": {"first_to_vote": "rotate",
                                                                       "tie_break": "no_elected"}}},
    "bidround6": {
        "agent": "abstaining",
        "roles": ["Werewolf", "Werewolf", "Seer", "Doctor", "Villager", "Villager"],
        "discussion_protocol": {"name": "RoundByRoundBiddingDiscussion", "params": {
            "max_rounds": 2, "bid_result_public": True, "bidding": {"name": "SimpleBiddingProtocol"}}}},
}


ABSTAIN_RATE, SELF_RATE, NOOP_RATE = 0.2, 0.1, 0.1  # the abstaining agent's day votes (the rest: random's)
ZERO_BID_RATE = 0.4  # and its bids of 0 (Kaggle's random agent bids 1-4)


def abstaining_agent(obs: Any) -> dict[str, Any]:
    """Kaggle's ``random`` agent, but a day vote is an abstention (``-1``) at ``ABSTAIN_RATE``, a vote for itself
    at ``SELF_RATE`` and no vote at all (a NoOp, counted as an abstention) at ``NOOP_RATE``: Kaggle's random agent
    never does any of these, which its rules allow. Its draws come from the same global ``random``."""
    from kaggle_environments.envs.werewolf.game.consts import DetailedPhase
    from kaggle_environments.envs.werewolf.game.records import get_raw_observation
    from kaggle_environments.envs.werewolf.werewolf import random_agent

    action = random_agent(obs)
    raw = get_raw_observation(obs)
    if action["action_type"] == "BidAction":
        if random.random() < ZERO_BID_RATE:
            action["kwargs"]["amount"] = 0
        return action
    if action["action_type"] != "VoteAction" or DetailedPhase(raw.detailed_phase) != DetailedPhase.DAY_VOTING_AWAIT:
        return action
    draw = random.random()
    if draw < ABSTAIN_RATE:
        action["kwargs"]["target_id"] = "-1"
    elif draw < ABSTAIN_RATE + SELF_RATE:
        action["kwargs"]["target_id"] = raw.player_id
    elif draw < ABSTAIN_RATE + SELF_RATE + NOOP_RATE:
        kwargs = action["kwargs"]
        return {"action_type": "NoOpAction", "kwargs": {k: kwargs[k] for k in ("day", "phase", "actor_id")}}
    return action


AGENTS = {"random": "random", "abstaining": abstaining_agent}


def configuration(name: str, seed: int) -> dict[str, Any]:
    """Kaggle's ``configuration`` for the named setting, roles shuffled by ``seed``."""
    spec = deepcopy(CONFIGS[name])
    spec.pop("agent", None)
    params = spec.pop("role_params", {})
    agents = [{"id": f"Player {i + 1}", "role": role, "agent_id": "random", "role_params": dict(params.get(role, {}))}
              for i, role in enumerate(spec.pop("roles"))]
    return {"seed": seed, "randomize_roles": True, "agents": agents, **spec}


def _fast_schemas() -> None:
    import jsonschema
    import kaggle_environments.core as core
    from kaggle_environments import utils

    if getattr(core.process_schema, "fast", False):
        return
    validators: dict[int, tuple[Any, Any]] = {}

    def process_schema(schema: Any, data: Any, use_default: bool = True) -> tuple[str | None, Any]:
        if use_default is True:
            data = utils.default_schema(schema, deepcopy(data))
        held = validators.get(id(schema))
        if held is None or held[0] is not schema:
            held = validators[id(schema)] = (schema, jsonschema.validators.validator_for(schema)(schema))
        error = jsonschema.exceptions.best_match(held[1].iter_errors(data))
        return (str(error) if error else None), data

    process_schema.fast = True  # type: ignore[attr-defined]
    core.process_schema = process_schema
    shared_state = core.Environment._Environment__get_shared_state  # type: ignore[attr-defined]

    def get_shared_state(env: Any, position: int) -> Any:
        # an agent that is not ACTIVE is never called (core.act_agent reads only its status): no deep copy of the
        # whole state for it
        state = env.state[position]
        return state if state.status != "ACTIVE" else shared_state(env, position)

    core.Environment._Environment__get_shared_state = get_shared_state  # type: ignore[attr-defined]


def _fixed_bidding() -> None:
    """Kaggle's two bidding discussions as their rules say (kaggle-environments 1.33.2 plays neither so): its
    moderator runs the phase after a bidding with no actions before anyone is asked, so in TurnByTurnBidding the
    bid's winner is never asked to speak (the protocol counts the turn as spoken; a day is ``max_turns`` biddings
    and no speech), and in RoundByRoundBidding every seat is given a bid of 0 before anyone is asked (the order
    is always by player id). Here a bidding phase nobody has been asked in yet asks for the bids, and a speaking
    phase whose speaker has not been asked yet asks them: the protocols' own code does the rest."""
    from kaggle_environments.envs.werewolf.game import engine
    from kaggle_environments.envs.werewolf.game.actions import BidAction, ChatAction
    from kaggle_environments.envs.werewolf.game.consts import DetailedPhase
    from kaggle_environments.envs.werewolf.game.protocols.chat import BiddingDiscussion

    moderator = engine.Moderator
    if getattr(moderator, "bidding_fixed", False):
        return
    bidding_await, chat_await = moderator._handle_day_bidding_await, moderator._handle_day_chat_await

    def ask(self: Any, action: Any, phase: Any) -> Any:
        actors = self.discussion.speakers_for_tick(self.state)
        self._action_queue.extend(action, actors)
        self.discussion.prompt_speakers_for_tick(self.state, actors)
        return phase

    def handle_bidding(self: Any, player_actions: Any) -> Any:
        if not self._action_queue.get(BidAction):  # nobody asked to bid yet
            return ask(self, BidAction, DetailedPhase.DAY_BIDDING_AWAIT)
        return bidding_await(self, player_actions)

    def handle_chat(self: Any, player_actions: Any) -> Any:
        if (isinstance(self.discussion, BiddingDiscussion) and self.discussion.is_speaking_phase()
                and not self._action_queue.get(ChatAction)):  # the speaker the bids chose, not asked yet
            return ask(self, ChatAction, DetailedPhase.DAY_CHAT_AWAIT)
        return chat_await(self, player_actions)

    handle_bidding._phase_handler_for = DetailedPhase.DAY_BIDDING_AWAIT  # type: ignore[attr-defined]
    handle_chat._phase_handler_for = DetailedPhase.DAY_CHAT_AWAIT  # type: ignore[attr-defined]
    moderator._handle_day_bidding_await, moderator._handle_day_chat_await = handle_bidding, handle_chat
    moderator.bidding_fixed = True


def play(name: str, seed: int, fast: bool = True, fixed: bool = True) -> dict[str, Any]:
    """One Kaggle game with its random agent in every seat; its replay (``env.toJSON()``). The bidding
    discussions are played as their rules say (``_fixed_bidding``; ``fixed=False`` in a fresh process plays
    them as kaggle-environments does)."""
    import logging

    if fixed:
        _fixed_bidding()
    if fast:
        _fast_schemas()
    from kaggle_environments import make

    logging.getLogger("kaggle_environments").setLevel(logging.ERROR)
    config = configuration(name, seed)
    env = make("werewolf", configuration=config)
    random.seed(seed)  # after make: the first make of a process loads modules that may draw from random
    env.run([AGENTS[CONFIGS[name].get("agent", "random")]] * len(config["agents"]))
    return env.toJSON()


def play_many(jobs: list[tuple[str, int]], processes: int = 2) -> list[dict[str, Any]]:
    """Replays of many games, across ``processes`` worker processes (each game seeded on its own)."""
    if processes <= 1:
        return [play(n, s) for n, s in jobs]
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        return pool.starmap(play, jobs, chunksize=max(1, len(jobs) // (4 * processes)))
