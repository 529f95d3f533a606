"""The engineer suite run by this toolkit's agent and by mini-swe-agent on the same model, side by side: pass/fail
(the task's own harness-neutral check), steps, cost and time per task, one table.

Offline (the default) each agent follows its task's script: this toolkit's agent its ``good.yaml`` (through the
``scripted:`` spec), mini-swe-agent's ``DefaultAgent`` its ``mini.yaml`` (bash commands, through its own
``DeterministicModel``). With ``--model openai:NAME@URL`` both talk to that OpenAI-compatible endpoint (mini-swe-agent
through litellm, as ``openai/NAME`` with ``api_base=URL``, its text-based prompt and step limit 30).

mini-swe-agent runs its commands with its ``LocalEnvironment`` (no sandbox: on the host, in the task's workspace);
this toolkit's agent runs in its own environment (bubblewrap where it works). The checks run in this toolkit's
sandbox for both.

    python benchmarks/mini_swe_side_by_side.py [--model openai:NAME@URL] [--task NAME ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MSWEA_GLOBAL_CONFIG_DIR", tempfile.mkdtemp(prefix="mswea-"))  # not the home folder

from toolkit.agent.environments.environment import LocalEnvironment as ToolkitLocal  # noqa: E402
from toolkit.agent.suite import check, load_tasks, prepare_workspace, run_task  # noqa: E402
from toolkit.record.load import load  # noqa: E402
from toolkit.record.run_log import Run  # noqa: E402


def mini_model(task, spec: str | None):
    """mini-swe-agent's model: its DeterministicModel over the task's bash script, or litellm for an endpoint."""
    if spec is None:
        from minisweagent.models.test_models import DeterministicModel, make_output

        commands = yaml.safe_load((task.folder / "mini.yaml").read_text())["commands"]
        return DeterministicModel(outputs=[make_output(f"THOUGHT: step {i + 1}.\n\n```bash\n{c}\n```",
                                                       [{"command": c}], cost=0.0)
                                           for i, c in enumerate(commands)])
    from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel

    name, _, url = spec.removeprefix("openai:").partition("@")
    return LitellmTextbasedModel(model_name=f"openai/{name}", cost_tracking="ignore_errors",
                                 model_kwargs={"api_base": url or None,
                                               "api_key": os.environ.get("OPENAI_API_KEY", "none")})


def run_mini(task, spec: str | None, root: Path) -> dict:
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.local import LocalEnvironment

    work = prepare_workspace(task, root)
    config = yaml.safe_load((Path(__import__("minisweagent").__file__).parent / "config" /
                             "mini_textbased.yaml").read_text())["agent"]
    agent = DefaultAgent(mini_model(task, spec), LocalEnvironment(cwd=str(work), timeout=120),
                         system_template=config["system_template"], instance_template=config["instance_template"],
                         step_limit=30, cost_limit=0)
    start = time.perf_counter()
    try:
        result = agent.run(task.task)
        status = result.get("exit_status", "")
    except Exception as exc:  # a scripted model that runs out of answers, an endpoint that fails
        status = type(exc).__name__
    wall = time.perf_counter() - start
    here = ToolkitLocal(work, private=False)  # mini-swe-agent worked in the folder itself
    try:
        passed = check(task, here)
    finally:
        here.discard()
    return {"pass": passed, "steps": agent.n_calls, "cost": agent.cost, "time_s": wall,
            "ended_by": status}


def run_toolkit(task, spec: str | None, root: Path) -> dict:
    model = spec or "scripted:{task}/good.yaml"
    start = time.perf_counter()
    with Run(root / "results", "side-by-side") as run:
        result = asyncio.run(run_task(task, model, run, root / "workspaces"))
    wall = time.perf_counter() - start
    sessions = load(root / "results").sessions
    cost = sessions[sessions["task"].astype(str) == task.task]["cost_usd"]
    return {"pass": bool(result.success), "steps": result.steps,
            "cost": float(cost.iloc[-1]) if len(cost) and cost.notna().iloc[-1] else 0.0, "time_s": wall,
            "ended_by": result.ended_by}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="openai:NAME@URL for both agents (default: each task's script)")
    parser.add_argument("--task", action="append", help="only these tasks (repeatable)")
    parser.add_argument("--out", help="folder for workspaces and tables (default: a temporary folder)")
    args = parser.parse_args(argv)
    if args.model and not args.model.startswith("openai:"):
        parser.error("--model must be an OpenAI-compatible spec, openai:NAME@URL")
    tasks = load_tasks(names=args.task or None)
    if args.task and len(tasks) != len(args.task):
        parser.error(f"unknown task among {args.task}; tasks are {', '.join(t.name for t in load_tasks())}")
    root = Path(args.out or tempfile.mkdtemp(prefix="side-by-side-"))
    rows = []
    for task in tasks:
        ours = run_toolkit(task, args.model, root / "toolkit")
        theirs = run_mini(task, args.model, root / "mini")
        rows.append((task.name, ours, theirs))
        print(f"  {task.name}: toolkit {'pass' if ours['pass'] else 'FAIL'}, "
              f"mini-swe-agent {'pass' if theirs['pass'] else 'FAIL'}", file=sys.stderr, flush=True)
    print(f"model: {args.model or 'scripted (good.yaml / mini.yaml)'}   folder: {root}")
    head = f"{'task':20s} | {'toolkit':>7s} {'steps':>5s} {'cost $':>7s} {'time s':>7s} | " \
           f"{'mini':>7s} {'steps':>5s} {'cost $':>7s} {'time s':>7s}"
    print(head)
    print("-" * len(head))
    for name, a, b in rows:
        print(f"{name:20s} | {'pass' if a['pass'] else 'FAIL':>7s} {a['steps']:5d} {a['cost']:7.4f} "
              f"{a['time_s']:7.2f} | {'pass' if b['pass'] else 'FAIL':>7s} {b['steps']:5d} {b['cost']:7.4f} "
              f"{b['time_s']:7.2f}")
    passed = [sum(r[i]["pass"] for r in rows) for i in (1, 2)]
    print(f"{'passed':20s} | {passed[0]:>4d}/{len(rows):<2d}{'':22s} | {passed[1]:>4d}/{len(rows):<2d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
