"""A typed record per shell command (issue 43, point 6): exit code, signal, timeout, the sandbox's bound that
ended or hindered it, bytes of output made and characters dropped (from the middle), wall and CPU time, in the
trajectory and the ``tool_calls`` table, so that an agent's failure can be told from the sandbox's. Real
sessions (``local``: real bash, real processes), a scripted model."""

from __future__ import annotations

import asyncio
import json
import os

import pandas as pd
import pytest

from tests.agent.test_session import END, cmd, session, step
from toolkit.agent.environments.environment import bwrap_problem
from toolkit.record.load import load
from toolkit.record.run_log import Run

COMMANDS = {"ok": "echo hi", "exit": "false", "signal": "sh -c 'kill -9 $$'",
            "cpu": "python3 -c 'sum(range(3 * 10**7))'", "loud": "seq 1 50000",
            "slow": "sleep 5"}


@pytest.mark.slow
def test_each_command_has_a_typed_record_in_the_table_and_the_trajectory(tmp_path):
    answers = [step(cmd("Terminal.run_command", cmd=c, **({"timeout": 1} if k == "slow" else {})))
               for k, c in COMMANDS.items()]
    with Run(tmp_path / "res") as run:
        s = session(tmp_path, [*answers, END], run=run, session_id="sid-1")
        asyncio.run(s.run())
    rows = load(tmp_path / "res").tool_calls.set_index("step")
    by = {k: rows.loc[i + 1] for i, k in enumerate(COMMANDS)}
    assert by["ok"]["exit_code"] == 0 and by["ok"]["output_bytes"] == 3 and not by["ok"]["timed_out"]
    assert by["exit"]["exit_code"] == 1 and pd.isna(by["exit"]["killed_by"])
    assert by["signal"]["exit_code"] == 137 and by["signal"]["signal"] == 9
    assert by["cpu"]["cpu_s"] > 0.2
    assert by["loud"]["output_bytes"] == len("".join(f"{i}\n" for i in range(1, 50001)))
    assert by["loud"]["dropped_chars"] > 200_000
    assert by["slow"]["timed_out"] and by["slow"]["killed_by"] == "timeout"
    trajectory = json.loads((s.workspace.root / ".agent" / "trajectories" / "sid-1.json").read_text())
    assert [c["exit_code"] for c in trajectory["commands"]] == [0, 1, 137, 0, 0, by["slow"]["exit_code"]]
    assert trajectory["commands"][5]["killed_by"] == "timeout" and trajectory["commands"][4]["dropped_from"] == "middle"


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.skipif(bool(bwrap_problem()) or os.geteuid() != 0, reason="needs bubblewrap and a memory cgroup (root)")
def test_a_kill_by_the_memory_bound_is_told_from_the_agents_own_failure(tmp_path):
    """300 MiB of memfd pages under ``memory_mb: 64``: the memory cgroup kills the process, and its record says
    so (``killed_by: memory``, signal 9); the shell goes on."""
    from toolkit.agent.environments.environment import EnvironmentConfig, Limits, make_environment

    env = make_environment("bubblewrap", tmp_path, EnvironmentConfig(limits=Limits(memory_mb=64)))

    async def go():
        try:
            hog = ("python3 -c 'import mmap, os; fd = os.memfd_create(\"x\"); os.ftruncate(fd, 300 << 20); "
                   "m = mmap.mmap(fd, 300 << 20); [m.write(b\"x\" * 2**20) for _ in range(300)]'")
            return (await env.execute(hog, 30)).record(), (await env.execute("false", 10)).record()
        finally:
            await env.stop()
    killed, failed = asyncio.run(go())
    assert (killed["killed_by"], killed["signal"], killed["exit_code"]) == ("memory", 9, 137)
    assert (failed["killed_by"], failed["signal"], failed["exit_code"]) == (None, None, 1)
