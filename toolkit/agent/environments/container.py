"""``docker`` / ``podman``: the workspace mounted into a container."""

from __future__ import annotations

import shutil
import subprocess
import uuid

from toolkit.agent.environments.config import EnvironmentUnavailable
from toolkit.agent.environments.protocol import Environment


class ContainerEnvironment(Environment):
    """docker / podman: the workspace mounted into a container (``--network none`` unless ``network``).
    Not exercised by the tests here (no daemon on this machine); ``problem()`` says why in one line."""

    uses_cgroup = False  # the engine's own

    def __init__(self, *args, engine: str = "docker", **kwargs):
        self.name = engine  # the registered kind's (kinds.py: docker, podman)
        self.confined = True
        problem = self.problem(engine)
        if problem:
            raise EnvironmentUnavailable(f"{engine}: {problem}; use --env bubblewrap or --env local")
        super().__init__(*args, **kwargs)
        self.container = f"toolkit-{uuid.uuid4().hex[:10]}"

    @staticmethod
    def problem(engine: str) -> str | None:
        exe = shutil.which(engine)
        if exe is None:
            return f"{engine} is not installed"
        try:
            out = subprocess.run([exe, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                                 timeout=10)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"no daemon answers ({exc})"
        if out.returncode != 0:
            return "no daemon answers (" + (out.stderr.strip().splitlines() or ["docker info failed"])[-1] + ")"
        return None

    def wrap(self, argv: list[str], persistent: bool = False, fds: list[int] | None = None) -> list[str]:
        mounts = [x for p in [self.root, *self.writable] for x in ("-v", f"{p}:{p}")]
        mounts += [x for p in self.remotes for x in ("-v", f"{p}:{p}:ro")]
        mounts += ["-v", f"{self.session_dir}:{self.session_dir}:ro"]
        mounts += [x for p in self.config.read_only for x in ("-v", f"{p}:{p}:ro")]
        names = [x for k in self.env() for x in ("-e", k)]  # values come from the process environment
        network = [] if self.config.network else ["--network", "none"]
        name = ["--name", self.container] if persistent else []
        return [self.name, "run", "--rm", "-i", *name, *network, *mounts, *names, "-w", str(self.root),
                self.config.image, *self.bounded(argv)]  # no trace pipe into a container: eval mode sees no git

    def tmpdir(self) -> str:
        return "/tmp"

    def prepare(self) -> None:
        super().prepare()  # a copy on the host's disk, mounted into the container

    async def stop(self) -> None:
        subprocess.run([self.name, "rm", "-f", self.container], capture_output=True, timeout=30)
        await super().stop()
