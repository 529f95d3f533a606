"""``python -m toolkit export FORMAT RESULTS --out DIR``: games and sessions in the formats the field's tools read."""

from __future__ import annotations

import argparse

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
    parser.add_argument("--out", metavar="DIR", help="folder to write into (required, except otel with --endpoint)")
    parser.add_argument("--game", action="append", metavar="ID", help="only this game (repeatable)")
    parser.add_argument("--no-content", action="store_true",
                        help="leave message contents out (speech, prompts, answers, thoughts, tool outputs)")
    parser.add_argument("--endpoint", metavar="URL",
                        help="otel: send to this OTLP/HTTP endpoint (e.g. http://127.0.0.1:6006) instead of files")
    parser.add_argument("--html", action="store_true",
                        help="kaggle: also write each game into the visualizer page kaggle-environments ships")
    parser.add_argument("--json", action="store_true",
                        help="inspect: write Inspect's .json logs instead of .eval (about 4 times as fast to write, "
                             "about 23 times the size)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from toolkit.cli.common import plural
    from toolkit.cli.preflight import check_extra, make_folder, out_folder, results_folder
    from toolkit.core.files import FileError
    from toolkit.export import Options, atomic
    from toolkit.export.study import Study
    from toolkit.record.load import load

    results_folder(args.dir)
    if args.out is None and not (args.format == "otel" and args.endpoint):
        raise FileError(f"export {args.format}: give --out DIR" + (" or --endpoint URL" if args.format == "otel"
                                                                     else ""))
    if args.endpoint and args.format != "otel":
        raise FileError(f"--endpoint is for the otel format, not {args.format}")
    if args.html and args.format != "kaggle":
        raise FileError(f"--html is for the kaggle format, not {args.format}")
    if args.json and args.format != "inspect":
        raise FileError(f"--json is for the inspect format, not {args.format}")
    if args.html:
        check_extra("kaggle_environments", "interop", "export kaggle --html (Kaggle's visualizer)")
    if args.endpoint:
        check_endpoint(args.endpoint)
    if args.out:
        out_folder(args.out)
    study = Study(args.dir, args.game)  # the small tables; the games' rows are read a batch of games at a time
    results = study.whole
    if args.game:
        known = set(results.games["game_id"])
        unknown = [g for g in args.game if g not in known]
        if unknown:
            raise FileError(f"--game {unknown[0]}: no such game in {args.dir} ({plural(len(known), 'game')} there)")
    content = not args.no_content
    exporter = EXPORTERS[args.format]
    if exporter.needs:
        check_extra(exporter.needs, exporter.extra, f"export {args.format}")
    out = make_folder(args.out) if args.out else None
    if args.format == "kaggle":
        from toolkit.export import kaggle

        games = kaggle.decided(results.games)
        left = len(results.games) - len(games)
        if args.game:
            left = len([g for g in args.game if g not in set(games["game_id"])])
        if left:
            show(f"note: {plural(left, 'undecided game')} left out (Kaggle's loader needs a winning side)")
    if args.endpoint:  # otel only (checked above)
        from toolkit.export import otel

        n = otel.send(study, args.endpoint, content, args.game)
        show(f"sent {plural(n, 'span')} to {args.endpoint}")
        return 0
    options = Options(content, args.game, trajectories(args.dir, results) if exporter.trajectories else None,
                      str(args.dir), args.json)
    data = study if exporter.batched else load(args.dir)
    paths = atomic.write_all(lambda folder: exporter.write(data, folder, options), Path(out))
    if args.html:
        from toolkit.export import kaggle

        paths += atomic.write_all(lambda folder: kaggle.write_html(paths, folder), Path(out))
    show(f"wrote {plural(len(paths), 'file')} to {out}")
    return 0


def trajectories(folder: str, results) -> dict:
    """Each session's trajectory, as its workspace saved it (sessions without one get None)."""
    from toolkit.export.html import find_trajectory

    return {sid: find_trajectory(folder, sid) for sid in results.sessions["session_id"]}


def check_endpoint(url: str) -> None:
    """Refuse an OTLP endpoint that is not an http(s) URL or does not answer, in one line, before exporting."""
    from urllib.parse import urlsplit

    from toolkit.llm.reach import reachable
    from toolkit.core.files import FileError
    from toolkit.core.secrets import mask_url

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FileError(f"--endpoint {mask_url(url)}: give an http(s) URL, e.g. http://127.0.0.1:6006")
    why = reachable(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80), 3.0)
    if why:
        raise FileError(f"--endpoint {mask_url(url)}: cannot connect ({why})")
