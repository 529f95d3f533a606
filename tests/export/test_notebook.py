"""The replay inline in a notebook: a real notebook, executed in a real kernel by nbclient, displays
``toolkit.export.html.show(...)``; its text/html output, opened in headless Chromium, holds the page in an iframe
whose vote matrix counts the ballots and whose god-view toggle reveals the roles."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_notebook_shows_the_replay_inline(game_folder, game, browser, tmp_path):
    import nbformat  # here, not at the top: importing it costs ~3 s, paid by every pytest run that collects this file
    from nbclient import NotebookClient

    results, gid = game
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"import sys\nsys.path.insert(0, {str(ROOT)!r})  # this tree's toolkit"),
                nbformat.v4.new_code_cell("from toolkit.export.html import show\nfrom toolkit.record.load import load\n"
                                          f"results = load({str(game_folder)!r})"),
                nbformat.v4.new_code_cell(f"show(results, game={gid!r}, height=900)")]
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    output, = nb.cells[2].outputs
    assert output.output_type == "execute_result" and "text/html" in output.data
    nbformat.write(nb, tmp_path / "replay.ipynb")

    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.set_content(f"<html><body>{output.data['text/html']}</body></html>")
    frame = page.frame_locator("iframe.toolkit-replay")
    ballots = results.events[(results.events["kind"] == "vote") & (results.events["day"] == 1)]
    matrix = frame.locator("#votes-day-1")
    assert matrix.is_visible()
    assert matrix.locator("td.first").count() == len(ballots[ballots["phase"] == "day_vote"])
    role = frame.locator("#seats td.role").first
    assert not role.is_visible()
    frame.locator("#god-view").check()  # the page's own script runs inside the sandboxed iframe
    assert role.is_visible() and role.inner_text() == results.players.set_index("seat").loc[
        frame.locator("#seats tr.seat").first.get_attribute("data-seat"), "role"]
    page.screenshot(path=str(tmp_path / "notebook_replay.png"))
    assert [u for u in requests if not u.startswith(("about:", "data:"))] == []  # nothing leaves the page
