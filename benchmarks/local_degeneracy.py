"""Degenerate play of the local model (Gemma 3 270M on llama.cpp), before vs after the answer-shape change:
the old prompts showed the answer as a template with copyable placeholders (`<brief private reasoning>`,
`<what you say, one paragraph>`), the new ones describe each field. Same seeds, every seat `local`; prints
each degeneracy check (toolkit.analysis.degeneracy) as k/n with its 95% interval for both, side by side.

    .venv/bin/python benchmarks/local_degeneracy.py [--games 2] [--max-days 2] [--old-commit ab6e2a6]

Needs the `local` extra. The old prompts are read from git at --old-commit (the last commit with them)."""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def old_prompts(commit: str, into: Path) -> Path:
    data = subprocess.run(["git", "archive", commit, "prompts"], cwd=REPO, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into / "prompts"


def measure(prompts: Path, seeds: list[int], max_days: int, out: Path):
    from toolkit.analysis.degeneracy import degeneracy
    from toolkit.record.load import load
    from toolkit.record.run_log import Run
    from toolkit.werewolf.game import GameConfig, play_games

    os.environ["TOOLKIT_PROMPTS"] = str(prompts)
    started = time.perf_counter()
    with Run(out, "degeneracy") as run:
        asyncio.run(play_games([GameConfig(seed=s, model="local", max_days=max_days) for s in seeds], run))
    tables = load(out, complete_games=False)
    speeches = tables.events[tables.events["kind"] == "speech"]["text"]
    return degeneracy(tables), time.perf_counter() - started, len(tables.calls), speeches


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--games", type=int, default=2)
    ap.add_argument("--max-days", type=int, default=2)
    ap.add_argument("--old-commit", default="ab6e2a6")
    args = ap.parse_args()
    seeds = list(range(args.games))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        results = {}
        for name, prompts in (("old", old_prompts(args.old_commit, tmp / "old")), ("new", REPO / "prompts")):
            results[name] = measure(prompts, seeds, args.max_days, tmp / f"res-{name}")
    print(f"local model, seeds {seeds}, at most {args.max_days} days, every seat local")
    for name, (d, secs, calls, speeches) in results.items():
        print(f"{name}: {calls} calls in {secs:.0f} s; first speeches: {list(speeches.head(3))}")
    old, new = (results[n][0].set_index("check") for n in ("old", "new"))
    print(f"{'check':<24}{'old k/n':>10}{'old rate [95% CI]':>26}{'new k/n':>10}{'new rate [95% CI]':>26}")
    for check in old.index.union(new.index):
        cells = []
        for d in (old, new):
            if check in d.index:
                r = d.loc[check]
                cells += [f"{r['k']}/{r['n']}", f"{r['rate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"]
            else:
                cells += ["-", "-"]
        print(f"{check:<24}{cells[0]:>10}{cells[1]:>26}{cells[2]:>10}{cells[3]:>26}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
