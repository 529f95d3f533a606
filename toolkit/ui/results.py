"""The results explorer: pick a results folder and see its report (the tables and plots that
``toolkit report`` writes, made by the same ``Report``), each plot where the report places it; then pick a game
or an engineer session to see its HTML replay inline (``toolkit.export.html.show``, the page ``toolkit view``
writes), with a link that saves the page.

The report is shown part by part: the summary (conditions, Conclusions, design matrix, win rates) at once — a few
seconds on the committed example — and every other section (votes, beliefs, robustness, degeneracy checks, …)
listed below it, computed when opened (computing all of the example's takes minutes on two busy cores). Each part
is kept in a cache (``TOOLKIT_REPORT_CACHE``, default ``~/.cache/llm-agent-toolkit/reports``) under a fingerprint
of the folder's files (names, sizes, modification times) and of the analysis code: opened again, it shows at once
(benchmarks/explorer_open.py). The progress line says which stage is running and for how long; Load and each
section run off the kernel's main thread so that the rest of the notebook stays responsive. A relative folder is
looked for in the notebook's folder (the kernel's working folder), then in the repository, and the progress line
says which; a folder that is not there leaves the report shown in place and says so in one line."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import threading
import time
from pathlib import Path

import ipywidgets as W
import pandas as pd
from IPython.display import HTML, Markdown

import toolkit
from toolkit.analysis import progress
from toolkit.analysis.report import Report
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


class ReportCache:
    """One folder's report in the cache, part by part (``toolkit.analysis.report.Part``): ``index.json`` (the
    parts' titles, which are eager), ``part-NN.md`` for each part rendered so far, and the plots they link. The
    folder's tables are read (``Report``) only when a part is not there yet."""

    lock = threading.Lock()  # one part at a time in a kernel: parts share their report's tables and pyplot's figures

    def __init__(self, folder: Path):
        self.folder = folder
        self.entry = cache_root() / fingerprint(folder)
        self.report: Report | None = None
        index = self.entry / "index.json"
        if index.is_file():
            self.titles, self.eager = (json.loads(index.read_text())[k] for k in ("titles", "eager"))
        else:
            report = self._report()
            self.titles, self.eager = [p.title for p in report.parts], [p.eager for p in report.parts]
            self._keep(index, json.dumps({"titles": self.titles, "eager": self.eager}))

    def _report(self) -> Report:
        if self.report is None:
            self.report = Report(self.folder, self.entry)
        return self.report

    def _keep(self, path: Path, text: str) -> None:
        """Whole or not at all: a part killed half-way is never read back."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(text)
        os.replace(tmp, path)

    def has(self, i: int) -> bool:
        return (self.entry / f"part-{i:02d}.md").is_file()

    def text(self, i: int) -> str:
        """Part ``i``'s Markdown, rendered (and kept) when the cache does not hold it."""
        path = self.entry / f"part-{i:02d}.md"
        with self.lock:
            if not path.is_file():
                report = self._report()
                self._keep(path, report.render(report.parts[i]))  # its plots are written first, into the entry
            return path.read_text()

    def images(self, text: str) -> dict[str, bytes]:
        """The plots ``text`` links, from the entry."""
        return {name: (self.entry / name).read_bytes() for _, name in IMAGE.findall(text)
                if (self.entry / name).is_file()}


def busy_line(text: str, started: float) -> str:
    return (f"<span class='toolkit-busy'>⏳ {html.escape(text, quote=False)} "
            f"({time.monotonic() - started:.0f} s so far)</span>")


class BusyLine:
    """A part's progress (``toolkit.analysis.progress``) on a busy line: what it computes, at which condition,
    for how long so far (each step redraws it)."""

    def __init__(self, line: W.HTML, what: str, started: float):
        self.line, self.what, self.started, self.title = line, what, started, ""

    def part(self, index: int, total: int, title: str) -> None:
        self.title = title

    def step(self, text: str) -> None:
        where = f"{self.title}: " if self.title and self.title not in self.what else ""
        self.line.value = busy_line(f"{self.what}: {where}{text}", self.started)


class ResultsExplorer(W.VBox):
    def __init__(self, folder: str = "results"):
        self.folder = W.Text(value=folder, description="folder", layout=W.Layout(width="60%"))
        self.load_button = W.Button(description="Load")
        self.progress = W.HTML()
        self.summary = W.HTML()
        self.report = W.Output()  # the summary: the report's eager parts
        self.sections = W.Accordion()  # the other parts, each computed when opened
        self.sections.observe(self._opened, "selected_index")
        self.pick = W.Combobox(placeholder="a game_id or session_id (load first)", description="replay",
                               ensure_option=True, layout=W.Layout(width="60%"))
        self.view_button = W.Button(description="View", disabled=True)
        self.replay = W.Output()
        self.parts: dict[int, str] = {}  # the Markdown of each part shown so far, by its place in the report
        self.images: dict[str, bytes] = {}
        self.tables = None
        self.cache: ReportCache | None = None
        self.shown: Path | None = None  # the folder whose report is shown
        self.thread: threading.Thread | None = None
        self.load_button.on_click(lambda _: self.load_in_background())
        self.view_button.on_click(lambda _: self.view())
        super().__init__([W.HBox([self.folder, self.load_button]), self.progress, self.summary,
                          W.HBox([self.pick, self.view_button]), self.replay, self.report, self.sections])
        self.add_class("toolkit-explorer")

    @property
    def markdown(self) -> str:
        """The report's Markdown shown so far, in the report's order (after ``open_all``: what ``toolkit report``
        writes to summary.md)."""
        return "\n".join(t for _, t in sorted(self.parts.items()) if t)

    def _stage(self, text: str, started: float) -> None:
        self.progress.value = busy_line(text, started)

    def load(self) -> None:
        """Read the folder and show its summary (blocks until done; the Load button runs it in a thread); the
        report's other sections are listed below it and computed when opened. A folder that is not there changes
        nothing but the progress line."""
        folder, how = resolve(self.folder.value)
        if folder is None:
            still = f"; still showing {self.shown}" if self.shown else ""
            self.progress.value = f"<span style='color:#c0392b'>{html.escape(how + still, quote=False)}</span>"
            return
        self.report.outputs = self.replay.outputs = ()
        self.sections.children, self.sections.selected_index = (), None
        self.summary.value, self.parts, self.images, self.tables, self.shown = "", {}, {}, None, None
        self.pick.options, self.pick.value, self.view_button.disabled = (), "", True
        started = time.monotonic()
        where = f" ({how})" if how else ""
        self.load_button.disabled = True
        try:
            self._stage(f"reading {folder}{where} and computing its summary (the conclusions)", started)
            self.cache = cache = ReportCache(folder)
            fresh = not all(cache.has(i) for i, eager in enumerate(cache.eager) if eager)
            with progress.listening(BusyLine(self.progress, "computing the summary", started)):
                for i, eager in enumerate(cache.eager):
                    if eager:
                        self._show(i, self.report)
            shown_in = time.monotonic() - started
            lazy = [i for i, eager in enumerate(cache.eager) if not eager]
            self.sections.children = [W.Output() for _ in lazy]
            self.sections.titles = tuple(cache.titles[i] + ("" if cache.has(i) else " (computed when opened)")
                                         for i in lazy)
            self._stage(f"summary shown ({shown_in:.1f} s); reading the tables for the replays", started)
            self._read_tables(folder)
            self.progress.value = html.escape(
                f"loaded in {time.monotonic() - started:.0f} s (summary {'computed' if fresh else 'from the cache'} "
                f"and shown after {shown_in:.1f} s){where}; open a section below to compute it (kept in the cache "
                "for the next time)", quote=False)
        except Exception as exc:
            self.progress.value = f"<span style='color:#c0392b'>{html.escape(f'{type(exc).__name__}: {exc}')}</span>"
            raise
        finally:
            self.load_button.disabled = False

    def _show(self, i: int, out: W.Output) -> None:
        text = self.cache.text(i)
        images = self.cache.images(text)
        self.parts[i], self.images = text, {**self.images, **images}
        # append_display_data, not `with out`: the capture does not work from a thread
        out.append_display_data(Markdown(inline_images(text, images)) if text else
                                HTML("<i>nothing to report in this section for these results</i>"))

    def open_section(self, k: int) -> None:
        """Compute (or read from the cache) the ``k``-th section below the summary and show it (blocks; opening it
        in the accordion runs this in a thread)."""
        cache, out = self.cache, self.sections.children[k]
        i = [i for i, eager in enumerate(cache.eager) if not eager][k]
        if i in self.parts:
            return
        started = time.monotonic()
        out.outputs = ()
        busy = W.HTML(busy_line(f"computing {cache.titles[i]}…", started))
        out.append_display_data(busy)
        try:
            with progress.listening(BusyLine(busy, f"computing {cache.titles[i]}", started)):
                cache.text(i)  # computed here, while the busy line shows; _show reads it back
        except Exception as exc:
            out.outputs = ()
            out.append_display_data(HTML(f"<span style='color:#c0392b'>{html.escape(f'{type(exc).__name__}: {exc}')}"
                                         "</span>"))
            titles = list(self.sections.titles)
            titles[k] = f"{cache.titles[i]} (failed: {type(exc).__name__}; select it again to retry)"
            self.sections.titles = tuple(titles)
            if self.sections.selected_index == k:  # closed, so that selecting it again computes it again
                self.sections.selected_index = None
            raise
        if cache is not self.cache:  # another folder was loaded meanwhile
            return
        out.outputs = ()
        self._show(i, out)
        titles = list(self.sections.titles)
        titles[k] = f"{cache.titles[i]}" + ("" if time.monotonic() - started < 1 else
                                           f" ({time.monotonic() - started:.0f} s)")
        self.sections.titles = tuple(titles)

    def open_all(self) -> None:
        """Every section computed and shown, in order."""
        for k in range(len(self.sections.children)):
            self.open_section(k)

    def _opened(self, change) -> None:
        k = change["new"]
        if k is None or self.cache is None:
            return
        threading.Thread(target=self._quietly, args=(self.open_section, k), name="results-explorer-section",
                         daemon=True).start()

    def _read_tables(self, folder: Path) -> None:
        self.tables = t = load(folder)
        self.shown = folder
        calls = f"{len(t.calls)} model calls"
        if not len(t.calls) and len(t.games) and "n_calls" in t.games:  # tables exported without their calls
            calls = (f"{int(pd.to_numeric(t.games['n_calls'], errors='coerce').sum())} model calls (counted in the "
                     "games table; these tables do not include the calls)")
        self.summary.value = f"{len(t.runs)} runs, {len(t.games)} games, {len(t.sessions)} sessions, {calls}"
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
        self._quietly(self.load)

    @staticmethod
    def _quietly(func, *args) -> None:
        try:
            func(*args)
        except Exception:  # shown in the widget; a thread's traceback would go nowhere a reader sees
            pass
