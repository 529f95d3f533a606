"""``python -m toolkit engineer``: the engineer agent on a task in a workspace folder."""

from __future__ import annotations

import argparse
from typing import Any

from toolkit.cli.common import plural, run_config, show

DESCRIPTION = None


def env_argument(parser: argparse.ArgumentParser, default: str) -> None:
    """``--env``: the registered kinds of environment (``toolkit.agent.environments.kinds``, a light module)."""
    from toolkit.agent.environments import kinds

    parser.add_argument("--env", choices=kinds.choices(), metavar="KIND", help=f"where commands run (default: "
                        f"{default}; auto = bubblewrap where it works, else local): " + "; ".join(
                            f"{k.name}: {k.summary}" for k in kinds.KINDS.values()).replace("%", "%%"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", help="what the agent should do, in words")
    parser.add_argument("--apply", metavar="SESSION", help="merge a finished session's result into --workspace "
                        "(its changes to the working tree; without this the folder stays as it was)")
    parser.add_argument("--workspace", required=True, metavar="DIR", help="the folder the agent works in")
    parser.add_argument("--model", default="openai:gpt-4o-mini", help="any model spec; scripted:PATH plays a file")
    parser.add_argument("--role", default="engineer", help="a role in prompts/agent/roles/ or a YAML path")
    parser.add_argument("--max-steps", type=int, metavar="N", help="stop after N steps (default: the role's)")
    parser.add_argument("--eval", action="store_true", help="end the session at git pull/push/commit")
    parser.add_argument("--out", default="results", metavar="DIR", help="results folder (default: results)")
    env_argument(parser, "the role's")


def role(name: str) -> Any:
    """An agent role by name, or a role file checked like every other user file."""
    from pathlib import Path

    from toolkit.agent.loop.role import RoleConfig, load_role
    from toolkit.core.files import FileError, one_line, read_yaml, validate

    if Path(name).suffix:
        validate(RoleConfig, read_yaml(name, "role"), f"--role {name}", "role")
    try:
        return load_role(name)
    except ValueError as exc:
        raise FileError(f"--role {name}: {one_line(exc)}") from None


def existing_workspace(path: str) -> None:
    """The agent works in a folder the user has: a mistyped path is refused, not created (in the repository)."""
    from pathlib import Path

    from toolkit.core.files import FileError

    if not Path(path).is_dir():
        raise FileError(f"--workspace {path}: no such folder; give the folder the agent should work in "
                        f"(create it first with mkdir -p {path} for a new project)")


def run(args: argparse.Namespace) -> int:
    import asyncio

    from toolkit.agent.environments.workspace import check_workspace
    from toolkit.agent.loop.session import Session, SessionConfig
    from toolkit.agent.tools.human import StdinChannel
    from toolkit.cli.preflight import check_environment, check_spec, out_folder
    from toolkit.core.files import FileError
    from toolkit.core.printable import printable
    from toolkit.record.run_log import Run

    if args.apply:
        return apply(args)
    if not (args.task or "").strip():
        raise FileError("--task is empty; say what the agent should do (or --apply SESSION)")
    out_folder(args.workspace, "--workspace")
    check_workspace(args.workspace, args.out)  # not /, the home folder, a system folder, the toolkit's tree…
    if args.max_steps is not None and args.max_steps < 1:
        raise FileError(f"--max-steps must be at least 1, got {args.max_steps}")
    chosen = role(args.role)
    check_environment(args.env or chosen.environment.kind, "--env" if args.env else f"--role {args.role}: environment")
    check_spec(args.model)
    existing_workspace(args.workspace)
    out_folder(args.out)
    with Run(args.out, "engineer", config=run_config(args)) as run:
        session = Session(SessionConfig(chosen, args.task, args.workspace, args.model, run=run, channel=StdinChannel(),
                                        eval_mode=args.eval or None, max_steps=args.max_steps,
                                        environment=args.env))
        show(first_line(session.environment))
        try:
            result = asyncio.run(session.run())
        except KeyboardInterrupt:  # Ctrl-C: the session kept its trajectory and row; the run closes on the way out
            if session.result is not None:
                show(ended_line(session, run))
            raise
    for t in result.tool_calls:
        show(f"[{'ok' if t.ok else 'FAILED'}] {printable(t.tool)} {printable(t.args_json()[:100])}")
    show(ended_line(session, run))
    show(result_line(session, args.workspace))
    return 0 if result.ended_by != "error" else 1


def first_line(environment) -> str:
    """The session's first line: where its commands run, and, for an environment that confines nothing, so."""
    if environment.confined:
        return f"environment: {environment.describe()}"
    return (f"environment: {environment.name}: UNCONFINED: the agent's commands run as you on this host and can "
            "read and change anything you can, this folder included")


def result_line(session, workspace: str) -> str:
    """The last line, on one line whatever the sandbox put in it (names and errors shown escaped)."""
    from toolkit.core.printable import printable

    said = printable(session.landed or session.land_error or "none")
    if not session.environment.confined:
        return (f"result: {said}; UNCONFINED (environment {session.environment.name}): its commands may have "
                f"changed your folder and anything else you can write; engineer --apply {session.session_id} "
                f"--workspace {printable(workspace)} merges the copy's changes")
    return (f"result: {said}; your folder is unchanged until engineer --apply {session.session_id} --workspace "
            f"{printable(workspace)}")


def ended_line(session, run) -> str:
    from toolkit.core.printable import printable

    result = session.result
    trajectory = session.workspace.root / ".agent" / "trajectories" / f"{result.session_id}.json"
    return printable(f"ended_by: {result.ended_by} after {plural(result.steps, 'step')}; tables: {run.folder}; "
                     f"trajectory: {trajectory}")


def apply(args: argparse.Namespace) -> int:
    """``--apply SESSION``: the session's result merged into the folder, in one line."""
    from pathlib import Path

    from toolkit.agent.environments import result
    from toolkit.core.files import FileError

    from toolkit.core.printable import printable

    existing_workspace(args.workspace)
    try:  # one line each, whatever names the result holds
        show(printable(result.apply(Path(args.workspace).resolve(), args.apply)))
    except result.ResultError as exc:
        raise FileError(printable(str(exc))) from None
    return 0
