"""``python -m toolkit engineer-suite``: the offline engineer task suite."""

from __future__ import annotations

import argparse

from toolkit.cli.common import run_config, show
from toolkit.cli.engineer import env_argument

DESCRIPTION = None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="scripted:{task}/good.yaml",
                       help="spec; {task} stands for each task's folder")
    parser.add_argument("--task", action="append", help="only these tasks (repeatable)")
    parser.add_argument("--out", default="results", metavar="DIR", help="results folder (default: results)")
    env_argument(parser, "auto")


def run(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from toolkit.agent.suite import TASKS_DIR, load_tasks, run_suite
    from toolkit.cli.preflight import check_environment, check_spec, out_folder
    from toolkit.core.files import FileError, did_you_mean
    from toolkit.record.run_log import Run

    known = sorted(p.parent.name for p in TASKS_DIR.glob("*/task.yaml"))
    for name in args.task or []:
        if name not in known:
            raise FileError(f"--task {name}: no such task{did_you_mean(name, known)}; tasks are {', '.join(known)}")
    check_environment(args.env or "auto")
    tasks = load_tasks(names=args.task or None)
    for task in tasks:
        check_spec(args.model.replace("{task}", str(task.folder)), option="--model")
    out_folder(args.out)
    with Run(args.out, "engineer-suite", config=run_config(args)) as run:
        results = asyncio.run(run_suite(args.model, run, Path(run.folder) / "workspaces", names=args.task or None,
                                        environment=args.env))
    for name, r in results.items():
        show(f"{name:28s} success={r.success!s:5s} ended_by={r.ended_by:9s} steps={r.steps} "
              f"tools={len(r.tool_calls)} session={r.session_id}")
    show(f"succeeded: {sum(bool(r.success) for r in results.values())}/{len(results)}; tables: {run.folder}")
    show(f"replay a session: python -m toolkit view {run.folder} --session SESSION")
    return 0
