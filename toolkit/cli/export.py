"""``python -m toolkit export FORMAT RESULTS --out DIR``: games and sessions in the formats the field's tools read."""

from __future__ import annotations

import argparse
from typing import Any

from toolkit.cli.common import show
from toolkit.export import EXPORTERS

DESCRIPTION = None  # add_arguments writes it from the registry


def description() -> str:
    """The formats, from the exporters' registry (``toolkit.export.EXPORTERS``)."""
    width = max(map(len, EXPORTERS)) + 2
    return "\n".join(["Formats (docs/exports.md says what each tool reads):",
                      *(f"  {name:<{width}}{e.summary}" for name, e in EXPORTERS.items()),
                      "Secrets stay masked; --no-content leaves message contents (speech, prompts, answers, "
                      "outputs) out."])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = description()
    parser.add_argument("format", choices=list(EXPORTERS), help="the target format")
    parser.add_argument("dir", help="a results folder (every run below it is read)")
    parser.add_argument("--out", metavar="DIR",
                        help="folder to write into (required, unless an option below sends instead)")
    parser.add_argument("--game", action="append", metavar="ID", help="only this game (repeatable)")
    parser.add_argument("--no-content", action="store_true",
                        help="leave message contents out (speech, prompts, answers, thoughts, tool outputs)")
    for name, (flag, formats) in flags().items():  # each exporter's own options
        kind = {"metavar": flag.metavar} if flag.metavar else {"action": "store_true"}
        parser.add_argument(f"--{name}", **kind, help=f"{', '.join(formats)}: {flag.help}")


def flags() -> dict[str, tuple[Any, list[str]]]:
    """Every exporter's own options: name -> (the first declaration, the formats declaring it)."""
    out: dict[str, tuple[Any, list[str]]] = {}
    for e in EXPORTERS.values():
        for flag in e.flags:
            out.setdefault(flag.name, (flag, []))[1].append(e.name)
    return out


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from toolkit.cli.common import plural
    from toolkit.cli.preflight import check_extra, make_folder, out_folder, results_folder
    from toolkit.core.files import FileError
    from toolkit.export import Options, atomic
    from toolkit.export.study import Study
    from toolkit.record.load import load

    results_folder(args.dir)
    exporter = EXPORTERS[args.format]
    given = {name: getattr(args, name) for name in flags() if getattr(args, name) not in (None, False)}
    mine = {f.name: f for f in exporter.flags}
    for name in given:
        if name not in mine:
            raise FileError(f"--{name} is for the {', '.join(flags()[name][1])} format, not {args.format}")
    sends = [f for name, f in mine.items() if name in given and f.sends]
    if args.out is None and not sends:
        raise FileError(f"export {args.format}: give --out DIR" + "".join(f" or --{f.name} {f.metavar}"
                                                                          for f in exporter.flags if f.sends))
    for name, value in given.items():
        if mine[name].needs:
            check_extra(mine[name].needs, mine[name].extra, f"export {args.format} --{name}")
        if mine[name].check is not None:
            mine[name].check(value)
    if args.out:
        out_folder(args.out)
    study = Study(args.dir, args.game)  # the small tables; the games' rows are read a batch of games at a time
    results = study.whole
    if args.game:
        known = set(results.games["game_id"])
        unknown = [g for g in args.game if g not in known]
        if unknown:
            raise FileError(f"--game {unknown[0]}: no such game in {args.dir} ({plural(len(known), 'game')} there)")
    if exporter.needs:
        check_extra(exporter.needs, exporter.extra, f"export {args.format}")
    options = Options(not args.no_content, args.game, trajectories(args.dir, results) if exporter.trajectories
                      else None, str(args.dir), given)
    if sends:
        show(exporter.send(study, options))
        return 0
    out = make_folder(args.out)
    note = exporter.note(results, options) if exporter.note else ""
    if note:
        show(f"note: {note}")
    data = study if exporter.batched else load(args.dir)
    paths = atomic.write_all(lambda folder: exporter.write(data, folder, options), Path(out))
    show(f"wrote {plural(len(paths), 'file')} to {out}")
    return 0


def trajectories(folder: str, results) -> dict:
    """Each session's trajectory, as its workspace saved it (sessions without one get None)."""
    from toolkit.export.html import find_trajectory

    return {sid: find_trajectory(folder, sid) for sid in results.sessions["session_id"]}
