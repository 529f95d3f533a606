"""The seed's strategy, kept: every instruction of MetaGPT's werewolf prompts (listed below, sentence by
sentence, as MetaGPT's werewolf actions state them) is in every rendered prompt of the roles it applies to.
"""

import asyncio
import json

import pandas as pd
import pytest

from toolkit.record.run_log import Run
from toolkit.record.load import load
from toolkit.werewolf.game import GameConfig, play_games

pytestmark = pytest.mark.slow  # its module fixture plays and records games

ALL = ("Werewolf", "Villager", "Guard", "Witch", "Seer")
NIGHT = ("Werewolf", "Guard", "Witch", "Seer")
SPECIAL = ("Guard", "Witch", "Seer")

# (where in the seed, roles, sentence as the templates say it). Reflection's sentences are in reflect prompts.
STRATEGY = [
    ("Every action: only living players can be targeted or voted for", ALL,
     "Only living players can be chosen or voted for."),
    ("Every action: use only what the game has shown; do not invent other players' actions (first night)", ALL,
     "Use only what the game has shown you; never invent other players' actions (on the first night nothing "
     "has happened yet)."),
    ("Every action: past experiences may be consulted; draw lessons from a similar situation", ALL,
     "If lessons from past games are given, draw on one from a similar situation."),
    ("Every action: think in a few short steps (at most three)", ALL, "Think in at most three short steps."),
    ("Speak: weigh the benefit against the risk of revealing your role", ALL,
     "Before revealing your role, weigh what it gains against the risk."),
    ("Speak: give useful information; keep it short (~200 words), aimed at your role's goal; "
     "moderator: decide whether to reveal your identity", ALL,
     "When you speak, give useful information toward your side's goal, briefly (under 200 words), and decide "
     "whether to reveal your identity."),
    ("Speak/moderator: when voting, vote only (no speech) for one living player, do not mention your role", ALL,
     "When you vote, give one living player and no speech or role"),
    ("Speak: vote to eliminate the most suspicious player; moderator: name who you think is a werewolf",
     ("Villager", "Guard", "Witch", "Seer"),
     "the one most likely a werewolf, judging by claims, accusations, checks and votes."),
    ("NighttimeWhispers: choose the most threatening player or the one who most needs your support", NIGHT,
     "At night, choose the player most threatening to you or most in need of your support."),
    ("Speak: with a special role, anyone who falsely claims it is probably a werewolf", SPECIAL,
     "anyone else who claims to be the {role} is probably a werewolf."),
    ("Hunt: werewolves hunt together, told their partners and that everyone else is not a wolf", ("Werewolf",),
     "The werewolves hunt together; every player but your partners is not a werewolf."),
    ("Hunt: the most threatening target", ("Werewolf",),
     "Hunt who threatens your team most: a claimed or suspected Seer, then other special roles, then the "
     "village's leaders."),
    ("Impersonate: never reveal that you are a werewolf", ("Werewolf",),
     "Never reveal that you are a werewolf, and never expose your fellow werewolves."),
    ("Impersonate: keep a consistent false identity (Seer, Guard, Villager, ...) to gain trust", ("Werewolf",),
     "By day keep up one consistent false identity (Villager, Seer, Guard, …) to gain trust"),
    ("Impersonate: watch your partner's claims; never claim the same role as your partner", ("Werewolf",),
     "Never claim the same role as a partner: watch what they claim."),
    ("Vote as a werewolf: vote out a village player (the seed's werewolf voting aim)", ("Werewolf",),
     "a village player who threatens your team, ideally one others already suspect."),
    ("Verify: check the players whose role matters most", ("Seer",),
     "Check unchecked players whose role matters most: loud accusers, role claimants, the suspected."),
    ("Seer: reveal a found werewolf, knowing the risk", ("Seer",),
     "Having found a werewolf, a Seer usually says so"),
    ("Witch Save: decide whether to save the player killed this night", ("Witch",),
     "Antidote: when told whom the werewolves attacked, decide whether to save them"),
    ("Witch Poison: only when confident the player is a werewolf; never at random, never on the first night",
     ("Witch",), "Poison only a player you are confident is a werewolf, never at random, never on the first "
                 "night: a wasted poison can kill your own side."),
    ("Witch: anyone else claiming to be the Witch is a werewolf; poisoning them is sound", ("Witch",),
     "Another player claiming to be the Witch is a werewolf: poisoning them is sound."),
    ("Protect: the player who most needs support (the wolves' likely target)", ("Guard",),
     "Protect the player the werewolves most want dead, such as a revealed Seer"),
]
REFLECTION = [
    ("Reflect: analyse every player, living and dead: status, claimed role, contradictions, sides, accusations; "
     "mark yourself",
     "First analyse every player, living and dead: their status (and how a dead one probably died), the role "
     "they claimed and any contradiction with others, whom they side with and whom they accuse; mark yourself"),
    ("Reflect: infer every player's true role with a reason; one-sentence summary of the game state",
     "Then infer every other living player's true role with a reason, and sum the game up from your standpoint "
     "in one sentence: the conflicts, and how many werewolves, special roles and villagers are likely still "
     "alive."),
    ("Reflect: on the first night there is nothing to analyse yet",
     "On the first night there is nothing to analyse yet"),
    ("Reflect (werewolf): mark your werewolf partner", "mark yourself and your fellow werewolves"),
]


@pytest.fixture(scope="module")
def calls(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("strategy")
    configs = [GameConfig(preset=p, seed=s, reflection=True) for p in ("classic7", "standard9") for s in range(6)]
    with Run(tmp) as run:
        asyncio.run(play_games(configs, run))
    return load(tmp).calls


@pytest.fixture(scope="module")
def prompts(calls):
    return [(row.role, row.action, json.loads(row.messages)[0]["content"]) for row in calls.itertuples()]


def test_every_seed_strategy_sentence_is_in_every_prompt_of_its_roles(prompts):
    print(f"{len(STRATEGY)} strategy sentences and {len(REFLECTION)} reflection sentences checked:")
    for source, roles, sentence in STRATEGY:
        print(f"- [{', '.join(roles)}] {source}")
        for role in roles:
            own = [p for r, a, p in prompts if r == role]
            assert own, role
            expected = sentence.format(role=role)
            missing = sum(expected not in p for p in own)
            assert missing == 0, f"{missing}/{len(own)} {role} prompts lack: {expected}"
    assert {r for r, _, _ in prompts} == set(ALL)


def test_role_specific_strategy_stays_with_its_role(prompts):
    """A sentence for one role is not shown to the others (nor a wolf's tactics to the village)."""
    for _, roles, sentence in STRATEGY:
        if roles == ALL or "{role}" in sentence:
            continue
        others = [p for r, _, p in prompts if r not in roles]
        assert not any(sentence in p for p in others), sentence


def test_every_reflection_prompt_asks_for_the_seed_analysis(prompts):
    reflections = [(r, p) for r, a, p in prompts if a == "reflect"]
    assert len(reflections) > 100
    for source, sentence in REFLECTION:
        print(f"- [reflect] {source}")
        applies = [p for r, p in reflections if r == "Werewolf"] if "(werewolf)" in source else [
            p for _, p in reflections]
        assert all(sentence in p for p in applies), sentence
    assert not any(r != "Werewolf" and REFLECTION[-1][1] in p for r, p in reflections)


def test_prompts_are_laid_out_for_prefix_reuse(calls):
    """Every prompt of a preset opens with the same text (rules, common strategy) up to the seat's identity,
    and a seat's prompts stay identical through its role strategy, up to the game record: a server's prefix
    cache serves that much to a seat's first call and more to its later ones."""
    prompt = pd.Series([json.loads(m)[0]["content"] for m in calls["messages"]], index=calls.index)
    calls = calls.assign(prompt=prompt, preset=prompt.str.extract(r"with (\d+) players")[0])
    assert set(calls["preset"]) == {"7", "9"}  # classic7 and standard9
    for preset, group in calls.groupby("preset"):
        openings = {p[:p.index("\nYou are Player")] for p in group["prompt"]}
        assert len(openings) == 1, preset
        opening = openings.pop()
        assert "Rules:" in opening and "How to play:" in opening and "Your role" not in opening
        assert len(opening) > 0.25 * group["prompt"].str.len().mean(), preset  # a real share of every prompt
        for (game, seat), own in group.groupby(["game_id", "seat"]):
            assert len({p[:p.index("Game record")] for p in own["prompt"]}) == 1, (game, seat)
