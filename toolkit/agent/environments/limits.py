"""The bounds on a session, as a role's ``environment.limits`` declares them (docs/environments.md, "Bounds and
their settings"); the host's intake of the result is bounded by them too (``hostgit.Bounds``, ``staging``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Limits(BaseModel):
    """Bounds on a session (docs/environments.md, "Bounds and their settings"). rlimits are set inside
    the environment before the command runs. ``memory_mb`` and ``processes`` are the session's memory and
    pids cgroups where they can be made (``cgroup.py``, both kinds), else ``RLIMIT_AS`` and ``RLIMIT_NPROC``
    of each process (a warning line says so). ``disk_mb`` and ``inodes`` size bubblewrap's private copy (a
    tmpfs, so its pages are memory the memory cgroup counts); ``tmp_mb`` sizes its scratch folders."""

    model_config = ConfigDict(extra="forbid")

    memory_mb: int = Field(4096, ge=16)  # the session's memory cgroup; RLIMIT_DATA of each process too
    processes: int = Field(1024, ge=8)  # pids cgroup (threads count too), else RLIMIT_NPROC (bubblewrap only)
    cpu_s: int = Field(3600, ge=1)  # RLIMIT_CPU of each process, seconds
    file_size_mb: int = Field(2048, ge=1)  # RLIMIT_FSIZE: the largest file a process may write
    open_files: int = Field(1024, ge=16)  # RLIMIT_NOFILE
    disk_mb: int = Field(4096, ge=1)  # bubblewrap: the size of the private copy's file system
    inodes: int = Field(200_000, ge=64)  # bubblewrap: how many files and folders it may hold
    tmp_mb: int = Field(1024, ge=1)  # bubblewrap: the size of /tmp and of /dev/shm (tmpfs, so memory), each

    def ulimit(self, processes: bool = True, address_space: bool = False) -> str:
        nproc = f" -u {self.processes}" if processes else ""
        vmem = f" -v {self.memory_mb * 1024}" if address_space else ""
        return (f"ulimit -S -H -d {self.memory_mb * 1024}{nproc}{vmem} -t {self.cpu_s} "
                f"-f {self.file_size_mb * 1024} -n {self.open_files}")
