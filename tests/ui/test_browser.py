"""A real browser: JupyterLab on 127.0.0.1 with a token, Debian's Chromium driven by Playwright, the
werewolf notebook run, Step clicked, and the transcript seen to grow. JupyterLab serves a copy of the
notebook from a temporary folder (its tables go to that folder's results/); the screenshot is kept in
$TOOLKIT_ARTIFACTS when set, else beside it (CI installs chromium; elsewhere the test needs /usr/bin/chromium)."""

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"

if not Path(CHROMIUM).exists():
    if os.environ.get("CI"):
        raise RuntimeError("CI must install Debian's chromium for the browser test (.ci/run does)")
    pytest.skip("Debian's chromium is not installed here (apt-get install -y chromium)", allow_module_level=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def jupyter(tmp_path):
    port, token = free_port(), secrets.token_hex(16)
    served = tmp_path / "served"
    (served / "notebooks").mkdir(parents=True)
    shutil.copy(REPO / "notebooks" / "01_werewolf_session.ipynb", served / "notebooks")
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt")}
    proc = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
                             f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={served}", "--allow-root",
                             "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
            break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        raise RuntimeError("JupyterLab did not start")
    yield base, token
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_werewolf_notebook_in_jupyterlab(jupyter, tmp_path):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    base, token = jupyter
    ARTIFACTS = Path(os.environ.get("TOOLKIT_ARTIFACTS") or tmp_path / "artifacts")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(f"{base}/lab/tree/notebooks/01_werewolf_session.ipynb?token={token}")
            page.wait_for_selector(".jp-NotebookPanel", timeout=120_000)
            dialog = page.locator(".jp-Dialog:has-text('Select Kernel') button:has-text('Select')")
            try:  # JupyterLab may ask which kernel to start; the notebook's own (python3) is preselected
                dialog.wait_for(timeout=5_000)
                dialog.click()
            except PlaywrightTimeout:
                pass
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=120_000)
            page.click("li.lm-MenuBar-item:has-text('Run')")
            page.click(".lm-Menu-item:has-text('Run All Cells')")
            step = page.locator(".jupyter-widgets button:has-text('Step')").first
            step.wait_for(timeout=120_000)
            transcript = page.locator(".widget-html-content:has-text('Night 1 falls')").first
            transcript.wait_for(timeout=60_000)
            before = transcript.inner_text().count("\n")
            for _ in range(4):
                step.click()
                page.wait_for_timeout(700)
            page.wait_for_function(
                "n => [...document.querySelectorAll('.widget-html-content')]"
                ".some(e => e.innerText.includes('Night 1 falls') && e.innerText.split('\\n').length > n)",
                arg=before + 3, timeout=60_000)
            after = transcript.inner_text().count("\n")
        finally:
            page.screenshot(path=str(ARTIFACTS / "jupyterlab_werewolf_session.png"), full_page=True)
        browser.close()
    assert after > before + 3
    assert (ARTIFACTS / "jupyterlab_werewolf_session.png").stat().st_size > 20_000
