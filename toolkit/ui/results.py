"""The results explorer: pick a results folder and see its report (the tables and plots that
``toolkit report`` writes, made by the same function), each plot where the report places it; then pick a game
or an engineer session to see its HTML replay inline (``toolkit.export.html.show``, the page ``toolkit view``
writes), with a link that saves the page.

Loading a large study takes a while (the committed example: about a minute on two busy cores): the
progress line says which stage is running and for how long; Load runs it off the kernel's main thread
so that the rest of the notebook stays responsive."""

from __future__ import annotations

import base64
import html
import re
import tempfile
import threading
import time
from pathlib import Path

import ipywidgets as W
from IPython.display import HTML, Markdown

from toolkit.analysis.report import write_report
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
        self.thread: threading.Thread | None = None
        self.load_button.on_click(lambda _: self.load_in_background())
        self.view_button.on_click(lambda _: self.view())
        super().__init__([W.HBox([self.folder, self.load_button]), self.progress, self.summary,
                          W.HBox([self.pick, self.view_button]), self.replay, self.report])
        self.add_class("toolkit-explorer")

    def _stage(self, text: str, started: float) -> None:
        self.progress.value = (f"<span class='toolkit-busy'>⏳ {html.escape(text)} "
                               f"({time.monotonic() - started:.0f} s so far)</span>")

    def load(self) -> None:
        """Read the folder and show its report (blocks until done; the Load button runs it in a thread)."""
        folder = Path(self.folder.value)
        self.report.outputs = self.replay.outputs = ()
        self.summary.value, self.markdown, self.images, self.tables = "", "", {}, None
        self.pick.options, self.pick.value, self.view_button.disabled = (), "", True
        if not folder.is_dir():
            self.progress.value = ""
            self.summary.value = f"<span style='color:#c0392b'>no folder {html.escape(str(folder))}</span>"
            return
        started = time.monotonic()
        self.load_button.disabled = True
        try:
            self._stage(f"reading the tables in {folder}", started)
            self.tables = t = load(folder)
            self.summary.value = (f"{len(t.runs)} runs, {len(t.games)} games, {len(t.sessions)} sessions, "
                                  f"{len(t.calls)} model calls")
            self.pick.options = tuple(t.games["game_id"]) + tuple(t.sessions["session_id"])
            self.view_button.disabled = not self.pick.options
            self._stage("computing the report (rates, intervals, ratings) and drawing its plots", started)
            with tempfile.TemporaryDirectory() as out:
                written = write_report(folder, out)
                self.markdown = next((p.read_text() for p in written if p.suffix == ".md"), "")
                self.images = {p.name: p.read_bytes() for p in written if p.suffix == ".png"}
            # append_display_data, not `with self.report`: the capture does not work from a thread
            self.report.append_display_data(Markdown(inline_images(self.markdown, self.images)))
            self.progress.value = f"loaded in {time.monotonic() - started:.0f} s"
        except Exception as exc:
            self.progress.value = f"<span style='color:#c0392b'>{html.escape(f'{type(exc).__name__}: {exc}')}</span>"
            raise
        finally:
            self.load_button.disabled = False

    def view(self, ident: str | None = None) -> Replay | None:
        """Show the replay of the picked game or session below the picker, with a link that saves it."""
        ident = (ident or self.pick.value).strip()
        self.replay.outputs = ()
        t = self.tables
        if t is not None and ident in set(t.games["game_id"]):
            replay = show(t, game=ident)
        elif t is not None and ident in set(t.sessions["session_id"]):
            replay = show(t, session=ident, folder=self.folder.value)
        else:
            what = "load a folder first" if t is None else f"no game or session {ident!r} in {self.folder.value}"
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
