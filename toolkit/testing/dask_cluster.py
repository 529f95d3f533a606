"""A Dask cluster started the documented way (docs/experiments.md, "On a Dask cluster"), for tests and benchmarks:
``dask scheduler`` and ``dask worker ADDRESS --nthreads 1`` as separate processes on this machine, as they would
be on several. Nothing here is a double: the scheduler and the workers are Dask's own commands.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator


@dataclass
class Cluster:
    address: str  # the scheduler's, tcp://HOST:PORT
    scheduler: subprocess.Popen
    workers: list[subprocess.Popen] = field(default_factory=list)


def dask_command() -> str:
    """The ``dask`` command of this Python's environment."""
    return str(Path(sys.executable).parent / "dask")


@contextmanager
def dask_cluster(workers: int, folder: str | Path, env: dict[str, str] | None = None,
                 timeout: float = 300) -> Iterator[Cluster]:
    """A scheduler and ``workers`` single-threaded workers (each its own process group, logging to
    ``folder``), running until the block ends; then all of them are ended (SIGTERM, then SIGKILL). ``timeout``
    bounds the wait for the scheduler's address and for the workers: two workers took 100 s to arrive at load ~20
    on 2 cores (each imports the toolkit, pandas and Dask)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **(env or {})}
    address_file = folder / "scheduler.json"
    procs: list[subprocess.Popen] = []

    def start(args: list[str], log: str) -> subprocess.Popen:
        with open(folder / log, "ab") as out:
            proc = subprocess.Popen([dask_command(), *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True)
        procs.append(proc)
        return proc

    try:
        scheduler = start(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
                           str(address_file)], "scheduler.log")
        address = _wait_for_address(address_file, scheduler, timeout)
        cluster = Cluster(address, scheduler)
        for i in range(workers):
            cluster.workers.append(start(["worker", address, "--nthreads", "1", "--no-dashboard", "--name",
                                          f"w{i}"], f"worker{i}.log"))
        if workers:  # none: the scheduler alone
            _wait_for_workers(address, workers, timeout)
        yield cluster
    finally:
        for proc in reversed(procs):
            _end(proc)


def _wait_for_address(path: Path, proc: subprocess.Popen, timeout: float) -> str:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists():
            try:
                return json.loads(path.read_text())["address"]
            except (ValueError, KeyError):
                pass  # being written
        if proc.poll() is not None:
            raise RuntimeError(f"dask scheduler ended with {proc.returncode} (its log: {path.parent})")
        time.sleep(0.1)
    raise TimeoutError(f"dask scheduler wrote no address in {timeout} s (its log: {path.parent})")


def _wait_for_workers(address: str, n: int, timeout: float) -> None:
    from dask.distributed import Client

    with Client(address, timeout=timeout) as client:
        client.wait_for_workers(n, timeout=timeout)


def _end(proc: subprocess.Popen) -> None:
    """The process and its children (a worker's nanny and worker, their kernels) ended."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue
