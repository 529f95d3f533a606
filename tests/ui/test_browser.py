"""A real browser: JupyterLab on 127.0.0.1 with a token, Debian's Chromium driven by Playwright, clicking the
widgets as a person does, with assertions on the page's DOM. One JupyterLab and one Chromium serve the module
(each test its own copy of the notebooks, JupyterLab workspace, browser context and kernels). Screenshots are
saved (``$SCREENSHOT_DIR`` when set, which CI keeps; else the test's tmp folder).

The werewolf tests play a human seat (the Seer, a wolf) through the first day: in ipykernel 7 a click is
handled on a subshell thread, and the game froze after Submit until another cell ran (toolkit.ui.kernel_loop)."""

import json
import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from tests.ui.jupyterlab import (CHROMIUM, REPO, Lab, chromium, copy_notebooks, end_kernels, fresh_page,
                                 screenshot_dir, serve)

pytestmark = pytest.mark.browser

STATUS = ".toolkit-status"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One JupyterLab and one Chromium for the module (starting them took ~12 s a test)."""
    # checked here, not at import: a module-level failure is a collection error that fails `make check` (the fast
    # tier deselects these tests but still imports the module) on a machine without chromium
    if not Path(CHROMIUM).exists():  # `make test` installs it on a root Debian machine; elsewhere it says how
        pytest.fail("Debian's chromium is not installed (apt-get install -y chromium; `make test` does it as root)",
                    pytrace=False)
    with serve(tmp_path_factory.mktemp("lab")) as (base, token, served), chromium() as browser:
        yield base, token, served, browser


@pytest.fixture
def lab(server, tmp_path, request):
    """A test's own copy of the notebooks (a folder of the served tree), its own JupyterLab workspace and
    browser context, its kernels shut down after it: the tests stay independent."""
    base, token, served, browser = server
    root = re.sub(r"[^A-Za-z0-9_-]", "_", request.node.name)
    copy_notebooks(served / root)
    try:
        with fresh_page(browser) as page:
            lab = Lab(page, base, token, screenshot_dir(tmp_path), root=root)
            yield lab
            lab.shot(f"last_{root}")  # the page as the test left it, passed or failed
    finally:
        end_kernels(base, token)


def answer_human(lab: Lab, speech: str) -> str:
    """Answer the human seat's question on the page: type a speech or keep the first legal choice."""
    page = lab.page
    head = page.locator(".widget-html-content:has-text('day ') b").first
    say = lab.button("Say")
    # the status says "your turn" before the question's widgets reach the page: wait for its button
    page.locator(".jupyter-widgets button:text-is('Say'), .jupyter-widgets button:text-is('Submit')").first.wait_for(
        timeout=60_000)
    if say.count():
        page.locator(".jupyter-widgets textarea[placeholder='what you say']").fill(speech)
        say.click()
        return "speak"
    lab.button("Submit").click()
    return head.inner_text()


def start_with_a_human(lab: Lab, seat: str) -> None:
    """The werewolf notebook run, ``seat`` played by the human (classic7, seed 0), the game started and run on."""
    page = lab.page
    lab.open("01_werewolf_session.ipynb")
    lab.run_all()
    lab.button("Step").wait_for(timeout=120_000)
    lab.wait_idle()
    box = page.locator(f".widget-inline-hbox:has(label:text-is('{seat}')) input").first
    box.fill("human")
    box.press("Enter")
    lab.button("Start").click()
    lab.has_text(STATUS, "day 1, phase night")
    lab.button("Run to end").click()


def answer_until(lab: Lab, stop: str, speech: str, shot_at: int | None = None) -> list[str]:
    """Answer every question put to the human until the status matches ``stop``; the seat panel's text at each
    question, read when the status says it is the human's turn."""
    page, status = lab.page, lab.page.locator(STATUS).first
    panel, panels = page.locator(".toolkit-seat-panel").first, []
    while not re.search(stop, status.inner_text()):
        page.wait_for_function(
            "s => [...document.querySelectorAll('.jupyter-widgets button')].some(b => ['Submit', 'Say']"
            ".includes(b.innerText.trim())) || new RegExp(s).test(document.body.innerText)", arg=stop,
            timeout=60_000)
        if lab.button("Submit").count() or lab.button("Say").count():
            # the status says so (its update is sent before the question's; the page applies them in turn)
            page.wait_for_function("() => document.querySelector('.toolkit-status').innerText.includes('your turn')",
                                   timeout=10_000)
            panel.wait_for(timeout=10_000)
            panels.append(panel.inner_text())
            if len(panels) - 1 == shot_at:
                lab.shot("werewolf_human_question")
            before = status.inner_text()
            answer_human(lab, speech)
            # the game resumes at once: the question goes away and the status moves on, no other cell runs
            page.wait_for_function("b => !document.body.innerText.includes('your turn') || "
                                   "[...document.querySelectorAll('.widget-html-content')].every(e => "
                                   "e.innerText !== b)", arg=before, timeout=30_000)
    return panels


def test_werewolf_session_human_seat_stop_and_transcript(lab):
    page = lab.page
    # seed 0 of classic7 makes Player7 the Seer: the human plays it and its panel shows what it learns
    start_with_a_human(lab, "Player7")
    # a study's default: no god view while a human seat plays (the toggle hides once the human's game starts)
    lab.button("god view").wait_for(state="hidden", timeout=30_000)
    status = page.locator(STATUS).first
    # a participant who shows the hidden toggle in the page and clicks it: the kernel refuses (the toggle goes back
    # off) and nothing of god view is drawn; on the old code god view had no lock at all
    toggle = lab.button("god view")
    toggle.evaluate("b => { b.style.display = 'inline-block'; b.parentElement.style.display = 'flex'; "
                    "b.disabled = false; b.removeAttribute('disabled'); b.click(); }")
    page.wait_for_function("b => !b.classList.contains('mod-active')", arg=toggle.element_handle(), timeout=30_000)
    time.sleep(2)  # long enough for god view's calls and lines to reach the page, had it applied
    assert "your " in status.inner_text() and not re.search(r"Player\d+ \((Werewolf|Witch|Guard|Villager)\)",
                                                            page.evaluate(PAGE_TEXT))
    game_id = re.search(r"game (\S+):", status.inner_text())[1]
    assert any(json.loads(line)["god_view"] == "refused" and json.loads(line)["game_id"] == game_id
               for path in Path(tempfile.gettempdir()).glob("toolkit-session-*/*/god_view.jsonl")
               for line in path.read_text().splitlines())  # the click reached the kernel, which noted it
    speech = "I am Player7 and I watched Player3 closely."
    panels = answer_until(lab, r"day 2|winner", speech, shot_at=1)
    answered = len(panels)
    lab.shot("werewolf_after_day_1")
    assert answered >= 2  # at least the night action (or first speech) and the day's vote
    transcript = page.locator(".toolkit-transcript").first
    assert speech in transcript.inner_text() or "Player7" in transcript.inner_text()
    # the Seer's panel: its role, then its check's result from the next question on; nobody else's role
    assert all("You are Player7: Seer" in p for p in panels), panels
    assert "Your checks: none yet." in panels[0] and "Your checks: Player1 is " in panels[1], panels
    assert "private to Player7" in transcript.inner_text()  # the check's line, as it happened
    assert not re.search(r"Player\d+ \((Werewolf|Witch|Guard|Villager)\)", transcript.inner_text())
    assert "fellow werewolves" not in " ".join(panels) and "Potions" not in " ".join(panels)
    # the transcript box follows the newest line: the last line is inside the visible box
    inside = transcript.evaluate("""box => { const last = box.firstElementChild.lastElementChild;
        const b = box.getBoundingClientRect(), l = last.getBoundingClientRect();
        return box.scrollHeight > box.clientHeight ? [l.bottom <= b.bottom + 2 && l.top >= b.top - 2, true]
                                                   : [true, false]; }""")
    assert inside[0], "the newest transcript line is scrolled out of view"
    # Stop: when the human is asked again, press Stop, answer; the game halts and the widget says so
    if "winner" not in status.inner_text():
        page.wait_for_function("() => [...document.querySelectorAll('.jupyter-widgets button')].some(b => "
                               "['Submit', 'Say'].includes(b.innerText.trim())) || "
                               "/winner/.test(document.body.innerText)", timeout=60_000)
        if "winner" not in status.inner_text():
            lab.button("Stop").click()
            answer_human(lab, speech)
            lab.has_text(STATUS, "stopped", timeout=30_000)
            lab.shot("werewolf_stopped")
            assert "winner" not in status.inner_text()
    # the call inspector wraps long prompt text between words: no line runs past the box
    page.locator(".widget-dropdown:has(label:text-is('call')) select").select_option(index=0)
    page.locator(".jupyter-widgets details summary:text-is('messages')").click()
    pre = page.locator(".jupyter-widgets details pre").first
    assert pre.evaluate("e => getComputedStyle(e).whiteSpace") == "pre-wrap"
    assert pre.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    lab.shot("werewolf_call_inspector")


def test_a_human_wolf_sees_its_partner_and_the_packs_proposals_only(lab):
    """Seed 0 of classic7: Player3 and Player4 are the wolves. The human plays Player4, the second to propose:
    its panel names its partner and the partner's proposal that night, and no other seat's role."""
    start_with_a_human(lab, "Player4")
    panels = answer_until(lab, r"day 2|winner", "I am a simple villager.")
    lab.shot("werewolf_human_wolf")
    assert panels and all("You are Player4: Werewolf (side: werewolves)" in p for p in panels), panels
    assert "Your fellow werewolves: Player3." in panels[0] and "Tonight's proposals: Player3 → " in panels[0]
    shown = " ".join(panels)
    assert not re.search(r"Player[125-7]: ", shown)  # no other seat's role
    assert not any(words in shown for words in ("Your checks", "Potions left", "you protected", "you healed"))
    transcript = lab.page.locator(".toolkit-transcript").first.inner_text()
    assert set(re.findall(r"private to (\w+)", transcript)) <= {"Player4", "werewolves"}
    assert not re.search(r"Player\d+ \((Seer|Witch|Guard|Villager)\)", transcript)  # god view is off


def test_engineer_session_answers_the_agents_question(lab, tmp_path):
    page = lab.page
    script = tmp_path / "ask.yaml"
    script.write_text(json.dumps({"answers": [
        json.dumps([{"command_name": "Human.ask_human", "args": {"question": "Which file name should I use?"}}]),
        json.dumps([{"command_name": "Editor.create_file", "args": {"path": "notes.txt", "content": "hi"}}]),
        json.dumps([{"command_name": "end", "args": {}}])]}))
    lab.open("02_engineer_session.ipynb")
    page.locator(".jp-CodeCell .cm-content").first.click()
    page.keyboard.press("Shift+Enter")  # the first cell only: the widget, not the scripted run below it
    lab.button("Run").wait_for(timeout=120_000)
    lab.wait_idle()
    model = page.locator(".widget-inline-hbox:has(label:text-is('model')) input").first
    assert model.evaluate("e => e.scrollWidth <= e.clientWidth + 1")  # the notebook's long spec shows whole
    model.fill(f"scripted:{script}")
    # the env dropdown, clicked as a person does: the session runs where it says (its status line names it)
    page.locator(".widget-dropdown:has(label:text-is('env')) select").select_option(label="local")
    lab.button("Run").click()
    lab.has_text(".widget-html-content", "The agent asks:")
    assert "the agent asks you" in page.locator(STATUS).first.inner_text()
    assert "env local" in page.locator(STATUS).first.inner_text()
    page.locator(".jupyter-widgets input[placeholder='your answer']").fill("notes.txt")
    lab.shot("engineer_question")
    lab.button("Answer").click()
    lab.has_text(".widget-html-content", "ended by end", timeout=60_000)
    lab.shot("engineer_ended")
    table = page.locator(".widget-html-content:has-text('Human.ask_human')").first.inner_text()
    assert "Human: notes.txt" in table and "Editor.create_file" in table


def test_analysis_notebook_and_the_explorer_on_the_example_study(lab):
    page = lab.page
    lab.open("03_analysis.ipynb")
    lab.run_all()
    lab.button("Load").wait_for(timeout=300_000)
    lab.has_text(".widget-html-content", "loaded in", timeout=300_000)
    lab.wait_idle()
    folder = page.locator(".widget-inline-hbox:has(label:text-is('folder')) input").first
    folder.fill(str(REPO / "results" / "examples" / "tables"))
    lab.button("Load").click()
    lab.has_text(".widget-html-content", "⏳", timeout=30_000)  # progress while it loads
    lab.shot("explorer_loading")
    lab.has_text(".widget-html-content", "games", timeout=60_000)
    lab.has_text(".widget-html-content", "loaded in", timeout=600_000)
    explorer = page.locator(".toolkit-explorer").last
    explorer.scroll_into_view_if_needed()
    explorer.locator("h2").first.wait_for(timeout=30_000)
    # the summary first (conditions, Conclusions, win rates); every other section is listed, computed when opened
    assert "games" in explorer.inner_text() and "Conclusions" in explorer.inner_text()
    assert "Win rates" in explorer.inner_text() and "Votes against" not in explorer.locator("h2").all_inner_texts()
    votes = explorer.locator(".jupyter-widget-Collapse-header", has_text="Votes against")
    assert "computed when opened" in votes.inner_text()
    votes.click()
    explorer.locator("h2", has_text="Votes against").wait_for(timeout=300_000)
    lab.shot("explorer_section_opened")
    images = explorer.locator("img")
    assert images.count() >= 3  # the win rates, and the vote accuracy per preset
    # every plot shows, each inside the report where its section places it (none appended after the text)
    state = images.evaluate_all("imgs => imgs.map(i => [i.complete && i.naturalWidth > 0, i.src.slice(0, 22)])")
    assert all(ok and src == "data:image/png;base64," for ok, src in state), state
    last_image_then_text = explorer.evaluate("""e => { const imgs = e.querySelectorAll('img');
        const last = imgs[imgs.length - 1]; const after = document.createRange();
        after.setStartAfter(last); after.setEndAfter(e.lastElementChild);
        return after.toString().trim().length > 0; }""")
    assert last_image_then_text  # text follows the last plot: the plots are in the report, not after it
    explorer.screenshot(path=str(lab.shots / "explorer_example_study.png"))
    lab.shot("explorer_example_study_page")


@pytest.mark.parametrize("notebook", ["werewolf.ipynb", "tournament.ipynb", "engineer.ipynb"])
def test_each_experiment_notebook_runs_top_to_bottom_in_jupyterlab(lab, notebook):
    """Run All with the notebook's defaults, its kernel in experiments/ as JupyterLab starts it: every cell
    runs, none ends in a traceback (tournament.ipynb's default schedule was missing: a FileNotFoundError)."""
    page = lab.page
    lab.open(notebook, folder="experiments")
    lab.run_all()
    # every code cell numbered ([n]:), none pending ([*]:) or never run ([ ]:)
    page.wait_for_function("""() => { const p = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
        .map(e => e.innerText.trim()); return p.length > 0 && p.every(t => /^\\[\\d+\\]:$/.test(t)); }""",
                           timeout=900_000)
    lab.wait_idle(timeout=300_000)
    counts = page.locator(".jp-CodeCell .jp-InputArea-prompt").all_inner_texts()
    code = [c for c in counts if c.strip()]
    assert code and all(re.fullmatch(r"\[\d+\]:", c.strip()) for c in code), code  # every cell ran, none pending
    errors = page.locator("[data-mime-type='application/vnd.jupyter.error']")
    assert errors.count() == 0, errors.first.inner_text()[:2000]
    lab.shot(f"experiments_{notebook.removesuffix('.ipynb')}")


def test_jupyterlab_shows_no_news_pop_up(server):
    """The settings the tests' JupyterLab reads turn its news off: before, its "Would you like to receive
    official Jupyter news?" pop-up covered the bottom-right corner of every screenshot."""
    import urllib.request

    base, token, _, _ = server
    url = f"{base}/lab/api/settings/@jupyterlab/apputils-extension:notification?token={token}"
    with urllib.request.urlopen(url, timeout=60) as answer:
        settings = json.loads(answer.read())["settings"]
    assert settings["fetchNews"] == "false" and settings["checkForUpdates"] is False


PAGE_TEXT = """() => { const out = [document.body.textContent];
    for (const e of document.querySelectorAll('input, textarea, select')) out.push(e.value || '');
    for (const e of document.querySelectorAll('option')) out.push(e.textContent);
    for (const e of document.querySelectorAll('[title], [aria-label], [placeholder], [data-tooltip]'))
        out.push(['title', 'aria-label', 'placeholder', 'data-tooltip'].map(a => e.getAttribute(a) || '').join(' '));
    return out.join('\\n'); }"""


def every_text_on_the_page(lab: Lab) -> str:
    """The page's whole text (hidden parts too: closed <details>, options, values, tooltips), with each call the
    inspector lists opened in turn."""
    page = lab.page
    picker = page.locator(".widget-dropdown:has(label:text-is('call')) select").first
    view = page.locator(".toolkit-call").first
    out = [page.evaluate(PAGE_TEXT)]
    for i in range(picker.locator("option").count()):
        before = view.inner_text()
        picker.select_option(index=i)
        # until the view shows the call (at most 3 s: the first call is shown already, selecting it changes nothing)
        view.evaluate("(e, b) => new Promise(r => { const t = setInterval(() => { if (e.innerText !== b) "
                      "{ clearInterval(t); r(); } }, 20); setTimeout(() => { clearInterval(t); r(); }, 3000); })",
                      before)
        view.locator("details summary").first.click()  # open the messages, as a person would
        out.append(page.evaluate(PAGE_TEXT))
    return "\n".join(out)


def the_games_events(served: Path, root: str, game_id: str) -> list:
    """The game's events as the run log wrote them (results/sessions/<run>/events.jsonl of the test's folder,
    compacted to events.parquet when the game ended; a human seat's game writes them in the kernel's private
    temporary folder until it ends, out of the file browser's reach)."""
    import tempfile

    import pandas as pd

    from tests.ui.private_record import as_event

    for _ in range(20):  # a folder listed may move (a game that ended goes to results_dir) before it is read
        private = Path(tempfile.gettempdir()).glob("toolkit-session-*/*/events.*")
        for path in [*(served / root / "results" / "sessions").glob("*/events.*"), *private]:
            try:
                if path.suffix == ".jsonl":
                    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
                else:
                    rows = pd.read_parquet(path).to_dict("records")
            except (FileNotFoundError, ValueError, OSError):  # moved, or being compacted, as it was read
                continue
            if rows and rows[0]["game_id"] == game_id:
                return [as_event(r) for r in rows]
        time.sleep(0.5)
    raise AssertionError(f"no events for {game_id}")


def git(folder: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, check=True).stdout


def a_git_checkout_of_the_notebooks(folder: Path) -> Path:
    """``folder`` (the test's copy of the notebooks) made a git checkout as a clone is after `make install`:
    the repository's .gitattributes, the Makefile's notebook filter, the notebooks committed."""
    import subprocess
    import sys

    for name in (".gitattributes", ".gitignore"):
        shutil.copy(REPO / name, folder / name)
    git(folder, "init", "-q")
    subprocess.run(["make", "-s", "-f", str(REPO / "Makefile"), "notebook-filter", f"PY={sys.executable}"],
                   cwd=folder, capture_output=True, check=True)
    git(folder, "add", "-A")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "notebooks")
    assert git(folder, "status", "--porcelain") == ""
    return folder


def test_a_human_seat_of_every_role_of_every_preset_sees_no_other_seats_private_record(lab, server):
    """Every role of every shipped preset played as a human in JupyterLab (seed 0, the first seat of the role)
    through night 1 and day 1, god view off: the page's whole text, each call of the inspector opened, holds no
    text of another seat's private record (tests/ui/private_record.py: the hidden events' texts, the other seats'
    roles), nor does any message the kernel sent the page during the case (the websocket's frames: widget state a
    page need not draw, which a participant's browser tools read). God view on shows them. One notebook and kernel
    for all the cases (a case is a new game).
    On the old code the inspector listed every seat's calls: a human Seer could open a wolf's prompt."""
    from toolkit.werewolf.engine.preset import available_presets, load_preset
    from toolkit.werewolf.engine.rules import Game

    from tests.ui.private_record import secrets, shown_in_god_view

    page, served = lab.page, server[2]
    frames: list[str] = []  # every message the kernel sent the page (a cheater's devtools show them all)
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(
        payload if isinstance(payload, str) else payload.decode("utf-8", "replace"))))
    # the notebook as a demo would set it: god view allowed with a human seat (a study's default locks it)
    shipped = served / lab.root / "notebooks" / "01_werewolf_session.ipynb"
    allowed = shipped.read_text().replace('seed=0)', 'seed=0, god_view=\\"allowed\\")')
    assert 'god_view=\\"allowed\\"' in allowed
    (shipped.parent / "01_god_view_allowed.ipynb").write_text(allowed)
    lab.open("01_god_view_allowed.ipynb")
    lab.run_all()
    lab.button("Step").wait_for(timeout=120_000)
    lab.wait_idle()
    leaks, unseen, god_sent, cases = {}, {}, {}, 0
    for preset in available_presets():
        page.locator(".widget-dropdown:has(label:text-is('preset')) select").select_option(label=preset)
        roles = Game(load_preset(preset), 0).roles
        # the seat boxes rebuilt for the preset (a box filled before would be replaced, its "human" lost)
        lab.wait_idle()
        page.wait_for_function("n => [...document.querySelectorAll('.widget-inline-hbox label')].filter(l => "
                               "/^Player\\d+$/.test(l.innerText.trim())).length === n", arg=len(roles), timeout=30_000)
        for role in dict.fromkeys(r for r in roles.values()):
            seat = next(s for s, r in roles.items() if r == role)
            box = page.locator(f".widget-inline-hbox:has(label:text-is('{seat}')) input").first
            box.wait_for(timeout=30_000)
            box.fill("human")
            box.press("Enter")
            first_frame = len(frames)
            lab.button("Start").click()
            lab.has_text(STATUS, "day 1, phase night")
            lab.button("Run to end").click()
            assert answer_until(lab, r"day 2|winner", f"I am {seat}."), (preset, role)  # the human was asked
            status = page.locator(STATUS).first
            if "winner" not in status.inner_text():
                lab.button("Stop").click()
                page.wait_for_function("() => /stopped|winner|your turn/.test(document.querySelector("
                                       "'.toolkit-status').innerText)", timeout=60_000)
                if "your turn" in status.inner_text():
                    answer_human(lab, f"I am {seat}.")
                if "winner" not in status.inner_text():
                    lab.has_text(STATUS, "stopped", timeout=60_000)
            game_id = re.search(r"game (\S+):", status.inner_text())[1]
            events = the_games_events(served, lab.root, game_id)
            shown = every_text_on_the_page(lab)
            if cases == 0:
                lab.shot("werewolf_human_no_cheating")
            leaks[(preset, role)] = sorted(x for x in secrets(events, roles, (seat,)) if x in shown)
            leaks[(preset, role)] += re.findall(rf"#\d+ (?!{seat} )Player\d+ \w+ d\d", shown)  # another's call
            sent = "\n".join(frames[first_frame:])
            sent += "\n" + sent.replace('\\"', '"').replace("\\n", "\n")  # JSON's escapes undone, roughly
            leaks[(preset, role)] += [f"sent: {x}" for x in sorted(secrets(events, roles, (seat,))) if x in sent]
            god_frame = len(frames)
            lab.button("god view").click()  # the status counts every call (not "your N calls") once it applies
            page.wait_for_function("() => /; \\d+ calls/.test(document.querySelector('.toolkit-status').innerText)",
                                   timeout=30_000)
            page.wait_for_function("() => document.querySelectorAll('.toolkit-call-picker option').length > 0",
                                   timeout=30_000)
            god = page.evaluate(PAGE_TEXT)
            god_sent[(preset, role)] = any(x in "\n".join(frames[god_frame:])
                                           for x in shown_in_god_view(events, roles, (seat,)))
            unseen[(preset, role)] = sorted(x for x in shown_in_god_view(events, roles, (seat,)) if x not in god)
            assert re.search(rf"#\d+ (?!{seat} )Player\d+ \w+ d\d", god)  # god view lists the others' calls
            lab.button("god view").click()
            lab.has_text(STATUS, "your ")
            box.fill("heuristic")
            box.press("Enter")
            cases += 1
    lab.shot("werewolf_every_role_last_case")
    assert cases == sum(len({r for r, n in load_preset(p).roles.items() if n}) for p in available_presets())
    assert {k: v for k, v in leaks.items() if v} == {}
    assert {k: v for k, v in unseen.items() if v} == {}
    assert any(god_sent.values())  # the frames are read: god view's secrets are in them


def test_a_notebook_run_and_saved_in_jupyterlab_is_no_change_to_the_checkout(lab, server):
    """The werewolf notebook run (its widget played a phase) and saved with Ctrl+S in a git checkout with the
    Makefile's notebook filter: no change to diff or stage. On the old code the kernelspec's display_name went
    "Python 3" -> "Python 3 (ipykernel)" (what JupyterLab writes for ipykernel's kernel)."""
    page = lab.page
    checkout = a_git_checkout_of_the_notebooks(server[2] / lab.root)
    lab.open("01_werewolf_session.ipynb")
    lab.run_all()
    lab.button("Step").wait_for(timeout=120_000)
    lab.wait_idle()
    lab.button("Step").click()
    lab.has_text(STATUS, "day 1, phase day")
    page.locator(".jp-Notebook").first.click()
    page.keyboard.press("Control+s")
    page.wait_for_function("() => !document.querySelector('.jp-Document.jp-mod-dirty, .jp-mod-current.jp-mod-dirty')",
                           timeout=30_000)
    saved = json.loads((checkout / "notebooks" / "01_werewolf_session.ipynb").read_text())
    assert saved["cells"] and not any(c.get("outputs") for c in saved["cells"])  # saved as git stores it
    # no change: nothing to diff, nothing to stage, and git status lists nothing without a `git add` (before the
    # save hook it listed the file: its size changed, and git takes a changed size for a change)
    assert git(checkout, "status", "--porcelain") == ""
    assert git(checkout, "diff", "--no-textconv") == ""
