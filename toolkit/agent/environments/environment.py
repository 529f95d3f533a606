"""Where the agent's commands run (docs/environments.md): ``make_environment`` and the names the rest of the
toolkit imports from here. The protocol is ``protocol.Environment`` (with ``shell.Shell`` and
``programs.Programs``); each kind is a module of its own (``local``, ``bubblewrap``, ``container``)."""

from __future__ import annotations

import os

from toolkit.agent.environments import kinds
from toolkit.agent.environments.bubblewrap import BubblewrapEnvironment, unused_uid
from toolkit.agent.environments.cgroup import Cgroup
from toolkit.agent.environments.config import EnvironmentConfig, EnvironmentUnavailable
from toolkit.agent.environments.container import ContainerEnvironment
from toolkit.agent.environments.limits import Limits
from toolkit.agent.environments.local import LocalEnvironment
from toolkit.agent.environments.procs import descendants, warn_once
from toolkit.agent.environments.programs import ResultUnavailable
from toolkit.agent.environments.protocol import Environment
from toolkit.agent.environments.selfcheck import bwrap_problem
from toolkit.agent.environments.shell import BoundExceeded, ExecResult, ShellExited

__all__ = ["BoundExceeded", "BubblewrapEnvironment", "Cgroup", "ContainerEnvironment", "Environment",
           "EnvironmentConfig", "EnvironmentUnavailable", "ExecResult", "Limits", "LocalEnvironment",
           "ResultUnavailable", "ShellExited", "bwrap_problem", "descendants", "make_environment", "unused_uid",
           "warn_once"]


def make_environment(kind: str | None, workspace: str | os.PathLike, config: EnvironmentConfig | None = None,
                     allowed_remotes: list[str | os.PathLike] = ()) -> Environment:
    """The environment ``kind`` (None: the config's, whose default is ``auto``) for a workspace."""
    config = config or EnvironmentConfig()
    kind = kind or config.kind
    if problem := kinds.unknown(kind):
        raise EnvironmentUnavailable(problem)
    if kind == kinds.AUTO:
        problem = bwrap_problem()
        if problem is None:
            kind = "bubblewrap"
        else:
            warn_once(f"warning: commands run UNCONFINED on this host (environment 'local'): {problem}")
            kind = "local"
    return kinds.get(kind).build(workspace, config, allowed_remotes)
