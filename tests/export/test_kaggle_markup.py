"""``export kaggle --html`` runs no script a model or an imported replay supplies: Kaggle's visualizer puts a seat's
``display_name`` (the model spec), speeches and other texts into its page as HTML, so the export makes every text of
a replay inert. A hostile model spec and hostile speeches (played over real HTTP against the loopback server) and a
hostile agent id in an imported Kaggle replay are exported through the command line and the page is opened in
headless Chromium: the hostile text shows as it reads (``<`` and ``>`` as full-width look-alikes), and no script of
it runs."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("kaggle_environments", reason="needs kaggle-environments (make test installs it, --no-deps)")

PAYLOAD = "<img src=x onerror=window.__pwned=1>"
QUOTED = '" onmouseover="window.__pwned=1" x="'  # breaks out of an attribute (title="${name}", alt="${name}")


def toolkit(*args, cwd):
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run([sys.executable, "-m", "toolkit", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def runs_no_script(browser, page_path, shown: str) -> str:
    """Opens the page offline, waits until ``shown`` is on screen as text (or a script ran), hovers over what has
    a title or is an image, and checks no script ran; the page text."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.route("http*://**", lambda route: route.abort())
    page.goto(page_path.as_uri())
    text = page.wait_for_function("(shown) => { const t = document.body.innerText; "
                                  "return (window.__pwned || t.includes(shown)) ? t : false; }", arg=shown,
                                  timeout=120_000).json_value()
    for element in page.query_selector_all("img, [title]")[:50]:  # an injected handler would fire now
        try:
            element.hover(timeout=500)
        except Exception:  # hidden or detached: nothing to hover
            pass
    pwned = page.evaluate("window.__pwned")
    page.close()
    assert pwned is None, "the replay ran script in Kaggle's visualizer"
    return text


def test_a_hostile_model_spec_and_speech_run_no_script_in_kaggles_viewer(tmp_path, server, browser):
    server.say(*[json.dumps({"speech": f"I trust {PAYLOAD} and {QUOTED}", "target": "Player1", "thought": "x"})]
               * 300)
    hostile = f"openai:{PAYLOAD}@{server.base_url}"  # the loopback server answers any model name
    toolkit("play", "--seat", f"Player3={hostile}", "--seat", f"Player5=openai:say@{server.base_url}", "--seed", "2",
            "--out", "res", "--quiet", cwd=tmp_path)
    toolkit("export", "kaggle", "res", "--out", "kx", "--html", cwd=tmp_path)
    [page] = (tmp_path / "kx").glob("*.kaggle.html")
    text = runs_no_script(browser, page, "onerror=window.__pwned=1")
    assert "\uff1cimg src=x onerror=window.__pwned=1\uff1e" in text  # the spec is shown as it reads, as text
    assert "&lt;" not in text


def test_a_hostile_agent_id_in_an_imported_replay_runs_no_script(tmp_path, browser):
    from toolkit.werewolf.kaggle import harness

    replay = harness.play("default7", 1)
    for i, agent in enumerate(replay["configuration"]["agents"]):
        agent.update(agent_id=PAYLOAD, display_name=f"{PAYLOAD}{QUOTED}{i}")
    (tmp_path / "replays").mkdir()
    (tmp_path / "replays" / "hostile.json").write_text(json.dumps(replay))
    toolkit("import", "kaggle", "replays", "--out", "res", cwd=tmp_path)
    toolkit("export", "kaggle", "res", "--out", "kx", "--html", cwd=tmp_path)
    [page] = (tmp_path / "kx").glob("*.kaggle.html")
    assert "&lt;" not in runs_no_script(browser, page, "onerror=window.__pwned=1")
