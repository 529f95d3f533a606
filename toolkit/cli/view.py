"""``python -m toolkit view RESULTS --game ID``: one game's (or engineer session's) replay as a self-contained
HTML file."""

from __future__ import annotations

import argparse

from toolkit.cli.common import show

DESCRIPTION = ("The page opens from disk with no network: timeline, who is alive, speeches, a vote matrix per day, "
               "deaths; a god-view toggle shows roles, night actions, thoughts, reflections, beliefs and each "
               "model call's prompt and answer. With --session, an engineer session's steps, commands, outputs "
               "and diffs.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", help="a results folder (every run below it is read)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--game", metavar="ID", help="the game_id to show")
    which.add_argument("--session", metavar="ID", help="the engineer session_id to show")
    parser.add_argument("--out", metavar="FILE", help="the HTML file to write (default: ID.html here)")
    parser.add_argument("--no-content", action="store_true", help="leave message contents out")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from toolkit.cli.preflight import out_folder, results_folder
    from toolkit.core.files import FileError
    from toolkit.export import html
    from toolkit.record.load import load

    results_folder(args.dir)
    ident = args.game or args.session
    out = Path(args.out or f"{ident}.html")
    if out.is_dir():
        raise FileError(f"--out {out}: is a folder; give the HTML file to write")
    out_folder(out.parent if str(out.parent) else ".", "--out")
    results = load(args.dir)
    content = not args.no_content
    try:
        if args.game:
            page = html.game_page(results, args.game, content)
        else:
            page = html.session_page(results, args.session, html.find_trajectory(args.dir, args.session), content)
    except ValueError as exc:
        raise FileError(f"--{'game' if args.game else 'session'} {ident}: {exc}") from None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    show(f"wrote {out} ({len(page.encode()) // 1024} KB)")
    return 0
