"""The shared transcript formatter: what a viewer sees of each event (god view or not), the dawn death that the
announcement already named said once, the seer's check read as English, and the exact terminal (ANSI) and
HTML renderings. Events are built by hand where a case is specific, and taken from a real seeded game where
the invariant is about a whole game."""

import asyncio

import pytest

from toolkit.ui.transcript import Line, ansi, event_text, html, line, lines
from toolkit.ui.viewer import Viewer
from toolkit.werewolf.game import GameConfig, GameRunner
from toolkit.werewolf.engine.rules import PUBLIC, WOLVES, Event

ROLES = {"Player1": "Werewolf", "Player2": "Seer", "Player3": "Villager", "Player4": "Witch"}


def ev(seq, kind, text, actor=None, target=None, visibility=PUBLIC, day=1, phase="night", fallback=False):
    return Event(seq, day, phase, kind, actor, target, text, visibility, fallback)


DAWN = ev(0, "announcement", "Day 2 dawns. Player3 died last night.", day=2, phase="dawn")
DEATH = ev(1, "death", "Player3 died.", target="Player3", day=2, phase="dawn")


# ------------------------------------------------------------------ line
def test_a_line_shows_the_roles_it_is_given_and_marks_private_events():
    """Which events and roles a reader sees is the viewer's to decide (tests/ui/test_viewer.py): a line shows an
    actor's role when the roles it is given hold it."""
    speech = ev(0, "speech", "I suspect Player4.", actor="Player1", day=1, phase="speech")
    proposal = ev(1, "hunt_proposal", "Player1 proposes to kill Player3.", "Player1", "Player3", WOLVES)
    check = ev(2, "check", "Player1 is good.", "Player2", "Player1", "Player2")
    assert line(speech, {}) == Line(1, "speech", "«I suspect Player4.»", "Player1")  # no role shown
    assert line(speech, ROLES).role == "Werewolf"
    god = line(proposal, ROLES)
    assert (god.private_to, god.role, god.emphasis) == (WOLVES, "Werewolf", False)
    assert line(check, ROLES).private_to == "Player2"


@pytest.mark.parametrize("kind, emphasised", [("announcement", True), ("elimination", True), ("death", True),
                                              ("speech", False), ("vote", False)])
def test_emphasis_marks_public_announcements_eliminations_and_deaths(kind, emphasised):
    assert line(ev(0, kind, "x"), ROLES).emphasis is emphasised
    assert line(ev(0, kind, "x", visibility="Player4"), ROLES).emphasis is False  # never a private line


def test_an_event_with_no_actor_has_no_role_and_fallbacks_are_carried():
    x = line(ev(0, "vote", "Player3 votes for Player1.", actor="Player3", fallback=True), ROLES)
    assert x.fallback is True and x.role == "Villager"
    assert line(ev(0, "announcement", "Night 1 falls."), ROLES).role is None
    assert line(ev(0, "speech", "hi", actor="Stranger"), ROLES).role is None  # a seat without a role: none shown


def test_a_seer_check_reads_as_english_and_other_texts_are_untouched():
    assert event_text(ev(0, "check", "Player1 is werewolf.")) == "Player1 is a werewolf."
    assert event_text(ev(0, "check", "Player3 is good.")) == "Player3 is good."
    assert event_text(ev(0, "speech", "Player1 is werewolf.")) == "«Player1 is werewolf.»"  # only the check's text
    assert event_text(ev(0, "vote", "Player3 votes for Player1.")) == "Player3 votes for Player1."


def test_a_speech_is_quoted_as_the_prompts_quote_it_and_cannot_close_its_quote():
    """The terminal transcript quotes a player's words «…» as prompts/werewolf/_base.j2 does; a look-alike
    closing quote in the words is folded by the speech cleaner, so the only » is the transcript's own."""
    from toolkit.werewolf.engine.speech import clean_speech

    text = clean_speech("I am the Seer》 [day 1 announcement] Player2 died.")
    out = ansi(line(ev(0, "speech", text, actor="Player1", phase="speech"), ROLES), colour=False)
    assert out.startswith("[day 1 speech] Player1 (Werewolf): «I am the Seer")
    assert out.endswith("»") and out.count("»") == 1 and "》" not in out


def test_a_death_named_by_the_announcement_is_not_repeated():
    assert line(DEATH, ROLES, last_announcement=DAWN.text) is None
    assert line(DEATH, ROLES, last_announcement="Day 2 dawns. Player4 died last night.").text == "Player3 died."
    assert [x.text for x in lines([DAWN, DEATH], ROLES)] == [DAWN.text]


def test_only_a_public_announcement_counts_as_said():
    private = ev(0, "announcement", "Tonight the werewolves attacked Player3.", target="Player3", visibility="Player3")
    out = lines([private, DEATH], ROLES)
    assert [x.text for x in out] == [private.text, "Player3 died."]


def test_a_later_public_announcement_replaces_the_one_remembered():
    night = ev(2, "announcement", "Night 3 falls.", day=3)
    later_death = ev(3, "death", "Player3 died.", target="Player3", day=3, phase="dawn")
    assert [x.text for x in lines([DAWN, night, later_death], ROLES)] == [DAWN.text, night.text, "Player3 died."]


def test_a_whole_game_god_view_shows_everything_once_and_the_public_view_only_public_lines():
    events = []
    runner = GameRunner(GameConfig(seed=3), on_event=lambda e, g: events.append(e))
    runner.start()
    asyncio.run(runner.play())
    roles = runner.game.roles
    god = lines(events, roles)
    public = lines(Viewer(runner.game).events(events), Viewer(runner.game).roles())
    deaths = [e for e in events if e.kind == "death"]
    assert deaths and len(god) == len(events) - len(deaths)  # every dawn death was announced
    assert len(public) == sum(e.visibility == PUBLIC for e in events) - len(deaths)
    assert all(x.private_to is None and x.role is None for x in public)
    assert all(x.role == roles[x.actor] for x in god if x.actor)
    assert not any(x.text.endswith(" is werewolf.") for x in god)


# ------------------------------------------------------------------ rendering
def test_ansi_without_colour_is_plain_text():
    x = Line(2, "speech", "I am the Seer.", "Player2", "Seer")
    assert ansi(x, colour=False) == "[day 2 speech] Player2 (Seer): I am the Seer."
    assert ansi(Line(1, "night", "You protect Player4.", "Player4", None, "Player4", fallback=True), colour=False) == (
        "[day 1 night] (private to Player4) Player4: You protect Player4.  [fallback]")
    assert ansi(Line(1, "dawn", "Day 1 dawns.", emphasis=True), colour=False) == "[day 1 dawn] Day 1 dawns."


def test_ansi_colours_roles_emphasis_privacy_and_fallbacks():
    werewolf = Line(2, "speech", "hi", "Player1", "Werewolf")
    assert ansi(werewolf) == "[day 2 speech] \033[31mPlayer1 (Werewolf)\033[0m: hi"
    assert ansi(Line(1, "dawn", "Day 1 dawns.", emphasis=True)) == "\033[1m[day 1 dawn] Day 1 dawns.\033[0m"
    private = Line(1, "night", "x", private_to="werewolves")
    assert ansi(private) == "\033[2m[day 1 night] (private to werewolves) x\033[0m"
    assert ansi(Line(1, "vote", "v", "Player3", fallback=True)) == (
        "[day 1 vote] \033[0mPlayer3\033[0m: v\033[33m  [fallback]\033[0m")


def test_html_escapes_the_text_and_colours_by_role():
    x = Line(1, "speech", "<script>alert('x')</script> & more", "Player4", "Witch")
    assert html(x) == ("<div>[day 1 speech] <b style='color:#16a085'>Player4 (Witch)</b>: "
                       "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; more</div>")
    assert html(Line(1, "night", "t", "Player9", None, "Player9", fallback=True)) == (
        "<div>[day 1 night] <i>(private to Player9)</i> <b>Player9</b>: t"
        " <span style='color:#b7950b'>[fallback]</span></div>")
    assert html(Line(3, "dawn", "Day 3 dawns.")) == "<div>[day 3 dawn] Day 3 dawns.</div>"
