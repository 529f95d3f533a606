"""The engineer agent: a RoleZero-style loop of a model and its tools, run in an execution environment.

    from toolkit.agent import Session, SessionConfig, load_role, load_tasks, run_suite

The loop is ``loop/`` (a session, its config, the role, the steps, the tool set), the tools ``tools/``, where the
commands run ``environments/`` (local, bubblewrap, ...), the offline task suite ``suite.py``. Names here are
imported when first used."""

from __future__ import annotations

from toolkit.core.lazy import face

_WHERE = {
    "Session": "toolkit.agent.loop.session",
    "SessionResult": "toolkit.agent.loop.session",
    "SessionConfig": "toolkit.agent.loop.config",
    "RoleConfig": "toolkit.agent.loop.role",
    "load_role": "toolkit.agent.loop.role",
    "TaskSpec": "toolkit.agent.suite",
    "load_tasks": "toolkit.agent.suite",
    "prepare_workspace": "toolkit.agent.suite",
    "run_task": "toolkit.agent.suite",
    "run_suite": "toolkit.agent.suite",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = face(__name__, _WHERE)
