"""The HTML replay opened in headless Chromium (Debian's /usr/bin/chromium through Playwright): the page loads
nothing from anywhere, shows a vote matrix per day, and the god-view toggle reveals the roles, the night
actions and each model call's prompt and answer. Screenshots go to the test's tmp folder."""

import pytest

from toolkit.export import html
from toolkit.record.load import load


def test_the_replay_shows_votes_and_the_god_view_reveals_roles(game, browser, tmp_path):
    results, gid = game
    path = tmp_path / "game.html"
    path.write_text(html.game_page(results, gid), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    page.screenshot(path=str(tmp_path / "public.png"))
    assert requests == [path.as_uri()]  # self-contained: nothing else is fetched

    ballots = results.events[(results.events["kind"] == "vote") & (results.events["day"] == 1)]
    matrix = page.locator("#votes-day-1")
    assert matrix.is_visible()
    assert matrix.locator("td.first").count() == len(ballots[ballots["phase"] == "day_vote"])
    assert matrix.locator("tr").count() == ballots["actor"].nunique() + 2  # header, voters, totals

    role_cell = page.locator("#seats td.role").first
    night_action = page.locator(".ev.private").first
    call = page.locator("details.call").first
    assert not role_cell.is_visible() and not night_action.is_visible() and not call.is_visible()
    page.check("#god-view")
    roles = dict(zip(results.players["seat"], results.players["role"]))
    shown = page.locator("#seats tr.seat").evaluate_all(
        "rows => rows.map(r => [r.dataset.seat, r.querySelector('td.role').innerText])")
    assert dict(shown) == roles and role_cell.is_visible() and night_action.is_visible()
    call.locator("summary").click()
    answer = call.locator("pre.answer")
    assert answer.is_visible()
    first = results.calls.sort_values("seq").iloc[0]
    assert answer.inner_text().strip() == first["response_text"].strip()
    assert page.locator("#beliefs table.beliefs").count() == results.beliefs["seat"].nunique() > 0
    page.screenshot(path=str(tmp_path / "god.png"))
    page.uncheck("#god-view")
    assert not role_cell.is_visible()


@pytest.mark.slow
def test_the_page_is_a_few_hundred_kb_and_escapes_what_players_say(game):
    results, gid = game
    page = html.game_page(results, gid)
    assert 10_000 < len(page.encode()) < 1_000_000
    assert "<script src" not in page and "<link" not in page and "@import" not in page
    evil = results.events.copy()
    i = evil.index[evil["kind"] == "speech"][0]
    evil.loc[i, "text"] = "<img src=x onerror=alert(1)>"
    results.events = evil
    assert "<img src=x" not in html.game_page(results, gid) and "&lt;img src=x" in html.game_page(results, gid)


def test_no_content_leaves_prompts_and_answers_out(game):
    results, gid = game
    page = html.game_page(results, gid, content=False)
    first = results.calls.sort_values("seq").iloc[0]
    assert first["response_text"] not in page and "[content omitted]" in page


def test_a_session_page_shows_steps_commands_and_outputs(session_folder, browser, tmp_path):
    results = load(session_folder)
    sid = next(s for s in results.sessions["session_id"] if s.startswith("add_cli_flag"))
    trajectory = html.find_trajectory(session_folder, sid)
    assert trajectory is not None
    path = tmp_path / "session.html"
    path.write_text(html.session_page(results, sid, trajectory), encoding="utf-8")
    page = browser.new_page()
    page.goto(path.as_uri())
    assert page.locator(".step").count() == len(trajectory["memory"]) > 0
    first = next(m for m in trajectory["memory"] if m.get("commands"))
    assert page.locator(f'.step[data-step="{first["step"]}"] details.command').count() == len(first["commands"])
    # each edit shows the diff it made: the inserted flag, then the replaced line and its three new ones
    edits = page.locator("pre.diff")
    assert edits.count() == 2
    assert edits.nth(0).locator(".d-add").all_inner_texts() == [
        '+    parser.add_argument("--shout", action="store_true", help="upper-case the greeting")']
    assert edits.nth(1).locator(".d-del").all_inner_texts() == ['-    message = f"Hello, {args.name}!"']
    assert edits.nth(1).locator(".d-add").count() == 3
    page.screenshot(path=str(tmp_path / "session.png"), full_page=True)
