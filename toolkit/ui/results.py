"""The results explorer: pick a results folder and see its report (the tables and plots that
``toolkit report`` writes, made by the same function), each plot where the report places it; then pick a game
or an engineer session to see its HTML replay inline (``toolkit.export.html.show``, the page ``toolkit view``
writes), with a link that saves the page.

Computing a large study's report takes a while (the committed example: minutes on two busy cores), so a report
is kept in a cache (``TOOLKIT_REPORT_CACHE``, default ``~/.cache/llm-agent-toolkit/reports``) under a fingerprint of
the folder's files (names, sizes, modification times) and of the analysis code: opened again, it shows at once
(benchmarks/explorer_open.py). The progress line says which stage is running and for how long; Load runs off the
kernel's main thread so that the rest of the notebook stays responsive. A relative folder is looked for in the
notebook's folder (the kernel's working folder), then in the repository, and the progress line says which; a
folder that is not there leaves the report shown in place and says so in one line."""

from __future__ import annotations

import base64
import hashlib
import html
import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path

import ipywidgets as W
from IPython.display import HTML, Markdown

import toolkit
from toolkit.analysis.report import write_report
from toolkit.core import data
from toolkit.export.html import Replay, show
from toolkit.record.load import load

IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+\.png)\)")


def inline_images(markdown: str, images: dict[str, bytes]) -> str:
    """The report's ``![alt](name.png)`` links as embedded images (a notebook cannot follow a link to a
    temporary folder); a link to a file the report did not write is left as it is."""
    def embed(m: re.Match) -> str:
        data = images.get(m.group(2))
        if data is None:
            return m.group(0)
        return f"![{m.group(1)}](data:image/png;base64,{base64.b64encode(data).decode()})"
    return IMAGE.sub(embed, markdown)


def resolve(text: str) -> tuple[Path | None, str]:
    """The folder a typed path names, and how it was found: an absolute path as it is; a relative one in the
    current folder (a notebook's kernel runs in the notebook's folder), else in the repository. None (and the
    one line saying where it looked) when there is no such folder."""
    typed = Path(str(text).strip()).expanduser()
    if typed.is_absolute():
        return (typed, "") if typed.is_dir() else (None, f"no folder {typed}")
    here, repo = Path.cwd(), data.root()
    if (here / typed).is_dir():
        return (here / typed).resolve(), f"{typed}: from the notebook's folder, {here}"
    if (repo / typed).is_dir():
        return (repo / typed).resolve(), f"{typed}: from the repository, {repo}"
    return None, (f"no folder {typed}: a relative path is looked for in the notebook's folder ({here}), then in "
                  f"the repository ({repo})")


def cache_root() -> Path:
    """Where reports are kept (``TOOLKIT_REPORT_CACHE``; the response cache, TOOLKIT_CACHE_DIR, is another)."""
    return Path(os.environ.get("TOOLKIT_REPORT_CACHE") or Path.home() / ".cache" / "llm-agent-toolkit" / "reports")


def fingerprint(folder: Path) -> str:
    """What a report depends on, cheaply: every file below ``folder`` (relative name, size, modification time)
    and the analysis code that computes it (the same for the code's files and the toolkit's version)."""
    h = hashlib.sha256(str(folder.resolve()).encode())
    code = Path(toolkit.__file__).parent
    for base, files in ((folder, sorted(p for p in folder.rglob("*") if p.is_file())),
                        (code, sorted([*(code / "analysis").glob("*.py"), code / "record" / "load.py"]))):
        for p in files:
            st = p.stat()
            h.update(f"{p.relative_to(base)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    h.update(str(getattr(toolkit, "__version__", "")).encode())
    return h.hexdigest()[:32]


def cached(folder: Path) -> Path | None:
    """The cache's copy of ``folder``'s report (a folder holding summary.md and its plots), or None."""
    entry = cache_root() / fingerprint(folder)
    return entry if (entry / "summary.md").is_file() else None


def cached_report(folder: Path) -> Path:
    """``folder``'s report in the cache, computed (``write_report``) and kept there when it was not."""
    entry = cache_root() / fingerprint(folder)
    if not (entry / "summary.md").is_file():
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=entry.parent, prefix=".partial-"))
        try:
            write_report(folder, tmp)
            shutil.rmtree(entry, ignore_errors=True)
            os.replace(tmp, entry)  # whole or not at all: a report killed half-way is never read back
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return entry


class ResultsExplorer(W.VBox):
    def __init__(self, folder: str = "results"):
        self.folder = W.Text(value=folder, description="folder", layout=W.Layout(width="60%"))
        self.load_button = W.Button(description="Load")
        self.progress = W.HTML()
        self.summary = W.HTML()
        self.report = W.Output()
        self.pick = W.Combobox(placeholder="a game_id or session_id (load first)", description="replay",
                               ensure_option=True, layout=W.Layout(width="60%"))
        self.view_button = W.Button(description="View", disabled=True)
        self.replay = W.Output()
        self.markdown = ""
        self.images: dict[str, bytes] = {}
        self.tables = None
        self.shown: Path | None = None  # the folder whose report is shown
        self.thread: threading.Thread | None = None
        self.load_button.on_click(lambda _: self.load_in_background())
        self.view_button.on_click(lambda _: self.view())
        super().__init__([W.HBox([self.folder, self.load_button]), self.progress, self.summary,
                          W.HBox([self.pick, self.view_button]), self.replay, self.report])
        self.add_class("toolkit-explorer")

    def _stage(self, text: str, started: float) -> None:
        self.progress.value = (f"<span class='toolkit-busy'>⏳ {html.escape(text, quote=False)} "
                               f"({time.monotonic() - started:.0f} s so far)</span>")

    def load(self) -> None:
        """Read the folder and show its report (blocks until done; the Load button runs it in a thread). A folder
        that is not there changes nothing but the progress line."""
        folder, how = resolve(self.folder.value)
        if folder is None:
            still = f"; still showing {self.shown}" if self.shown else ""
            self.progress.value = f"<span style='color:#c0392b'>{html.escape(how + still, quote=False)}</span>"
            return
        self.report.outputs = self.replay.outputs = ()
        self.summary.value, self.markdown, self.images, self.tables, self.shown = "", "", {}, None, None
        self.pick.options, self.pick.value, self.view_button.disabled = (), "", True
        started = time.monotonic()
        where = f" ({how})" if how else ""
        self.load_button.disabled = True
        try:
            entry = cached(folder)
            if entry is not None:  # shown at once; the tables (for the replays) are read after
                self._show(entry)
                shown_in = time.monotonic() - started
                self._stage(f"report shown from the cache ({shown_in:.1f} s); reading the tables for the replays",
                            started)
                self._read_tables(folder)
            else:  # the counts first (seconds), then the report (minutes for a large study)
                self._stage(f"reading the tables in {folder}{where}", started)
                self._read_tables(folder)
                self._stage("computing the report (rates, intervals, ratings) and drawing its plots; kept in the "
                            "cache for the next time", started)
                self._show(cached_report(folder))
                shown_in = time.monotonic() - started
            self.progress.value = html.escape(
                f"loaded in {time.monotonic() - started:.0f} s (report {'from the cache' if entry else 'computed'} "
                f"and shown after {shown_in:.1f} s){where}", quote=False)
        except Exception as exc:
            self.progress.value = f"<span style='color:#c0392b'>{html.escape(f'{type(exc).__name__}: {exc}')}</span>"
            raise
        finally:
            self.load_button.disabled = False

    def _show(self, entry: Path) -> None:
        self.markdown = (entry / "summary.md").read_text()
        self.images = {p.name: p.read_bytes() for p in entry.glob("*.png")}
        # append_display_data, not `with self.report`: the capture does not work from a thread
        self.report.append_display_data(Markdown(inline_images(self.markdown, self.images)))

    def _read_tables(self, folder: Path) -> None:
        self.tables = t = load(folder)
        self.shown = folder
        self.summary.value = (f"{len(t.runs)} runs, {len(t.games)} games, {len(t.sessions)} sessions, "
                              f"{len(t.calls)} model calls")
        self.pick.options = tuple(t.games["game_id"]) + tuple(t.sessions["session_id"])
        self.view_button.disabled = not self.pick.options

    def view(self, ident: str | None = None) -> Replay | None:
        """Show the replay of the picked game or session below the picker, with a link that saves it."""
        ident = (ident or self.pick.value).strip()
        self.replay.outputs = ()
        t = self.tables
        if t is not None and ident in set(t.games["game_id"]):
            replay = show(t, game=ident)
        elif t is not None and ident in set(t.sessions["session_id"]):
            replay = show(t, session=ident, folder=str(self.shown))
        else:
            what = "load a folder first" if t is None else f"no game or session {ident!r} in {self.shown}"
            self.replay.append_display_data(HTML(f"<span style='color:#c0392b'>{html.escape(what)}</span>"))
            return None
        self.replay.append_display_data(HTML(f"save this replay: {replay.link()}"))
        self.replay.append_display_data(replay)
        return replay

    def load_in_background(self) -> threading.Thread:
        """What Load does: ``load`` in a thread, one at a time."""
        if self.thread is None or not self.thread.is_alive():
            self.thread = threading.Thread(target=self._load_quietly, name="results-explorer", daemon=True)
            self.thread.start()
        return self.thread

    def _load_quietly(self) -> None:
        try:
            self.load()
        except Exception:  # shown in the progress line; a thread's traceback would go nowhere a reader sees
            pass
