"""``python -m toolkit``: play, replay, engineer, engineer-suite, sweep, report."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from toolkit.record import Run
from toolkit.werewolf.preset import available_presets
from toolkit.ui import transcript
from toolkit.werewolf.rules import Event, Game

class Transcript:
    """Prints events as they happen (god view: night actions shown, marked private)."""

    def __init__(self, colour: bool | None = None, stream: Any = None):
        self.stream = stream or sys.stdout
        self.colour = self.stream.isatty() and not os.environ.get("NO_COLOR") if colour is None else colour

    def __call__(self, e: Event, game: Game) -> None:
        print(transcript.ansi(transcript.line(e, game.roles), self.colour), file=self.stream)


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        for part in item.split(","):
            key, sep, value = part.partition("=")
            if not sep or not key or not value:
                raise SystemExit(f"error: {what} must look like Player3=VALUE, got {part!r}")
            out[key.strip()] = value.strip()
    return out


def cmd_play(args: argparse.Namespace) -> int:
    from toolkit.werewolf.experience import ExperiencePool
    from toolkit.werewolf.game import GameConfig, GameRunner

    seats = _pairs(args.seat or [], "--seat")
    roles = _pairs([args.roles], "--roles") if args.roles else None
    pool = ExperiencePool(os.path.join(args.out, "experience", "pool.jsonl")) if args.experience else None
    config = GameConfig(preset=args.preset, seed=args.seed, model=args.model, seats=seats, roles=roles,
                        reflection=args.reflection, experience=args.experience, max_days=args.max_days,
                        temperature=args.temperature, experience_pool=pool)
    try:
        with Run(args.out, "play", config={k: v for k, v in vars(args).items() if k != "func"},
                 seed=args.seed) as run:
            runner = GameRunner(config, run, on_event=None if args.quiet else Transcript())
            result = asyncio.run(runner.play())
    except ValueError as exc:  # a broken preset, spec, roles or script: say what, not a traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"winner: {result.winner} ({result.win_reason.splitlines()[0]}) after {result.days} days")
    print(f"tables: {run.folder}  (game {result.game_id}, {result.log.calls} calls, "
          f"{result.log.fallbacks} fallbacks)")
    return 0 if result.winner != "error" else 1


def cmd_replay(args: argparse.Namespace) -> int:
    from toolkit.werewolf.replay import EVENT_FIELDS, event_tuple, replay_game

    try:
        with Run(args.out, "replay", config={k: v for k, v in vars(args).items() if k != "func"}) as run:
            result, recorded = asyncio.run(replay_game(args.dir, args.game, run, args.fork_at, args.model,
                                                       None if args.quiet else Transcript()))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    new = [event_tuple(e) for e in result.events]
    print(f"winner: {result.winner} ({result.win_reason.splitlines()[0]}) after {result.days} days")
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


def cmd_engineer(args: argparse.Namespace) -> int:
    from toolkit.agent.human import StdinChannel
    from toolkit.agent.role import load_role
    from toolkit.agent.session import Session

    try:
        role = load_role(args.role)
        with Run(args.out, "engineer", config={k: v for k, v in vars(args).items() if k != "func"}) as run:
            session = Session(role, args.task, args.workspace, args.model, run=run, channel=StdinChannel(),
                              eval_mode=args.eval or None, max_steps=args.max_steps, environment=args.env)
            result = asyncio.run(session.run())
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for t in result.tool_calls:
        print(f"[{'ok' if t.ok else 'FAILED'}] {t.tool} {t.args_json()[:100]}")
    print(f"ended_by: {result.ended_by} after {result.steps} steps; tables: {run.folder}; trajectory: "
          f"{session.workspace.root / '.agent' / 'trajectories' / (result.session_id + '.json')}")
    return 0 if result.ended_by != "error" else 1


def cmd_suite(args: argparse.Namespace) -> int:
    from pathlib import Path

    from toolkit.agent.suite import run_suite

    try:
        with Run(args.out, "engineer-suite", config={k: v for k, v in vars(args).items() if k != "func"}) as run:
            results = asyncio.run(run_suite(args.model, run, Path(run.folder) / "workspaces",
                                            names=args.task or None, environment=args.env))
    except ValueError as exc:  # e.g. an environment that cannot run here
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name, r in results.items():
        print(f"{name:28s} success={r.success!s:5s} ended_by={r.ended_by:9s} steps={r.steps} "
              f"tools={len(r.tool_calls)}")
    print(f"succeeded: {sum(bool(r.success) for r in results.values())}/{len(results)}; tables: {run.folder}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from toolkit.sweep import run_sweep

    try:
        summary = run_sweep(args.file, workers=args.workers, executor=args.executor, scheduler=args.scheduler,
                            results_root=args.results)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    columns = [c for c in ("cell_id", "ok", "games", "village_win_rate", "village_ci_low", "village_ci_high",
                           "sessions", "success_rate", "error") if c in summary.columns]
    print(summary[columns].to_string(index=False))
    failed = int((~summary["ok"].astype(bool)).sum())
    print(f"cells: {len(summary)}, failed: {failed}")
    return 1 if failed else 0


def cmd_report(args: argparse.Namespace) -> int:
    from toolkit.report import write_report

    for path in write_report(args.dir, args.out):
        print(path)
    return 0


KINDS = ("auto", "bubblewrap", "local", "docker", "podman")  # toolkit.agent.environment.KINDS (kept light)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m toolkit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    play = sub.add_parser("play", help="play one werewolf game and write its tables")
    play.add_argument("--preset", default="classic7", help=f"one of {available_presets()} or a YAML path")
    play.add_argument("--seed", type=int, default=0)
    play.add_argument("--model", default="heuristic", help="spec for every seat (heuristic, random, "
                      "scripted:PATH, replay:DIR, chaos:RATE, local, openai:MODEL[@URL])")
    play.add_argument("--seat", action="append", metavar="SEAT=SPEC", help="a seat's own spec (repeatable)")
    play.add_argument("--roles", metavar="SEAT=ROLE,...", help="fix the roles instead of shuffling")
    play.add_argument("--reflection", action=argparse.BooleanOptionalAction, default=False)
    play.add_argument("--experience", action="store_true", help="use and grow the experience pool")
    play.add_argument("--max-days", type=int)
    play.add_argument("--temperature", type=float)
    play.add_argument("--out", default="results")
    play.add_argument("--quiet", action="store_true", help="no transcript, only the result line")
    play.set_defaults(func=cmd_play)

    replay = sub.add_parser("replay", help="re-run a logged game from its recorded answers")
    replay.add_argument("dir", help="results folder holding the game")
    replay.add_argument("--game", required=True, help="game_id to replay")
    replay.add_argument("--fork-at", type=int, help="replay up to this event seq, then let --model play")
    replay.add_argument("--model", default="heuristic", help="spec that plays after --fork-at")
    replay.add_argument("--out", default="results/replays")
    replay.add_argument("--quiet", action="store_true")
    replay.set_defaults(func=cmd_replay)

    eng = sub.add_parser("engineer", help="run the engineer agent on a task in a workspace folder")
    eng.add_argument("--task", required=True)
    eng.add_argument("--workspace", required=True)
    eng.add_argument("--model", default="openai:gpt-4o-mini", help="any model spec; scripted:PATH plays a file")
    eng.add_argument("--role", default="engineer", help="a role in prompts/agent/roles/ or a YAML path")
    eng.add_argument("--max-steps", type=int)
    eng.add_argument("--eval", action="store_true", help="end the session at git pull/push/commit")
    eng.add_argument("--out", default="results")
    eng.add_argument("--env", choices=KINDS, help="where commands run (default: the role's, auto = bubblewrap "
                     "where it works, else local = unconfined)")
    eng.set_defaults(func=cmd_engineer)

    suite = sub.add_parser("engineer-suite", help="run the offline engineer task suite")
    suite.add_argument("--model", default="scripted:{task}/good.yaml",
                       help="spec; {task} stands for each task's folder")
    suite.add_argument("--task", action="append", help="only these tasks (repeatable)")
    suite.add_argument("--out", default="results")
    suite.add_argument("--env", choices=KINDS, help="where commands run (default: auto)")
    suite.set_defaults(func=cmd_suite)

    sweep = sub.add_parser("sweep", help="run a sweep file: one papermill notebook run per grid cell")
    sweep.add_argument("file")
    sweep.add_argument("--workers", type=int, default=1)
    sweep.add_argument("--executor", choices=["local", "dask"], default="local")
    sweep.add_argument("--scheduler", help="a dask scheduler address (default: a LocalCluster)")
    sweep.add_argument("--results", default="results", help="results root; cells go to RESULTS/<sweep>/<cell>/")
    sweep.set_defaults(func=cmd_sweep)

    report = sub.add_parser("report", help="write plots (PNG) and summary.md for a results folder")
    report.add_argument("dir")
    report.add_argument("--out", help="where to write (default: DIR)")
    report.set_defaults(func=cmd_report)

    local = sub.add_parser("local-server", help="serve the small local model on 127.0.0.1 (extra: local)",
                           add_help=False)
    local.set_defaults(func=None)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["local-server"]:  # its own options: --port, --ctx, --threads, --parallel
        from toolkit.llm.local import main as local_main

        return local_main(argv[1:])
    args = build_parser().parse_args(argv)
    return args.func(args)
