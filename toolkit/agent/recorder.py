"""The agent recorder: one engineer session's rows in the run log (a ``tool_calls`` row per tool call as it
returns, the ``sessions`` row when the session ends). ``Session`` and its ``Toolbox`` hand it what happened;
each model call is written by its action (``toolkit.record.run_log.CallLog``). The tables: docs/tables.md.
"""

from __future__ import annotations

from typing import Any

from toolkit.core.secrets import redact
from toolkit.record.rows import SessionRow, ToolCallRow
from toolkit.record.run_log import Run


def command_columns(record: dict | None) -> dict:
    """A shell command's typed record (``ExecResult.record``) as the ``tool_calls`` columns it fills."""
    names = ("exit_code", "signal", "timed_out", "killed_by", "output_bytes", "dropped_chars", "cpu_s")
    return {k: record.get(k) for k in names} if record else {}


class SessionRecorder:
    """Writes one session's rows to ``run`` (nothing without a run)."""

    def __init__(self, run: Run | None = None, session_id: str | None = None):
        self.run = run
        self.session_id = session_id

    def tool_call(self, result: Any) -> None:
        """A ``toolkit.agent.tools.base.ToolResult`` (its output already masked); its arguments are masked here."""
        if self.run is None:
            return
        self.run.write(ToolCallRow(session_id=self.session_id, step=result.step, tool=result.tool,
                                   args=redact(result.args_json()), ok=result.ok,
                                   error=None if result.ok else result.output[:500],
                                   duration_ms=round(result.duration_ms, 2), output_chars=len(result.output),
                                   truncated=result.truncated, **command_columns(result.command)))

    def session(self, *, task: str, spec: str, steps: int, ended_by: str, success: bool | None,
                cost_usd: float | None, wall_s: float) -> None:
        if self.run is None:
            return
        self.run.write(SessionRow(session_id=self.session_id, run_id=self.run.run_id, task=task, spec=spec,
                                  steps=steps, ended_by=ended_by, success=success, cost_usd=cost_usd,
                                  wall_s=round(wall_s, 3)))
