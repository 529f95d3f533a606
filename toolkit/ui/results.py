"""The results explorer: pick a results folder and see its report (the tables and plots that
``toolkit report`` writes, made by the same function)."""

from __future__ import annotations

import html
import tempfile
from pathlib import Path

import ipywidgets as W
from IPython.display import Markdown, display

from toolkit.analysis.report import write_report
from toolkit.record.load import load


class ResultsExplorer(W.VBox):
    def __init__(self, folder: str = "results"):
        self.folder = W.Text(value=folder, description="folder")
        self.load_button = W.Button(description="Load")
        self.summary = W.HTML()
        self.report = W.Output()
        self.images = W.VBox()
        self.load_button.on_click(lambda _: self.load())
        super().__init__([W.HBox([self.folder, self.load_button]), self.summary, self.report, self.images])

    def load(self) -> None:
        folder = Path(self.folder.value)
        self.report.clear_output()
        self.images.children = []
        if not folder.is_dir():
            self.summary.value = f"<span style='color:#c0392b'>no folder {html.escape(str(folder))}</span>"
            return
        self.tables = load(folder)
        t = self.tables
        self.summary.value = (f"{len(t.runs)} runs, {len(t.games)} games, {len(t.sessions)} sessions, "
                              f"{len(t.calls)} model calls")
        with tempfile.TemporaryDirectory() as out:
            written = write_report(folder, out)
            self.markdown = next((p.read_text() for p in written if p.suffix == ".md"), "")
            self.images.children = [W.Image(value=p.read_bytes(), format="png") for p in written if p.suffix == ".png"]
        with self.report:
            display(Markdown(self.markdown))
