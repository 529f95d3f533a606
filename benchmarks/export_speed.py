"""Export speed per format (games per second, tables already loaded; loading is printed apart) over the example
games, and the size of the HTML replay per game (the example games, which log no calls, and a game against the
loopback server whose every call's prompt and answer is in the page) and per engineer session (a scripted
session of the offline suite). Target: >= 100 games/s for every file format.

Each line gives games/s by the wall clock and by this process's CPU time: on a machine other work shares, the
wall figure falls with the load and the CPU figure much less. ``--against REV`` also times the Inspect exporter
as it was at git revision REV, in the same run, beside today's; ``--repeat N`` times the Inspect export N times
(the old one and today's in turn) and prints the fastest of each.

    python benchmarks/export_speed.py [--games N] [--against REV] [--repeat N] [RESULTS]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolkit.export import hf, html, inspect_log, kaggle, otel  # noqa: E402
from toolkit.record.load import load  # noqa: E402


def measure(fn) -> tuple[float, float]:
    """``fn()``'s wall and CPU seconds (this process's CPU: the exporters run in it)."""
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


def report(label: str, n: int, figures: list[tuple[float, float]]) -> None:
    """The fastest of ``figures`` (wall and CPU apart): on a shared machine the other work only slows a run."""
    wall, cpu = min(f[0] for f in figures), min(f[1] for f in figures)
    runs = f" (best of {len(figures)})" if len(figures) > 1 else ""
    print(f"{label:34s} {n:6d} games {wall:8.2f} s {n / wall:9.1f} games/s wall {n / cpu:9.1f} games/s CPU{runs}")


def timed(label: str, n: int, fn) -> None:
    report(label, n, [measure(fn)])


def module_at(rev: str, path: str) -> types.ModuleType:
    """The module at ``path`` as git revision ``rev`` has it (its imports resolve against today's package)."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], capture_output=True, text=True,
                            check=True).stdout
    module = types.ModuleType(f"{Path(path).stem}_at_{rev}")
    exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="?", default=str(ROOT / "results" / "examples"))
    parser.add_argument("--games", type=int, default=None, help="only the first N games")
    parser.add_argument("--against", metavar="REV", help="also time the Inspect exporter of this git revision")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="time the Inspect export N times (in turn with --against's) and print the fastest")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    results = load(args.results)
    print(f"load {args.results}: {time.perf_counter() - start:.2f} s ({len(results.games)} games)")
    if args.games:
        keep = set(results.games["game_id"].iloc[: args.games])
        for table in ("games", "players", "events", "calls", "beliefs"):
            frame = getattr(results, table)
            setattr(results, table, frame[frame["game_id"].isin(keep)])
    n = len(results.games)
    ids = list(results.games["game_id"])
    start = time.perf_counter()
    import inspect_ai.event  # noqa: F401  (the writers' libraries, imported once before anything is timed)
    import inspect_ai.log  # noqa: F401
    import opentelemetry.exporter.otlp.proto.common.trace_encoder  # noqa: F401
    import opentelemetry.sdk.trace  # noqa: F401
    print(f"import inspect_ai and the OpenTelemetry SDK: {time.perf_counter() - start:.2f} s (once, not timed below)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for name in ("kaggle", "inspect", "otel", "hf", "html"):
            (out / name).mkdir()
        timed("kaggle (one JSON per game)", n, lambda: kaggle.write(results, out / "kaggle"))
        old = module_at(args.against, "toolkit/export/inspect_log.py") if args.against else None
        before, now = [], []
        for _ in range(args.repeat):  # the old exporter and today's in turn, so both see the same load
            if old is not None:
                before.append(measure(lambda: old.write(results, out / "inspect")))
            now.append(measure(lambda: inspect_log.write(results, out / "inspect")))
        if old is not None:
            report(f"inspect (.eval) at {args.against}", n, before)
        report("inspect (.eval)", n, now)
        timed("otel (OTLP JSON lines)", n, lambda: otel.write(results, out / "otel"))
        timed("hf (parquet per table)", n, lambda: hf.write(results, out / "hf"))
        sample = ids[: min(n, 200)]
        sizes = []

        def pages():
            for gid in sample:
                page = html.game_page(results, gid)
                (out / "html" / f"{gid}.html").write_text(page)
                sizes.append(len(page.encode()))

        timed("html view (first 200)", len(sample), pages)
        print(f"html size per example game: mean {statistics.mean(sizes) / 1024:.1f} KB, "
              f"max {max(sizes) / 1024:.1f} KB (no calls logged in the examples)")
        print(f"html size, a loopback game with every call's prompt and answer: {loopback_page_kb(out):.1f} KB")
        for sid, (steps, kb) in session_pages_kb(out).items():
            print(f"html size, the scripted engineer session {sid} ({steps} steps): {kb:.1f} KB")
    return 0


def loopback_page_kb(out: Path) -> float:
    from toolkit.record.run_log import Run
    from toolkit.testing.loopback_server import FakeOpenAIServer
    from toolkit.werewolf.game import GameConfig, play_game

    with FakeOpenAIServer(seed=1) as server:
        with Run(out / "loopback") as run:
            asyncio.run(play_game(GameConfig(seed=3, model=f"openai:det@{server.base_url}", reflection=True), run))
    results = load(out / "loopback")
    page = html.game_page(results, results.games["game_id"].iloc[0])
    print(f"  (that game: {len(results.calls)} calls, {len(results.events)} events)")
    return len(page.encode()) / 1024


def session_pages_kb(out: Path, tasks: tuple[str, ...] = ("add_cli_flag", "refactor_rename")) -> dict[str, tuple]:
    from toolkit.agent.suite import run_suite
    from toolkit.record.run_log import Run

    with Run(out / "sessions", "engineer-suite") as run:
        asyncio.run(run_suite("scripted:{task}/good.yaml", run, out / "sessions" / "workspaces", names=list(tasks)))
    results = load(out / "sessions")
    sizes = {}
    for session in results.sessions.itertuples():
        page = html.session_page(results, session.session_id, html.find_trajectory(out / "sessions",
                                                                                   session.session_id))
        sizes[session.session_id] = session.steps, len(page.encode()) / 1024
    return sizes


if __name__ == "__main__":
    raise SystemExit(main())
