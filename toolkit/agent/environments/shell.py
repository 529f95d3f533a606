"""The session's persistent bash: one command at a time, its output capped (head and tail), a typed record of
each command (``ExecResult``), what a command started killed at its timeout while the shell stays."""

from __future__ import annotations

import asyncio
import codecs
import os
import signal
import time
import uuid
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from toolkit.agent.environments.procs import close_all, descendants, kill_all, parent_and_session, state_of


@dataclass
class ExecResult:
    """One command's output and its typed record (``record()``: the trajectory's and ``tool_calls``' fields),
    so that an agent's failure can be told from the sandbox's: its exit code, the signal that ended it, whether
    the timeout or a bound of the session (memory: a kill by the memory cgroup; processes: a fork the pids
    cgroup refused) ended or hindered it, how much output it made and how much of it the model was not shown
    (from the middle: the head and tail are kept), its wall and CPU time (its processes', as bash's ``times``
    counts the children it waited for)."""

    output: str
    exit_code: int | None
    timed_out: bool = False
    killed_by: str | None = None  # "timeout", "memory" or "processes"
    output_bytes: int = 0
    dropped_chars: int = 0
    wall_s: float = 0.0
    cpu_s: float | None = None

    @property
    def signal(self) -> int | None:
        return self.exit_code - 128 if self.exit_code is not None and 128 < self.exit_code < 160 else None

    def record(self) -> dict:
        return {"exit_code": self.exit_code, "signal": self.signal, "timed_out": self.timed_out,
                "killed_by": self.killed_by, "output_bytes": self.output_bytes, "dropped_chars": self.dropped_chars,
                "dropped_from": "middle" if self.dropped_chars else None, "wall_s": round(self.wall_s, 3),
                "cpu_s": None if self.cpu_s is None else round(self.cpu_s, 3)}


class CappedOutput:
    """Keeps the first and last ``cap/2`` characters of a stream, never the whole of it."""

    def __init__(self, cap: int):
        self.half = cap // 2
        self.head = ""
        self.tail: deque[str] = deque()
        self.tail_chars = 0
        self.total = 0

    def add(self, text: str) -> None:
        self.total += len(text)
        if len(self.head) < self.half:
            room = self.half - len(self.head)
            self.head += text[:room]
            text = text[room:]
        if text:
            self.tail.append(text)
            self.tail_chars += len(text)
            while self.tail_chars - len(self.tail[0]) >= self.half:
                self.tail_chars -= len(self.tail.popleft())

    @property
    def dropped(self) -> int:
        """Characters not kept (from the middle)."""
        return max(0, self.total - len(self.head) - min(self.tail_chars, self.half))

    def text(self) -> str:
        tail = "".join(self.tail)
        if len(self.head) + len(tail) < self.total or len(tail) > self.half:
            tail = tail[-self.half:]
            hidden = self.total - len(self.head) - len(tail)
            return f"{self.head}\n[… output truncated: {hidden} of {self.total} characters not shown …]\n{tail}"
        return self.head + tail


def _cpu(words: list[str]) -> float | None:
    """Seconds from bash's ``times`` (``1m2.345s 0m0.100s``: user and system), or None."""
    try:
        return sum(int(w[:w.index("m")]) * 60 + float(w[w.index("m") + 1:-1]) for w in words)
    except (ValueError, IndexError):
        return None


class ShellExited(Exception):
    pass


class BoundExceeded(ShellExited):
    """The session passed one of its bounds (``Environment.exceeded()`` says which); it ends."""


class Shell:
    """The persistent shell of an ``Environment`` (its ``wrap``, ``env``, ``cgroups`` and ``trace``)."""

    async def start(self) -> None:
        if self.proc is None or self.proc.returncode is not None:
            self._cpu = 0.0  # the new shell's children's CPU so far (bash's ``times``)
            fds: list[int] = []
            try:
                self.proc = await asyncio.create_subprocess_exec(
                    *self.wrap(["bash", "--noprofile", "--norc"], persistent=True, fds=fds),
                    stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                    cwd=self.host_cwd(), env=self.env(), start_new_session=True, limit=2**20,
                    pass_fds=(self.trace.write_fd, *fds))
            finally:
                close_all(fds)

    def shell_pid(self) -> int | None:
        """The host PID of the persistent bash (below the wrapper: subreaper, bwrap's init, …)."""
        if self.proc is None:
            return None
        for pid in [self.proc.pid, *descendants(self.proc.pid)]:
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "bash":
                    return pid
            except OSError:
                continue
        return None

    async def execute(self, command: str, timeout: float = 60, max_output_chars: int = 10_000) -> ExecResult:
        """Run a command line in the persistent bash (cd and variables persist). At the timeout (or the
        session's wall clock) everything the command started is killed and the shell stays; output is
        capped (head + tail)."""
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            return await self._run_in_shell(command, self.remaining(timeout), max_output_chars)

    async def _run_in_shell(self, command: str, timeout: float, max_output_chars: int) -> ExecResult:
        await self.start()
        proc, started, events = self.proc, time.perf_counter(), self.bound_events()
        marker = f"__DONE_{uuid.uuid4().hex}__"
        # the exit status, then bash's ``times`` (its own and its waited-for children's CPU, cumulative)
        proc.stdin.write(f"{command}\n__tk=$?; printf '\\n{marker} %s ' \"$__tk\"; times\n".encode())
        await proc.stdin.drain()
        out = CappedOutput(max_output_chars)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        got = {"bytes": 0, "cpu": None}

        async def read() -> int:
            buf = ""
            while True:
                chunk = await proc.stdout.read(65536)
                if not chunk:
                    out.add(buf + decoder.decode(b"", final=True))
                    raise ShellExited("the shell exited; it restarts on the next command")
                got["bytes"] += len(chunk)
                buf += decoder.decode(chunk)
                at = buf.find(marker)
                if at >= 0:
                    rest = buf[at + len(marker):]
                    if rest.count("\n") >= 2:  # the status line and the two lines of ``times``
                        before = buf[:at]
                        out.add(before[:-1] if before.endswith("\n") else before)  # the protocol's own newline
                        got["bytes"] -= len(rest.encode()) + len(marker) + 1
                        words = rest.split()
                        got["cpu"] = _cpu(words[3:5])
                        return int(words[0])
                    continue
                keep = len(marker) + 16  # a marker may be split across reads
                if len(buf) > keep:
                    out.add(buf[:-keep])
                    buf = buf[-keep:]

        def result(code: int | None, timed_out: bool = False) -> ExecResult:
            cpu, self._cpu = (None, self._cpu) if got["cpu"] is None else (got["cpu"] - self._cpu, got["cpu"])
            oom, refused = (now - then for now, then in zip(self.bound_events(), events))
            return ExecResult(out.text().rstrip("\n"), code, timed_out,
                              "timeout" if timed_out else "memory" if oom else "processes" if refused else None,
                              max(got["bytes"], 0), out.dropped, time.perf_counter() - started, cpu)

        try:
            return result(await asyncio.wait_for(read(), timeout))
        except asyncio.TimeoutError:
            self.kill_command()
            code = None
            try:
                code = await asyncio.wait_for(read(), 5)
            except (asyncio.TimeoutError, ShellExited):
                await self.stop_shell()
            return result(code, timed_out=True)
        except ShellExited as exc:  # e.g. the command ran `exit`: what it printed is kept
            await self.stop_shell()
            shown, why = out.text().rstrip("\n"), str(exc)
            if self.bound_events()[0] > events[0]:  # the shell itself was the memory bound's victim
                why = "the shell was killed by the session's memory bound; it restarts on the next command"
            raise type(exc)(f"{shown}\n[{why}]" if shown else why) from None

    def bound_events(self) -> tuple[int, int]:
        """Kills by the session's memory bound and forks refused by its process bound, so far."""
        return (sum(c.oom_kills() for c in self.cgroups), sum(c.refused() for c in self.cgroups))

    def kill_command(self) -> None:
        """Kill what the current command started, keep the shell."""
        shell = self.shell_pid()
        if shell is None or self.proc is None:
            return
        chain, pid = {shell}, shell  # the wrapper's processes down to the shell stay
        while pid not in (self.proc.pid, 0, 1):
            pid = parent_and_session(pid)[0]
            chain.add(pid)
        session = parent_and_session(shell)[1]  # the command's processes, orphans too; a daemon (setsid: the Deployer's
        # server) stays. First stopped, all of them: a fork bomb refills every slot of its pids bound that a kill
        # frees (killing as they come did not converge at load 45 in 5 s: 44 survivors kept the bound full and the
        # Deployer's server could not start a thread), while a stopped process keeps its slot and cannot fork.
        # Once a listing finds every one stopped, they are killed, then waited for until reaped (a dead process
        # counts in the bound until reaped). Bounded by time: 30 s.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            victims = [p for p in descendants(self.proc.pid) if p not in chain and parent_and_session(p)[1] == session]
            if not victims:
                return
            states = {p: state_of(p) for p in reversed(victims)}
            running = [p for p, state in states.items() if state not in "TtZX"]
            alive = [p for p, state in states.items() if state not in "ZX"]
            if running:
                kill_all(running, signal.SIGSTOP)
            elif alive:
                kill_all(alive)
            else:
                time.sleep(0.01)  # dead, not yet reaped

    async def stop_shell(self) -> None:
        """End the shell and every process of the session (the wrapper's whole tree)."""
        if self.proc is not None and self.proc.returncode is None:
            kill_all([self.proc.pid, *descendants(self.proc.pid)])
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            await self.proc.wait()
        self.proc = None
