"""``python -m toolkit``: play, replay, engineer, engineer-suite, sweep, tournament, report, export, view,
import, local-server.

One module per command (``toolkit/cli/<command>.py``: ``add_arguments``, ``run``), named in ``COMMANDS`` with its
help line, imported only when that command runs, so ``--help`` starts in a fraction of a second. Every user error
(a bad option, file, folder, spec, a missing extra) is one line on stderr and exit code 2, before anything is
created; a bug still shows its traceback."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from importlib import import_module

from toolkit.cli.common import log_to_terminal, show

# command -> (its module under toolkit.cli, its line of the top-level --help: kept here, so that --help imports no
# command). Adding a command: its module (add_arguments, run, DESCRIPTION) and one line here.
COMMANDS: dict[str, tuple[str | None, str]] = {
    "play": ("play", "play one werewolf game and write its tables"),
    "replay": ("replay", "re-run a logged game from its recorded answers"),
    "engineer": ("engineer", "run the engineer agent on a task in a workspace folder"),
    "engineer-suite": ("engineer_suite", "run the offline engineer task suite"),
    "sweep": ("sweep", "run a sweep file: one papermill notebook run per grid cell"),
    "tournament": ("tournament", "plan and run a tournament file (every ordered pair of models per side, seat "
                                 "shuffling)"),
    "report": ("report", "write plots (PNG) and summary.md for a results folder"),
    "export": ("export", "export games and sessions in another format: {exporters}"),  # the registry's names
    "view": ("view", "write a game's or session's replay as one self-contained HTML file"),
    "import": ("import_", "import Kaggle Game Arena werewolf replays as this toolkit's tables"),
    "local-server": (None, "serve the small local model on 127.0.0.1 (extra: local)"),
}

PLAYS = {"play", "engineer", "engineer-suite", "sweep", "tournament"}  # commands that may call a model's endpoint

EXAMPLES = """examples (tables go to git-ignored folders under results/):
  python -m toolkit play --seed 3                                   heuristic players, with a transcript
  python -m toolkit play --seat Player3=random --quiet              one random seat, result lines only
  python -m toolkit play --model openai:qwen2.5@http://127.0.0.1:8000/v1   any OpenAI-compatible server
  python -m toolkit replay results --game GAME_ID                   re-run a logged game exactly
  python -m toolkit sweep experiments/sweeps/example.yaml --out results/sweeps --workers 2
  python -m toolkit report results/sweeps/example-sweep             PNGs and summary.md
  python -m toolkit engineer-suite --out results/suite              the offline engineer tasks
A mistake in an option or a file is one line on stderr and exit code 2, before anything is written."""


def _one_line(text: object, limit: int = 300) -> str:
    from toolkit.core.files import one_line

    return one_line(text, limit)


class Parser(argparse.ArgumentParser):
    """Usage errors in one line (with the subcommand), exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (see {self.prog} --help)\n")


def command_module(name: str):
    return import_module(f"toolkit.cli.{COMMANDS[name][0]}")


def plain(text: str) -> str:
    """A docstring's reStructuredText made plain text for ``--help`` (``python -m toolkit`` without its quotes)."""
    return text.replace("``", "")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that command's options are built (the others' modules stay unimported)."""
    parser = Parser(prog="python -m toolkit", description=plain(__doc__.split("\n\n")[0]), epilog=EXAMPLES,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        if "{exporters}" in help_text:  # the registry is light to import (its writers are imported when they run)
            from toolkit.export import EXPORTERS

            help_text = help_text.format(exporters=", ".join(EXPORTERS))
        if module_name is None:  # local-server: its own options (main hands it its arguments)
            sub.add_parser(name, help=help_text, add_help=False).set_defaults(func=None)
            continue
        if only is not None and name != only:
            sub.add_parser(name, help=help_text)
            continue
        module = command_module(name)
        command = sub.add_parser(name, help=help_text, description=module.DESCRIPTION)
        module.add_arguments(command)
        command.set_defaults(func=module.run)
    return parser


def _describe(exc: BaseException) -> str:
    """A user error as one line."""
    from toolkit.core.files import FileError, one_line, printable
    from toolkit.core.secrets import mask_url_credentials

    if isinstance(exc, FileError):
        return mask_url_credentials(printable(str(exc)))
    if isinstance(exc, OSError) and exc.filename is not None:
        return one_line(f"{exc.filename}: {exc.strerror or exc}")
    if isinstance(exc, ImportError):
        return one_line(f"{exc.name or exc} is not installed ({exc}); install the extra that needs it, "
                        "e.g. pip install -e '.[dask]'")
    return mask_url_credentials(one_line(exc))


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    show(f"warning: {_one_line(message, 500)}", file=file or sys.stderr)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["local-server"]:  # its own options: --port, --ctx, --threads, --parallel
        from toolkit.llm.llama_server import main as local_main

        return local_main(argv[1:])
    only = argv[0] if argv and argv[0] in COMMANDS else None
    try:  # plug-ins first: their names are choices of the commands' options
        from toolkit.core.plugins import load

        load()
    except ImportError as exc:
        show(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    args = build_parser(only).parse_args(argv)
    shown = warnings.showwarning
    warnings.showwarning = _warning_line
    last_resort = log_to_terminal()
    import yaml

    from toolkit.core.files import FileError

    try:
        if args.command in PLAYS and os.environ.get("TOOLKIT_SHARED_LIMITS", "").strip():
            from toolkit.llm.shared_limits import check

            check()  # a Dask scheduler there that does not answer: refused now, not in every game
        return args.func(args)
    except BrokenPipeError:  # the reader went away (``| head``): nothing more to say
        sys.stdout = open(os.devnull, "w")
        return 1
    except (FileError, OSError, ValueError, yaml.YAMLError, ImportError) as exc:
        show(f"error: {_describe(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        show("interrupted", file=sys.stderr)
        return 130
    finally:
        warnings.showwarning = shown
        logging.lastResort = last_resort
