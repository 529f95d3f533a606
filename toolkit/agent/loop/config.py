"""What an engineer session is made from: one ``SessionConfig``. ``resolved()`` makes every choice the config
leaves open (the model, the session id, the human channel, the role's defaults), so the session and its loop
(``steps.Agent``) read one settled config and neither decides a default of its own."""

from __future__ import annotations

import dataclasses
import os
import uuid
from dataclasses import dataclass, field
from typing import Any

from toolkit.agent.environments.environment import Environment
from toolkit.agent.loop.role import RoleConfig
from toolkit.agent.tools.human import Channel, ScriptedChannel
from toolkit.llm import Model, cost_usd, get_model
from toolkit.record.run_log import Run


@dataclass
class SessionConfig:
    """Everything a session is made from. ``model`` is a model spec string (or a ready ``Model``);
    ``record_spec`` is what the ``sessions`` row calls it (the suite records ``scripted:{task}/good.yaml`` rather
    than each task's resolved path). ``environment`` is where commands run (``toolkit.agent.environments``: a
    kind such as ``bubblewrap`` or ``local``, or a ready one; ``None``: the role's, by default bubblewrap where it
    works). ``eval_mode``, ``max_steps`` and ``native_tools`` left None take the role's."""

    role: RoleConfig
    task: str
    workspace: str | os.PathLike
    model: str | Model = "scripted"
    run: Run | None = None
    channel: Channel | None = None
    eval_mode: bool | None = None
    max_steps: int | None = None
    wall_clock_s: float = 1800
    budget_usd: float | None = None
    session_id: str | None = None
    remote: str = "origin"
    record_spec: str | None = None
    native_tools: bool | None = None
    environment: str | Environment | None = None
    allowed_remotes: list[str | os.PathLike] = field(default_factory=list)
    # a study's spending cap (toolkit.llm.budget.Budget) every call is charged to; whether a session may start
    # under it is its caller's decision (a session is not cut mid-way by it: budget_usd bounds one session)
    spending: Any = None

    def resolved(self) -> SessionConfig:
        """A copy with every open choice made: ``model`` a ``Model``, a ``session_id``, a ``channel`` (scripted:
        no person), ``record_spec``, and ``eval_mode``/``max_steps``/``native_tools`` (the role's where None).
        A budget the model has no price for is a ValueError (it would never bind). Resolving twice changes
        nothing."""
        model = get_model(self.model) if isinstance(self.model, str) else self.model
        if self.budget_usd is not None and not model.backend.free and cost_usd(model.name, 1, 1) is None:
            raise ValueError(f"budget_usd needs a price for {model.name}: add it to a TOOLKIT_PRICES file")
        role = self.role
        return dataclasses.replace(
            self, model=model, session_id=self.session_id or f"s-{uuid.uuid4().hex[:10]}",
            channel=self.channel if self.channel is not None else ScriptedChannel(),
            record_spec=self.record_spec or model.spec,
            eval_mode=role.eval if self.eval_mode is None else self.eval_mode,
            max_steps=role.max_react_loop if self.max_steps is None else self.max_steps,
            native_tools=role.native_tools if self.native_tools is None else self.native_tools)
