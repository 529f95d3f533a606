"""``python -m toolkit``: play, replay, engineer, engineer-suite, sweep, tournament, report."""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import yaml

from toolkit import tournament
from toolkit.agent.human import StdinChannel
from toolkit.agent.role import RoleConfig, load_role
from toolkit.agent.session import Session
from toolkit.agent.suite import TASKS_DIR, load_tasks, run_suite
from toolkit.llm import parse_spec
from toolkit.llm.local import main as local_main
from toolkit.preflight import check_extra, check_spec, make_folder, mask_url, out_folder, results_folder
from toolkit.record import Run
from toolkit.report import write_report
from toolkit.schemas import FileError, did_you_mean, load_scripted, one_line, printable, read_yaml, validate
from toolkit.sweep import load_sweep, run_sweep
from toolkit.ui import transcript
from toolkit.werewolf.experience import ExperiencePool
from toolkit.werewolf.game import GameConfig, GameRunner
from toolkit.werewolf.preset import available_presets, load_preset
from toolkit.werewolf.replay import EVENT_FIELDS, event_tuple, recorded_game, replay_game
from toolkit.werewolf.rules import PUBLIC, Event, Game


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class Transcript:
    """Prints events as they happen (god view: night actions shown, marked private; ``toolkit.ui.transcript``
    formats them, as for the notebook widget)."""

    def __init__(self, colour: bool | None = None, stream: Any = None):
        self.stream = stream or sys.stdout
        self.colour = self.stream.isatty() and not os.environ.get("NO_COLOR") if colour is None else colour
        self.last_announcement = ""

    def __call__(self, e: Event, game: Game) -> None:
        line = transcript.line(e, game.roles, True, self.last_announcement)
        if e.kind == "announcement" and e.visibility == PUBLIC:
            self.last_announcement = e.text
        if line is not None:
            print(transcript.ansi(line, self.colour), file=self.stream)


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        for part in item.split(","):
            key, sep, value = part.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise FileError(f"{what} must look like Player3=VALUE, got {one_line(part, 80)!r}")
            out[key.strip()] = value.strip()
    return out


def _config(args: argparse.Namespace) -> dict[str, Any]:
    """The options as the runs table keeps them (credentials in URLs masked)."""
    return {k: (mask_url(v) if isinstance(v, str) else [mask_url(x) if isinstance(x, str) else x for x in v]
                if isinstance(v, list) else v) for k, v in vars(args).items() if k != "func"}


def check_play(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, str] | None]:
    """Everything ``play`` needs, checked before anything is created. Returns (seats, roles)."""

    preset = load_preset(args.preset)
    if args.max_days is not None and args.max_days < 1:
        raise FileError(f"--max-days must be at least 1, got {args.max_days}")
    if args.temperature is not None and not (math.isfinite(args.temperature) and 0 <= args.temperature <= 2):
        raise FileError(f"--temperature must be between 0 and 2, got {args.temperature}")
    seats = _pairs(args.seat or [], "--seat")
    for seat in seats:
        if seat not in preset.seats:
            raise FileError(f"--seat {seat}: no such seat in {preset.name}{did_you_mean(seat, preset.seats)}; "
                            f"seats are {preset.seats[0]}..{preset.seats[-1]}")
    roles = _pairs([args.roles], "--roles") if args.roles else None
    specs = {seat: seats.get(seat, args.model) for seat in preset.seats}
    for spec in dict.fromkeys([args.model, *seats.values()]):
        check_spec(spec, preset.seats, "--seat" if spec != args.model else "--model")
    if roles is None:  # the first scripted file with roles fixes them (as the game reads it)
        for spec in specs.values():
            kind, arg = parse_spec(spec)
            if kind == "scripted" and (script := load_scripted(arg)).roles:
                roles = dict(script.roles)
                break
    try:
        Game(preset, args.seed, roles)
    except ValueError as exc:
        raise FileError(f"{'--roles' if args.roles else 'roles'}: {one_line(exc)}") from None
    out_folder(args.out)
    return seats, roles


def unused_decisions(runner: Any) -> list[str]:
    """Scripted decisions the game never asked for (e.g. for a seat that was dead by then)."""
    out = []
    seen: set[int] = set()
    for player in runner.players.values():
        backend = player.model.backend
        if id(backend) in seen or not getattr(backend, "decisions", None):
            continue
        seen.add(id(backend))
        used = getattr(backend, "_used", {}).get(runner.game_id, set())
        for i, d in enumerate(backend.decisions):
            if i not in used:
                out.append(f"{getattr(backend, 'path', '?')} decision #{i + 1} "
                           f"(day {d.get('day')} {d.get('action')} {d.get('seat')})")
    return out


def cmd_play(args: argparse.Namespace) -> int:
    seats, roles = check_play(args)
    make_folder(args.out)
    pool = ExperiencePool(os.path.join(args.out, "experience", "pool.jsonl")) if args.experience else None
    config = GameConfig(preset=args.preset, seed=args.seed, model=args.model, seats=seats, roles=roles,
                        reflection=args.reflection, experience=args.experience, max_days=args.max_days,
                        temperature=args.temperature, experience_pool=pool)
    config.fail_on_failed_seat = not args.keep_going
    with Run(args.out, "play", config=_config(args), seed=args.seed) as run:
        runner = GameRunner(config, run, on_event=None if args.quiet else Transcript())
        result = asyncio.run(runner.play())
    for unused in unused_decisions(runner):
        print(f"warning: {unused} was never used", file=sys.stderr)
    print(f"winner: {result.winner} ({mask_url(result.win_reason.splitlines()[0])}) after {plural(result.days, 'day')}")
    print(f"tables: {run.folder}  (game {result.game_id}, {plural(result.log.calls, 'call')}, "
          f"{plural(result.log.fallbacks, 'fallback')})")
    return 0 if result.winner != "error" else 1


def cmd_replay(args: argparse.Namespace) -> int:
    results_folder(args.dir)
    if args.fork_at is not None:
        if args.fork_at < 0:
            raise FileError(f"--fork-at must be 0 or more, got {args.fork_at}")
        check_spec(args.model)
    recorded_game(args.dir, args.game)  # says which games there are when the id is wrong
    out_folder(args.out)
    with Run(args.out, "replay", config=_config(args)) as run:
        result, recorded = asyncio.run(replay_game(args.dir, args.game, run, args.fork_at, args.model,
                                                   None if args.quiet else Transcript()))
    new = [event_tuple(e) for e in result.events]
    print(f"winner: {result.winner} ({result.win_reason.splitlines()[0]}) after {plural(result.days, 'day')}")
    if args.fork_at is None:
        same = new == recorded
        print(f"replayed {len(new)} events: {'identical to the recording' if same else 'DIFFERENT from the recording'}")
        if not same:
            i = next((i for i, (a, b) in enumerate(zip(new, recorded)) if a != b), min(len(new), len(recorded)))
            print(f"first difference at event {i} (recorded {len(recorded)} events, replayed {len(new)}):\n"
                  f"  recorded {dict(zip(EVENT_FIELDS, recorded[i])) if i < len(recorded) else '(none)'}\n"
                  f"  replayed {dict(zip(EVENT_FIELDS, new[i])) if i < len(new) else '(none)'}")
            return 1
    else:
        same = sum(1 for a, b in zip(new[: args.fork_at], recorded[: args.fork_at]) if a == b)
        print(f"forked at event {args.fork_at} ({same} recorded events reproduced), then {args.model} played on")
    return 0


def _role(name: str) -> Any:
    """An agent role by name, or a role file checked like every other user file."""

    if Path(name).suffix:
        validate(RoleConfig, read_yaml(name, "role"), f"--role {name}", "role")
    try:
        return load_role(name)
    except ValueError as exc:
        raise FileError(f"--role {name}: {one_line(exc)}") from None


def cmd_engineer(args: argparse.Namespace) -> int:
    if not args.task.strip():
        raise FileError("--task is empty; say what the agent should do")
    out_folder(args.workspace, "--workspace")
    if args.max_steps is not None and args.max_steps < 1:
        raise FileError(f"--max-steps must be at least 1, got {args.max_steps}")
    role = _role(args.role)
    check_spec(args.model)
    out_folder(args.out)
    with Run(args.out, "engineer", config=_config(args)) as run:
        session = Session(role, args.task, args.workspace, args.model, run=run, channel=StdinChannel(),
                          eval_mode=args.eval or None, max_steps=args.max_steps, environment=args.env)
        result = asyncio.run(session.run())
    for t in result.tool_calls:
        print(f"[{'ok' if t.ok else 'FAILED'}] {t.tool} {t.args_json()[:100]}")
    print(f"ended_by: {result.ended_by} after {plural(result.steps, 'step')}; tables: {run.folder}; trajectory: "
          f"{session.workspace.root / '.agent' / 'trajectories' / (result.session_id + '.json')}")
    return 0 if result.ended_by != "error" else 1


def cmd_suite(args: argparse.Namespace) -> int:

    known = sorted(p.parent.name for p in TASKS_DIR.glob("*/task.yaml"))
    for name in args.task or []:
        if name not in known:
            raise FileError(f"--task {name}: no such task{did_you_mean(name, known)}; tasks are {', '.join(known)}")
    tasks = load_tasks(names=args.task or None)
    for task in tasks:
        check_spec(args.model.replace("{task}", str(task.folder)), option="--model")
    out_folder(args.out)
    with Run(args.out, "engineer-suite", config=_config(args)) as run:
        results = asyncio.run(run_suite(args.model, run, Path(run.folder) / "workspaces", names=args.task or None,
                                        environment=args.env))
    for name, r in results.items():
        print(f"{name:28s} success={r.success!s:5s} ended_by={r.ended_by:9s} steps={r.steps} "
              f"tools={len(r.tool_calls)}")
    print(f"succeeded: {sum(bool(r.success) for r in results.values())}/{len(results)}; tables: {run.folder}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    if args.workers < 1:
        raise FileError(f"--workers must be at least 1, got {args.workers}")
    if args.scheduler and args.executor != "dask":
        raise FileError("--scheduler needs --executor dask")
    if args.executor == "dask":
        check_extra("dask.distributed", "dask", "--executor dask")
    out_folder(args.results, "--results")
    _, cells = load_sweep(args.file, args.results)  # the whole file is checked before any cell runs
    specs = {}
    for cell in cells:  # every model spec a cell would use (a dead endpoint fails here, not in each game)
        for key in ("model", "wolf_model", "village_model"):
            if isinstance(cell.parameters.get(key), str):
                specs.setdefault(cell.parameters[key], key)
        seats = cell.parameters.get("seats")
        for seat, spec in (seats.items() if isinstance(seats, dict) else ()):
            specs.setdefault(str(spec), f"seats.{seat}")
    for spec, key in specs.items():
        if "{task}" not in spec:  # the engineer suite fills in each task's folder itself
            check_spec(spec, option=f"{args.file}: {key}")
    summary = run_sweep(args.file, workers=args.workers, executor=args.executor, scheduler=args.scheduler,
                        results_root=args.results)
    columns = [c for c in ("cell_id", "ok", "games", "village_win_rate", "village_ci_low", "village_ci_high",
                           "sessions", "success_rate", "error") if c in summary.columns]
    print(summary[columns].to_string(index=False))
    failed = int((~summary["ok"].astype(bool)).sum())
    print(f"cells: {len(summary)}, failed: {failed}")
    return 1 if failed else 0


def cmd_report(args: argparse.Namespace) -> int:
    results_folder(args.dir)
    out_folder(args.out or args.dir)
    for path in write_report(args.dir, args.out):
        print(path)
    return 0


KINDS = ("auto", "bubblewrap", "local", "docker", "podman")  # toolkit.agent.environment.KINDS (kept light)

EXAMPLES = """examples (tables go to git-ignored folders under results/):
  python -m toolkit play --seed 3                                   heuristic players, with a transcript
  python -m toolkit play --seat Player3=random --quiet              one random seat, result lines only
  python -m toolkit play --model openai:qwen2.5@http://127.0.0.1:8000/v1   any OpenAI-compatible server
  python -m toolkit replay results --game GAME_ID                   re-run a logged game exactly
  python -m toolkit sweep experiments/sweeps/example.yaml --results results/sweeps --workers 2
  python -m toolkit report results/sweeps/examples                  PNGs and summary.md
  python -m toolkit engineer-suite --out results/suite              the offline engineer tasks
A mistake in an option or a file is one line on stderr and exit code 2, before anything is written."""


class Parser(argparse.ArgumentParser):
    """Usage errors in one line (with the subcommand), exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m toolkit", description=__doc__, epilog=EXAMPLES,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    play = sub.add_parser("play", help="play one werewolf game and write its tables",
                          description="Play one werewolf game; print the transcript and write its tables.")
    play.add_argument("--preset", default="classic7", help=f"one of {available_presets()} or a YAML path")
    play.add_argument("--seed", type=int, default=0, help="seeds the roles and every random choice (default 0)")
    play.add_argument("--model", default="heuristic", help="spec for every seat (heuristic, random, "
                      "scripted:PATH, replay:DIR, chaos:RATE, local, openai:MODEL[@URL])")
    play.add_argument("--seat", action="append", metavar="SEAT=SPEC",
                      help="a seat's own spec, e.g. Player3=random (repeatable)")
    play.add_argument("--roles", metavar="SEAT=ROLE,...", help="fix the roles instead of shuffling")
    play.add_argument("--reflection", action=argparse.BooleanOptionalAction, default=False,
                      help="players reflect each day (a summary and a role guess per seat)")
    play.add_argument("--experience", action="store_true", help="use and grow the experience pool (in OUT)")
    play.add_argument("--max-days", type=int, metavar="N", help="end as a draw after N days (default: the preset's)")
    play.add_argument("--temperature", type=float, metavar="T", help="sampling temperature for LLM seats (0-2)")
    play.add_argument("--keep-going", action="store_true",
                      help="a seat whose every call failed plays on with fallbacks "
                           "(default: the game ends as an error)")
    play.add_argument("--out", default="results", metavar="DIR",
                      help="results folder; the run goes to DIR/play-<time>-<id>/ (default: results)")
    play.add_argument("--quiet", action="store_true", help="no transcript, only the result lines")
    play.set_defaults(func=cmd_play)

    replay = sub.add_parser("replay", help="re-run a logged game from its recorded answers")
    replay.add_argument("dir", help="results folder holding the game")
    replay.add_argument("--game", required=True, help="game_id to replay")
    replay.add_argument("--fork-at", type=int, metavar="SEQ", help="replay up to this event seq, then let --model play")
    replay.add_argument("--model", default="heuristic", help="spec that plays after --fork-at")
    replay.add_argument("--out", default="results/replays", metavar="DIR",
                        help="where the replayed run is written (default: results/replays)")
    replay.add_argument("--quiet", action="store_true", help="no transcript, only the result lines")
    replay.set_defaults(func=cmd_replay)

    eng = sub.add_parser("engineer", help="run the engineer agent on a task in a workspace folder")
    eng.add_argument("--task", required=True, help="what the agent should do, in words")
    eng.add_argument("--workspace", required=True, metavar="DIR", help="the folder the agent works in")
    eng.add_argument("--model", default="openai:gpt-4o-mini", help="any model spec; scripted:PATH plays a file")
    eng.add_argument("--role", default="engineer", help="a role in prompts/agent/roles/ or a YAML path")
    eng.add_argument("--max-steps", type=int, metavar="N", help="stop after N steps (default: the role's)")
    eng.add_argument("--eval", action="store_true", help="end the session at git pull/push/commit")
    eng.add_argument("--out", default="results", metavar="DIR", help="results folder (default: results)")
    eng.add_argument("--env", choices=KINDS, help="where commands run (default: the role's, auto = bubblewrap "
                     "where it works, else local = unconfined)")
    eng.set_defaults(func=cmd_engineer)

    suite = sub.add_parser("engineer-suite", help="run the offline engineer task suite")
    suite.add_argument("--model", default="scripted:{task}/good.yaml",
                       help="spec; {task} stands for each task's folder")
    suite.add_argument("--task", action="append", help="only these tasks (repeatable)")
    suite.add_argument("--out", default="results", metavar="DIR", help="results folder (default: results)")
    suite.add_argument("--env", choices=KINDS, help="where commands run (default: auto = bubblewrap where it "
                       "works, else local)")
    suite.set_defaults(func=cmd_suite)

    sweep = sub.add_parser("sweep", help="run a sweep file: one papermill notebook run per grid cell")
    sweep.add_argument("file", help="the sweep's YAML file (see experiments/sweeps/)")
    sweep.add_argument("--workers", type=int, default=1, help="cells run at once (default 1)")
    sweep.add_argument("--executor", choices=["local", "dask"], default="local",
                       help="local processes, or Dask (the dask extra)")
    sweep.add_argument("--scheduler", help="a dask scheduler address (default: a LocalCluster)")
    sweep.add_argument("--results", default="results", metavar="DIR",
                       help="results root; cells go to DIR/<sweep>/<cell>/ (default: results)")
    sweep.set_defaults(func=cmd_sweep)

    tour = sub.add_parser("tournament", help="plan and run a tournament file (role rotation, seat shuffling)")
    tournament.add_arguments(tour)
    tour.set_defaults(func=tournament.command)

    report = sub.add_parser("report", help="write plots (PNG) and summary.md for a results folder")
    report.add_argument("dir", help="a results folder (every run below it is read)")
    report.add_argument("--out", metavar="DIR", help="where to write (default: DIR)")
    report.set_defaults(func=cmd_report)

    local = sub.add_parser("local-server", help="serve the small local model on 127.0.0.1 (extra: local)",
                           add_help=False)
    local.set_defaults(func=None)
    return parser


def _describe(exc: BaseException) -> str:
    """A user error as one line."""
    if isinstance(exc, FileError):
        return mask_url(printable(str(exc)))
    if isinstance(exc, OSError) and exc.filename is not None:
        return one_line(f"{exc.filename}: {exc.strerror or exc}")
    if isinstance(exc, ImportError):
        return one_line(f"{exc.name or exc} is not installed ({exc}); install the extra that needs it, "
                        "e.g. pip install -e '.[dask]'")
    return mask_url(one_line(exc))


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"warning: {one_line(message, 500)}", file=file or sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Every user error (a bad option, file, folder, spec, a missing extra) is one line on stderr and exit
    code 2, before anything is created; a bug still shows its traceback."""

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["local-server"]:  # its own options: --port, --ctx, --threads, --parallel

        return local_main(argv[1:])
    args = build_parser().parse_args(argv)
    shown = warnings.showwarning
    warnings.showwarning = _warning_line
    try:
        return args.func(args)
    except BrokenPipeError:  # the reader went away (``| head``): nothing more to say
        sys.stdout = open(os.devnull, "w")
        return 1
    except (FileError, OSError, ValueError, yaml.YAMLError, ImportError) as exc:
        print(f"error: {_describe(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        warnings.showwarning = shown
