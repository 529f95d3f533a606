"""JupyterLab in a temporary folder and Debian's Chromium driven by Playwright, for the browser tests.

``serve(tmp)`` starts JupyterLab on 127.0.0.1 with a token over ``tmp/served``; ``copy_notebooks(folder)`` lays
the repository's notebooks out in a folder of it (each test its own: their tables go to that folder's
results/); ``Lab`` opens a notebook there, runs its cells and finds widgets by what they show.
Screenshots go to ``$SCREENSHOT_DIR`` when set (CI keeps that folder), else to the test's tmp folder."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("TOOLKIT_TEST_CHROMIUM", "/usr/bin/chromium")  # Debian's; a test points it elsewhere
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_notebooks(folder: Path) -> None:
    """The repository's notebooks in ``folder/notebooks``, the experiments' in ``folder/experiments``."""
    shutil.copytree(REPO / "notebooks", folder / "notebooks")
    (folder / "experiments").mkdir()
    for nb in (REPO / "experiments").glob("*.ipynb"):
        shutil.copy(nb, folder / "experiments" / nb.name)


@contextmanager
def serve(tmp: Path):
    """JupyterLab serving ``tmp/served`` (empty: each test copies the notebooks into a folder of its own)."""
    port, token = free_port(), secrets.token_hex(16)
    served = tmp / "served"
    served.mkdir()
    # no news pop-up ("Would you like to receive official Jupyter news?") over a corner of every screenshot
    notification = tmp / "cfg" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false",
                                                                               "checkForUpdates": False}))
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp / "cfg"), "JUPYTER_RUNTIME_DIR": str(tmp / "rt"),
           "JUPYTER_DATA_DIR": str(tmp / "data"), "PYTHONPATH": str(REPO)}
    log = open(tmp / "jupyterlab.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
                             f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={served}", "--allow-root",
                             "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                             # the save hook `make install` names in the venv's Jupyter config, named here so the
                             # tests do not depend on whether this venv was made by `make install`
                             "--ContentsManager.pre_save_hook=toolkit.ui.notebook_saves.strip_before_save"],
                            cwd=served, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"JupyterLab did not start; see {tmp / 'jupyterlab.log'}")
                time.sleep(0.3)
        yield base, token, served
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def screenshot_dir(tmp: Path) -> Path:
    folder = Path(os.environ.get("SCREENSHOT_DIR") or os.environ.get("TOOLKIT_ARTIFACTS") or tmp / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Lab:
    """One notebook open in JupyterLab in one Chromium page. ``root`` is the test's folder in the served tree
    (its notebooks' copies) and names its JupyterLab workspace, so no tab of another test is restored."""

    def __init__(self, page, base: str, token: str, shots: Path, root: str = ""):
        self.page, self.base, self.token, self.shots, self.root = page, base, token, shots, root

    def open(self, notebook: str, folder: str = "notebooks") -> None:
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        path = "/".join(p for p in (self.root, folder, notebook) if p)
        workspace = f"/workspaces/{self.root}" if self.root else ""
        self.page.goto(f"{self.base}/lab{workspace}/tree/{path}?token={self.token}")
        self.page.wait_for_selector(".jp-NotebookPanel", timeout=120_000)
        dialog = self.page.locator(".jp-Dialog:has-text('Select Kernel') button:has-text('Select')")
        try:  # JupyterLab may ask which kernel to start; the notebook's own (python3) is preselected
            dialog.wait_for(timeout=5_000)
            dialog.click()
        except PlaywrightTimeout:
            pass
        self.wait_idle()

    def wait_idle(self, timeout: float = 300_000) -> None:
        """Until the kernel has started and is idle (the status bar says so; the toolbar's indicator reads
        idle before a kernel is there)."""
        self.page.locator(".jp-StatusBar-Item:has-text('| Idle')").first.wait_for(timeout=timeout)
        self.page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=timeout)

    def run_all(self) -> None:
        self.page.click("li.lm-MenuBar-item:has-text('Run')")
        self.page.click(".lm-Menu-item:has-text('Run All Cells')")

    def button(self, text: str, nth: int = 0):
        return self.page.locator(f".jupyter-widgets button:text-is('{text}')").nth(nth)

    def has_text(self, selector: str, text: str, timeout: float = 60_000) -> None:
        """Wait until an element matching ``selector`` shows ``text``."""
        self.page.locator(selector).filter(has_text=text).first.wait_for(timeout=timeout)

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


def end_kernels(base: str, token: str) -> None:
    """Shut down every kernel the server runs (a test's notebooks: nothing of it runs on into the next test)."""
    headers = {"Authorization": f"token {token}"}
    with urllib.request.urlopen(urllib.request.Request(f"{base}/api/kernels", headers=headers), timeout=30) as r:
        kernels = json.load(r)
    for kernel in kernels:
        urllib.request.urlopen(urllib.request.Request(f"{base}/api/kernels/{kernel['id']}", method="DELETE",
                                                      headers=headers), timeout=60).close()


@contextmanager
def chromium():
    """Debian's Chromium, headless, driven by Playwright: a test takes a page in a context of its own."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def fresh_page(browser):
    """A page in a new browser context (its own cookies and storage)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1100})
    try:
        yield context.new_page()
    finally:
        context.close()
