"""What a resumed study pays (issue 42): a study stopped at a spending cap, then killed once with SIGKILL mid-run,
then run to its end, against the same study played uninterrupted; old (51c499d) beside new in one run.

The study is one werewolf cell (``play_werewolf_cell``: N classic7 games, every seat ``openai:det@URL``) played in
subprocesses against a loopback OpenAI-compatible server (``toolkit.testing.loopback_server``) in this process,
which bills what a provider would: every request it answers, also one whose client was killed meanwhile. Its
``det`` model answers a request the same whatever the order, so every run plays the same games, and
``--latency`` seconds before each answer keeps calls in flight when the kill comes. Prices: ``det`` at $1 in and
$4 out per million tokens (a TOOLKIT_PRICES file).

The interrupted study: run 1 with ``max_usd`` at a third of what the whole study costs (it stops at the cap, its
games in flight unfinished), run 2 with a higher cap killed (SIGKILL) once about a third more of the study's calls
are recorded, run 3 with the higher cap to the end. Printed per version: the calls and dollars the server billed
for the uninterrupted study and for the interrupted one, the extra paid, the calls billed by the kill that no
calls row records (in flight at the kill: the goal is to pay no more than these twice), the ledger's total and
its calls still pending (sent before the kill, never answered to the client), and the resumed study's calls rows
answered from the record (``cache_hit``).

    python benchmarks/resume_cost.py [--games 6] [--concurrency 3] [--latency 0.05] [--old /tmp/old-51c499d]

The old tree: ``git worktree add /tmp/old-51c499d 51c499d`` (left out when it is missing).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from toolkit.testing.loopback_server import FakeOpenAIServer  # noqa: E402  (after the path)


class Billing(FakeOpenAIServer):
    """The loopback server, keeping what it billed: (prompt, completion) tokens of every answer it made."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.billed: list[tuple[int, int]] = []
        self.httpd.handle_error = lambda *args: None  # a killed client's reset connection is expected here

    def answer(self, body, usage, say):
        out = super().answer(body, usage, say)
        u = out.get("usage") or {}
        with self.lock:
            self.billed.append((u.get("prompt_tokens", 0), u.get("completion_tokens", 0)))
        return out

    def since(self, start: int) -> tuple[int, float]:
        with self.lock:
            part = self.billed[start:]
        return len(part), sum(p * 1.0 + c * 4.0 for p, c in part) / 1e6


def cell(tree: Path, folder: Path, url: str, games: int, concurrency: int, max_usd: float | None,
         spend: Path) -> subprocess.Popen:
    """One run of the cell in a subprocess on ``tree``'s code."""
    script = textwrap.dedent(f"""
        from toolkit.study.experiments import play_werewolf_cell
        play_werewolf_cell({str(folder)!r}, n_games={games}, seed=11, model={"openai:det@" + url!r},
                           concurrency={concurrency}, max_usd={max_usd!r}, spend_dir={str(spend)!r})
    """)
    return subprocess.Popen([sys.executable, "-c", script], cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def rows(folder: Path, paid: bool = False) -> int:
    """The calls rows written under ``folder`` (``paid``: only those that made a request, not replayed)."""
    import pyarrow.parquet as pq

    n = 0
    for path in folder.glob("*/calls.jsonl"):
        for line in path.read_text().splitlines():
            try:
                n += not (paid and json.loads(line).get("cache_hit"))
            except ValueError:
                pass  # a line the kill cut short
    for path in folder.glob("*/calls.parquet"):
        table = pq.read_table(path, columns=["cache_hit"] if paid else [])
        n += sum(not hit for hit in table["cache_hit"].to_pylist()) if paid else table.num_rows
    return n


def ledger(spend: Path) -> tuple[float, int]:
    """The ledger's total (the new reader reads both versions' lines) and its calls still pending (sent, never
    settled: in flight at the kill)."""
    from toolkit.llm.budget import Budget

    lines = [json.loads(x) for x in (spend / "spend.jsonl").read_text().splitlines() if x.strip().endswith("}")]
    pending = {x["pending"] for x in lines if "pending" in x} - {x["settles"] for x in lines if "settles" in x}
    return Budget(spend / "spend.jsonl").spent()[0], len(pending)


def measure(tree: Path, server: Billing, work: Path, games: int, concurrency: int) -> dict:
    url = server.base_url
    start = len(server.billed)
    whole = work / "whole"
    proc = cell(tree, whole, url, games, concurrency, None, work / "whole-spend")
    if proc.wait() != 0:
        raise SystemExit(f"{tree}: the uninterrupted study failed: {proc.stderr.read()[-800:]}")
    time.sleep(0.3)
    calls_whole, usd_whole = server.since(start)

    start = len(server.billed)
    study, spend = work / "interrupted", work / "interrupted-spend"
    cell(tree, study, url, games, concurrency, round(usd_whole / 3, 6), spend).wait()  # stops at the cap
    after_cap = rows(study)
    proc = cell(tree, study, url, games, concurrency, usd_whole * 10, spend)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and rows(study) < after_cap + calls_whole // 3:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(max(0.5, 10 * server.latency))  # the calls in flight reach the server and are billed to nobody
    in_flight = server.since(start)[0] - rows(study, paid=True)  # billed, but no row says so
    proc = cell(tree, study, url, games, concurrency, usd_whole * 10, spend)
    if proc.wait() != 0:
        raise SystemExit(f"{tree}: the resumed study failed: {proc.stderr.read()[-800:]}")
    calls, usd = server.since(start)
    return {"calls_whole": calls_whole, "usd_whole": usd_whole, "calls": calls, "usd": usd,
            "in_flight": in_flight, "ledger": ledger(spend), "replayed": rows(study) - rows(study, paid=True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--old", default="/tmp/old-51c499d")
    args = parser.parse_args()
    trees = [("old 51c499d", Path(args.old))] if Path(args.old, "toolkit").is_dir() else []
    trees.append(("new", REPO))
    with tempfile.TemporaryDirectory() as tmp:
        prices = Path(tmp) / "prices.yaml"
        prices.write_text("det: {input: 1.0, output: 4.0}\n")
        os.environ["TOOLKIT_PRICES"] = str(prices)
        with Billing(seed=5, latency=args.latency) as server:
            print(f"{args.games} classic7 games, openai:det at {args.latency:g} s latency, {args.concurrency} at "
                  "once; interrupted = stopped at a cap of 1/3 of the study's cost, then killed -9 once, then "
                  "resumed to the end")
            print("| version | uninterrupted: calls, $ | interrupted: calls, $ | extra paid: calls, $ | "
                  "billed at the kill, never recorded | ledger $ (pending at the kill) | rows replayed |")
            print("|---|---|---|---|---|---|---|")
            for name, tree in trees:
                r = measure(tree, server, Path(tmp) / name.split()[0], args.games, args.concurrency)
                print(f"| {name} | {r['calls_whole']}, ${r['usd_whole']:.4f} | {r['calls']}, ${r['usd']:.4f} | "
                      f"{r['calls'] - r['calls_whole']} ({(r['calls'] / r['calls_whole'] - 1) * 100:.0f}%), "
                      f"${r['usd'] - r['usd_whole']:.4f} | {r['in_flight']} | "
                      f"${r['ledger'][0]:.4f} ({r['ledger'][1]}) | "
                      f"{r['replayed']} |", flush=True)


if __name__ == "__main__":
    main()
