"""A role is configuration, not a class: name, profile, goal, instruction and examples (prompt files),
its tools, ``max_react_loop``, eval mode and its execution environment (``environment:`` — kind, network,
``pass_env``, extra folders; see ``environment.py``). A new role is one more YAML file in ``prompts/agent/roles/``."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from toolkit.prompting.structured_call import prompts_dir
from toolkit.agent.environments.environment import EnvironmentConfig
from toolkit.agent.loop.toolset import TOOLS


class RoleConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    profile: str
    goal: str
    instruction: str  # a prompt file under prompts/
    examples: str | None = None  # a prompt file of example trajectories (the seed's _retrieve_experience)
    tools: list[str]
    max_react_loop: int = 40
    eval: bool = False
    terminal_timeout_s: float = 60.0
    memory_chars: int = 12_000  # the memory part of each step's prompt stays under this
    native_tools: bool = False  # ask for native tool calls instead of the JSON command list
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)  # where commands run

    def model_post_init(self, _context) -> None:
        unknown = [t for t in self.tools if t.split(".")[0] not in TOOLS]
        if unknown:
            raise ValueError(f"role {self.name}: unknown tools {unknown}; tools are {', '.join(TOOLS)}")


def load_role(name_or_path: str) -> RoleConfig:
    path = Path(name_or_path)
    if not path.suffix:
        path = prompts_dir() / "agent" / "roles" / f"{name_or_path}.yaml"
    if not path.exists():
        roles = sorted(p.stem for p in (prompts_dir() / "agent" / "roles").glob("*.yaml"))
        raise ValueError(f"no role {name_or_path!r}; roles are {roles} or a YAML path")
    return RoleConfig.model_validate(yaml.safe_load(path.read_text()))
