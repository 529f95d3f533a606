"""``python -m toolkit import kaggle REPLAY_DIR --out RESULTS``: games played elsewhere as this toolkit's tables."""

from __future__ import annotations

import argparse

from toolkit.cli.common import show

DESCRIPTION = """Each replay (env.toJSON() of kaggle-environments' werewolf) is played here again, decision by decision,
with the preset its configuration means, and written as the games, players, events and calls tables of one run
under RESULTS; an LLM agent's prompts and completions in a replay become calls rows of their own. Every replay
is checked first (strict JSON, its shape, same eliminations, winner and final day here as in Kaggle's game, its
model calls as Kaggle's harness writes them); one that fails is named in one line, exit code 2, and nothing is
written. A replay given twice (in two files, or already imported under RESULTS) is imported once; one whose game
id is imported already with other content is left out with a warning.
docs/werewolf.md ("Importing Kaggle games")."""

SOURCES = ("kaggle",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("source", choices=SOURCES, help="where the games were played")
    parser.add_argument("dir", help="a folder of replay JSON files")
    parser.add_argument("--out", default="results", metavar="DIR",
                        help="results folder; the run goes to DIR/kaggle-import-<time>-<id>/ (default: results)")


def run(args: argparse.Namespace) -> int:
    import shutil
    import sys
    from pathlib import Path

    from toolkit.cli.common import plural
    from toolkit.cli.preflight import make_folder, out_folder
    from toolkit.record.run_log import Run
    from toolkit.werewolf.kaggle import importer

    out_folder(args.out)
    games, notes, changed = importer.once(importer.check(args.dir), importer.imported_ids(args.out))
    for note in notes:
        show(f"note: {note}")
    for warning in changed:  # the same game id, other content: said on stderr, where a warning goes
        show(f"warning: {warning}", file=sys.stderr)
    if not games and changed:  # not 'already imported': the last line says which were left out and why
        differ = ("it differs from the one imported under its id" if len(changed) == 1 else
                  "they differ from the ones imported under their ids")
        others = f"; {plural(len(notes), 'other')} already imported or given twice" if notes else ""
        show(f"nothing new to import; {plural(len(changed), 'replay')} left out: {differ}{others}")
        return 0
    if not games:
        show(f"nothing to import: every replay in {args.dir} is already in {args.out}")
        return 0
    existed = Path(args.out).exists()
    make_folder(args.out)
    folder = None
    try:
        with Run(args.out, "kaggle-import", config={"source": args.source, "dir": str(args.dir)}) as run:
            folder = run.folder
            results = importer.write(games, run)
    except BaseException:  # nothing half-written stays behind (the error itself is reported as it is)
        shutil.rmtree(folder or "/nonexistent", ignore_errors=True)
        if not existed:
            shutil.rmtree(args.out, ignore_errors=True)
        raise
    winners = ", ".join(f"{w} {sum(r.winner == w for r in results)}" for w in ("village", "werewolves"))
    show(f"imported {plural(len(results), 'game')} ({winners}): {run.folder}")
    with_calls = [g for g in games if g.calls]
    if with_calls:
        show(f"model calls: {sum(len(g.calls) for g in games)} (prompts and completions) from "
              f"{len(with_calls)} of {plural(len(games), 'replay')}")
    else:
        show("model calls: 0 (the replays hold no prompts and completions, as Kaggle's random agent's)")
    return 0
