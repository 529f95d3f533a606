"""One persistent bash per session, confined to the workspace. Each command has a timeout that kills
everything it started; output is capped (head + tail with a marker); the exit code is reported;
long-running servers are refused with a hint to use the Deployer; API keys are not in its environment."""

from __future__ import annotations

import asyncio
import codecs
import os
import re
import signal
import uuid
from collections import deque
from pathlib import Path

from toolkit.agent.tools import Failed, ToolError, tool
from toolkit.agent.workspace import Workspace, scrubbed_env

SERVER_PATTERNS = re.compile(
    r"(python3? -m http\.server|\bflask run\b|\buvicorn\b|\bgunicorn\b|\bnpm (run )?(start|dev|serve)\b|"
    r"\bnpx serve\b|\bvite\b(?! build)|\bmanage\.py runserver\b|\bstreamlit run\b|\bjupyter (lab|notebook)\b|"
    r"(^|[;&|]\s*)[^;&|]*[^&]&\s*$)")


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc), deepest last."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


class _CappedOutput:
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

    def text(self) -> str:
        tail = "".join(self.tail)
        if len(self.head) + len(tail) < self.total or len(tail) > self.half:
            tail = tail[-self.half:]
            hidden = self.total - len(self.head) - len(tail)
            return f"{self.head}\n[… output truncated: {hidden} of {self.total} characters not shown …]\n{tail}"
        return self.head + tail


class Terminal:
    def __init__(self, workspace: Workspace, timeout_s: float = 60.0, max_output_chars: int = 10_000):
        self.workspace = workspace
        self.timeout_s = timeout_s
        self.max_output_chars = max_output_chars
        self.proc: asyncio.subprocess.Process | None = None

    async def _start(self) -> asyncio.subprocess.Process:
        if self.proc is None or self.proc.returncode is not None:
            self.proc = await asyncio.create_subprocess_exec(
                "bash", "--noprofile", "--norc", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT, cwd=self.workspace.root, env=scrubbed_env(),
                start_new_session=True, limit=2**20)
        return self.proc

    @tool
    async def run_command(self, cmd: str, timeout: float | None = None) -> str:
        """Run a shell command in the workspace's persistent bash (state such as cd and variables persists).

        Args:
            cmd: the command line to run.
            timeout: seconds before the command is killed (default: the terminal's timeout).
        """
        if SERVER_PATTERNS.search(cmd.strip()):
            raise ToolError("long-running servers and background jobs are refused here; "
                            "use Deployer.deploy_to_public(dist_dir) to serve a folder")
        proc = await self._start()
        marker = f"__DONE_{uuid.uuid4().hex}__"
        proc.stdin.write(f"{cmd}\nprintf '\\n{marker} %s\\n' \"$?\"\n".encode())
        await proc.stdin.drain()
        limit = timeout or self.timeout_s
        out = _CappedOutput(self.max_output_chars)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        code = None

        async def read() -> int:
            buf = ""
            while True:
                chunk = await proc.stdout.read(65536)
                if not chunk:
                    raise ToolError("the shell exited; it restarts on the next command")
                buf += decoder.decode(chunk)
                at = buf.find(marker)
                if at >= 0:
                    rest = buf[at + len(marker):]
                    if "\n" in rest.lstrip(" "):
                        before = buf[:at]
                        out.add(before[:-1] if before.endswith("\n") else before)  # the protocol's own newline
                        return int(rest.split()[0])
                    continue
                keep = len(marker) + 16  # a marker may be split across reads
                if len(buf) > keep:
                    out.add(buf[:-keep])
                    buf = buf[-keep:]

        try:
            code = await asyncio.wait_for(read(), limit)
            timed_out = False
        except asyncio.TimeoutError:
            timed_out = True
            self._kill_children()
            try:
                code = await asyncio.wait_for(read(), 5)
            except (asyncio.TimeoutError, ToolError):
                await self.close()
        except ToolError:
            await self.close()
            raise
        text = out.text().rstrip("\n")
        if timed_out:
            return Failed(f"{text}\n[killed after {limit:g}s timeout; exit code {code}]".strip())
        result = f"{text}\n[exit code {code}]".strip()
        return result if code == 0 else Failed(result)

    def _kill_children(self) -> None:
        if self.proc is None:
            return
        for pid in reversed(descendants(self.proc.pid)):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    async def close(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self._kill_children()
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await self.proc.wait()
        self.proc = None
