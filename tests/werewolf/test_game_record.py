"""The game record in every prompt: no public fact is ever lost, and the prompt stays bounded.

The prompts are read back by ``tests.werewolf.completeness``, which parses the rendered text (it does
not use the observation that built it).
"""

import asyncio

import pytest

from toolkit.prompting.structured_call import render
from tests.werewolf.ledger_check import check_games, new_stats
from tests.werewolf.completeness import missing
from toolkit.werewolf.game import play_games, GameConfig, GameRunner
from toolkit.werewolf.seat.observation import FULL_DAYS, observe
from toolkit.werewolf.engine.preset import load_preset
from toolkit.werewolf.engine.rules import Game


def prompt_for(runner, game, ask, reflection=""):
    obs = observe(game, ask.seat, ask)
    return render(f"werewolf/{ask.action}.j2", **runner.values, obs=obs, reflection=reflection, experiences=[],
                  strategy="default")


@pytest.mark.parametrize("preset", ["classic7", "standard9"])
@pytest.mark.slow
def test_every_public_event_before_a_call_is_in_its_prompt(preset):
    stats = new_stats()
    for model in ("random", "heuristic", "chaos:0.3"):
        asyncio.run(check_games([GameConfig(preset=preset, seed=s, model=model, reflection=True)
                                 for s in range(40)], stats))
    assert stats["games"] == 120 and stats["calls"] > 4000 and stats["facts"] > 60000
    assert stats["missing"] == 0, stats["examples"]
    assert stats["complete_calls"] == stats["calls"]


@pytest.mark.parametrize("preset,flags", [
    ("classic7", {"reveal_roles_on_death": True, "last_words": True, "vote_tie": "random"}),
    ("standard9", {"reveal_roles_on_death": True, "speech_order": "fixed", "protect_and_save": "die",
                   "win_rule": "parity"}),
])
@pytest.mark.slow
def test_the_record_is_complete_under_other_rule_flags(preset, flags):
    """Role reveals on death, random tie-breaks, last words in a 7-seat game, fixed order, parity."""
    rules = load_preset(preset).model_copy(update=flags)
    stats = new_stats()
    asyncio.run(check_games([GameConfig(preset=rules, seed=s, model=m) for s in range(25)
                             for m in ("random", "heuristic")], stats))
    assert stats["calls"] > 1000 and stats["missing"] == 0, stats["examples"]


@pytest.mark.slow
def test_the_record_carries_every_hunter_shot():
    """competitive12, the shot seat's role revealed as an exile's: the shots (at dawn and after a vote) are in
    every later prompt, and at least one game has one."""
    rules = load_preset("competitive12").model_copy(update={"exile_reveal": "role"})
    configs = [GameConfig(preset=rules, seed=s, model=m) for s in range(6) for m in ("random", "heuristic")]
    stats = new_stats()
    asyncio.run(check_games(configs, stats))
    assert stats["calls"] > 500 and stats["missing"] == 0, stats["examples"]
    played = asyncio.run(play_games(configs))  # the same games again (seeded), to see the shots they had
    assert sum(e.kind == "shot" for r in played for e in r.events) >= 3


def test_the_checker_notices_a_missing_fact():
    """Negative control: drop any one record line (or a quoted speech) from a real prompt and it is reported."""
    for seed in range(50):
        runner = GameRunner(GameConfig(preset="standard9", seed=seed))

        async def to_day_three():
            while runner.game.day < 3 and await runner.step():
                pass

        asyncio.run(to_day_three())
        if not runner.game.over:
            break
    game = runner.game
    ask = game.pending()[0]
    prompt = prompt_for(runner, game, ask)
    assert missing(prompt, game.events, roles=game.roles, phase=game.phase) == []
    lines = prompt.splitlines()
    fact_lines = [i for i, line in enumerate(lines)
                  if line.startswith(("- Day ", "- Role claims", "- Claimed findings", "Speeches"))]
    assert len(fact_lines) >= 8
    for i in fact_lines:
        cut = "\n".join(lines[:i] + lines[i + 1:])
        assert missing(cut, game.events, roles=game.roles, phase=game.phase), lines[i]
    # a changed vote is caught too, not only a missing line
    vote_line = next(line for line in lines if line.startswith("- Day 1 vote: "))
    voter = vote_line.split(" ← ")[1].split(",")[0].split(" ")[0]
    forged = prompt.replace(vote_line, vote_line.replace(f"← {voter}", "← Player99"))
    assert any(voter in m for m in missing(forged, game.events, roles=game.roles, phase=game.phase))


def nobody_dies_for(days, preset_name="standard9"):
    """A game where nobody ever dies: the guard protects the wolves' target (alternating, so a
    no-repeat rule is kept), the witch keeps her potions, and every vote ties (each player votes for the
    next), revote included. Yields (day, prompt) for one speech prompt a day, and the game at the end."""
    preset = load_preset(preset_name).model_copy(update={"max_days": days})
    game = Game(preset, seed=2)
    runner = GameRunner(GameConfig(preset=preset, seed=2))
    guard, seer = game.seat_of("Guard"), game.seat_of("Seer")
    out = {}
    while not game.over:
        for ask in game.pending():
            shield = guard if game.day % 2 else seer
            if ask.action == "speak":
                if ask.seat == game.alive[-1]:
                    out[game.day] = prompt_for(runner, game, ask, reflection="")
                    gaps = missing(out[game.day], game.events, roles=game.roles, phase=game.phase)
                    assert gaps == [], (game.day, gaps)
                game.apply(ask.seat, "speak", text=f"I am a Villager. I suspect {game.alive[0]}. " * 3)
            elif ask.action == "vote":
                alive = game.alive
                game.apply(ask.seat, "vote", alive[(alive.index(ask.seat) + 1) % len(alive)])
            elif ask.action == "hunt":
                game.apply(ask.seat, "hunt", shield)
            elif ask.action == "protect":
                game.apply(ask.seat, "protect", shield)
            elif ask.action == "verify":
                game.apply(ask.seat, "verify", ask.choices[0])
            else:  # the witch keeps her potions
                game.apply(ask.seat, ask.action, None)
    return out, game


def test_thirty_days_without_a_death_the_nine_player_prompt_stops_growing():
    prompts, game = nobody_dies_for(30)
    assert game.day == 30 and game.winner == "draw" and len(game.alive) == 9
    assert sum(e.kind == "vote" for e in game.events) == 30 * 2 * 9  # every day a vote and a revote
    sizes = {day: len(p) for day, p in prompts.items()}
    assert FULL_DAYS + 1 <= 8
    assert max(sizes[d] for d in range(9, 31)) <= sizes[8] * 1.02  # flat after day 8 ...
    # ... at under 8,500 characters: the worst case for the record, 9 living players and 7 days of a vote
    # and a revote each, every player voting for a different one (8,219 since the answer shapes are described
    # in words rather than as a <...> template)
    assert max(sizes.values()) < 8500
    late = prompts[30]
    assert "(condensed;" in late and "nobody died on nights 1–23" in late
    assert "tied vote, nobody eliminated on days 1–23" in late
    assert "46 rounds, 23 of them revotes" in late  # every older round is still counted
    assert "Player1→Player2 ×46" in late  # and every older vote, as voter→target ×times
    assert "- Day 29 revote among" in late and "- Day 24 vote:" in late  # the last 7 days vote by vote


def test_condensed_days_keep_deaths_eliminations_and_last_words():
    """A long standard9 game with a death and an elimination early: on day 10 (days 1–3 condensed) the
    prompt still names them with their day, and the last words."""
    preset = load_preset("standard9").model_copy(update={"max_days": 12})
    game = Game(preset, seed=4)
    runner = GameRunner(GameConfig(preset=preset, seed=4))
    villagers = game.living("Villager")
    guard, seer = game.seat_of("Guard"), game.seat_of("Seer")
    checked = 0
    while not game.over:
        for ask in game.pending():
            shield = guard if game.day % 2 else seer
            if ask.action == "speak":
                if game.day >= 10 and game.phase == "day_speech":
                    prompt = prompt_for(runner, game, ask)
                    assert missing(prompt, game.events, roles=game.roles, phase=game.phase) == []
                    assert "(condensed;" in prompt
                    assert f"eliminated: {villagers[0]} (day 1)" in prompt
                    assert f"night deaths: {villagers[1]} (night 2)" in prompt
                    assert f"- Day 1 last words of {villagers[0]}: «My last words.»" in prompt
                    checked += 1
                game.apply(ask.seat, "speak", text="My last words." if game.phase == "last_words" else "Hello.")
            elif ask.action == "vote":
                alive = game.alive
                pick = alive[(alive.index(ask.seat) + 1) % len(alive)]  # a tie ...
                if game.day == 1:  # ... except on day 1: the first villager goes
                    pick = villagers[0] if ask.seat != villagers[0] else game.living("Werewolf")[0]
                game.apply(ask.seat, "vote", pick if pick in ask.choices else ask.choices[0])
            elif ask.action == "hunt":
                game.apply(ask.seat, "hunt", villagers[1] if game.day == 2 else shield)
            elif ask.action == "protect":
                game.apply(ask.seat, "protect", shield)
            elif ask.action == "verify":
                game.apply(ask.seat, "verify", ask.choices[0])
            else:
                game.apply(ask.seat, ask.action, None)
    assert game.winner == "draw" and checked >= 3 * 7


@pytest.mark.slow
def test_the_seats_view_reads_the_announcements_typed_fields_not_their_text():
    """Speaking order, revotes, ties and abstentions reach a seat's record from the events' ``about`` and
    ``seats`` fields: with those announcements' text blanked the record is the same (a bid's outcome is shown
    as its announcement says, so its text stays)."""
    import dataclasses

    from toolkit.werewolf.seat.observation import record

    seen = set()
    for preset in ("standard9", "competitive12", "classic7"):
        for seed in range(12):
            runner = GameRunner(GameConfig(preset=preset, seed=seed, model="random"))
            asyncio.run(runner.play())
            game = runner.game
            public = [e for e in game.events if e.visibility == "public"]
            blank = [dataclasses.replace(e, text="") if e.about not in (None, "bids") else e
                 for e in public]
            seen |= {e.about for e in public if e.about}
            assert record(game, blank) == record(game, public), (preset, seed)
    assert {"speaking_order", "revote", "tie"} <= seen


def test_the_seats_asked_at_one_moment_share_one_public_view_equal_to_their_own():
    """The record, speeches and claims are built once per moment of the game (observation.public_view) and
    shared by the seats asked then; each seat's observation equals one built afresh for it, so a stale view
    (a moment taken for another) would show."""
    from toolkit.werewolf.seat import observation

    runner = GameRunner(GameConfig(seed=3, model="heuristic"))
    game, shared = runner.game, 0

    async def first_days() -> None:
        nonlocal shared
        while not game.over and game.day <= 2:
            asks = game.pending()
            views = [observe(game, a.seat, a) for a in asks]
            for obs in views[1:]:
                assert obs["record"] is views[0]["record"] and obs["claims"] is views[0]["claims"]
                shared += 1
            observation._VIEWS.clear()
            for a, obs in zip(asks, views):
                assert observe(game, a.seat, a) == obs
            await runner.step()

    asyncio.run(first_days())
    assert shared > 10  # nights and votes ask several seats at one moment
