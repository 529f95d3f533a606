"""One-off programs in an environment (the Git tool, the checks, the toolkit's helpers) and the session's
result, made inside and written to a file of the host's."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from toolkit.agent.environments.config import RUN_OUTPUT_BYTES
from toolkit.agent.environments.procs import close_all, descendants, kill_all
from toolkit.core.printable import printable
from toolkit.core.secrets import redact

PATCH_KIB = 16 * 1024  # the most of the agent's commits (as text) kept


class ResultUnavailable(RuntimeError):
    """The session's result could not be made (one line: why)."""


class Programs:
    """``run``, ``helper`` and ``collect`` of an ``Environment``."""

    def run(self, argv: list[str], timeout: float = 60, input: str | bytes | None = None,
            trace_git: bool = False, binary: bool = False, max_output: int = RUN_OUTPUT_BYTES,
            stdout_file=None) -> subprocess.CompletedProcess:
        """Run a program to completion in the environment (cwd: the workspace) within ``timeout`` (and the
        session's wall clock). Its output goes to unlinked files the host made, bounded by the program's
        own ``RLIMIT_FSIZE``; the host reads at most ``max_output`` bytes of stdout and ``RUN_OUTPUT_BYTES``
        of stderr (text, or stdout as bytes with ``binary``). ``stdout_file``: an open file of the host's
        that takes stdout whole (the session's result)."""
        stdin = subprocess.PIPE if input is not None else subprocess.DEVNULL
        data = input.encode() if isinstance(input, str) else input
        timeout = self.remaining(timeout)
        with tempfile.TemporaryFile(dir=self.session_dir) as out, tempfile.TemporaryFile(dir=self.session_dir) as err:
            fds: list[int] = []
            try:
                proc = subprocess.Popen(self.wrap(list(argv), fds=fds), cwd=self.host_cwd(), env=self.env(trace_git),
                                        start_new_session=True, stdout=stdout_file or out, stderr=err, stdin=stdin,
                                        pass_fds=fds)
            finally:
                close_all(fds)
            code, note = None, ""
            try:
                proc.communicate(data, timeout=timeout)
                code = proc.returncode
            except subprocess.TimeoutExpired:
                proc.terminate()  # the wrapper (subreaper, bwrap) takes its whole tree down with it
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    kill_all([proc.pid, *descendants(proc.pid)])
                    proc.wait()
                code, note = 124, f"timed out after {timeout:g}s"
            stdout = head_of(out, max_output, binary)
            return subprocess.CompletedProcess(argv, code, stdout, head_of(err) + note)

    def helper(self, name: str, *args: str, input: bytes | None = None, timeout: float = 60,
               max_output: int = RUN_OUTPUT_BYTES, binary: bool = False) -> subprocess.CompletedProcess:
        """One of the toolkit's helper scripts (``fileop.py``, ``collect.py``), run in the environment on
        the workspace; it reads only from its arguments and stdin, answers on stdout."""
        return self.run(["python3", "-I", "-S", str(self.session_dir / name), args[0], str(self.root), *args[1:]],
                        timeout=timeout, input=input, binary=binary, max_output=max_output)

    def collect(self, folder: Path) -> Path | None:
        """The session's result, made inside the environment and written by it to files of the host's in
        ``folder`` (a folder the sandbox cannot see): ``result.tar``, what the session changed in the workspace
        against the host's listing of it at the start (``start_files``, handed in read-only; ``.git`` left out),
        and for a git workspace ``result.patch``, the agent's commits as text (at most ``PATCH_KIB``).
        None when working in place. Each is bounded by ``RLIMIT_FSIZE`` of the helper that writes it (the
        archive: ``disk_mb``, a KiB an entry and a KiB a deleted name), so sparse files, counted whole, cannot
        fill the host's disk."""
        if not self.private:
            return None
        limits = self.config.limits
        listing = self.session_dir / "start.json"
        if not listing.exists():
            listing.write_text(json.dumps(self.start_files))
            os.chmod(listing, 0o644)
        kib = min(limits.disk_mb * 1024 + 2 * limits.inodes + 1024, limits.file_size_mb * 1024)
        path, cut = self.made(Path(folder) / "result.tar", kib, "tar", str(listing))
        if cut:
            raise ResultUnavailable(f"the session's result is larger than {kib} KiB (disk_mb, counted in bytes: a "
                                    "sparse file counts its length); not taken")
        if self.start_tips is not None:
            patch, cut = self.made(Path(folder) / "result.patch", PATCH_KIB, "log", *self.start_tips, strict=False)
            if cut:
                with open(patch, "a") as f:
                    f.write(f"\n[the agent's commits: {cut}]\n")
        return path

    def made(self, path: Path, kib: int, *args: str, strict: bool = True) -> tuple[Path, str]:
        """``collect.py ARGS`` run under ``ulimit -f KIB``, its output in ``path``; returns it and why it was
        cut short (``""``: whole). A failure raises ``ResultUnavailable`` with ``strict``."""
        bound = ["/bin/bash", "--noprofile", "--norc", "-c", f'ulimit -S -H -f {kib} && exec "$@"', "collect"]
        with open(path, "xb") as f:
            out = self.run([*bound, "python3", "-I", "-S", str(self.session_dir / "collect.py"), args[0],
                            str(self.root), *args[1:]], timeout=300, stdout_file=f)
        said = printable(redact(" ".join(out.stderr.split())[-300:])) or str(out.returncode)  # one line
        if out.returncode in (-25, 153) or "[Errno 27]" in out.stderr:  # EFBIG (Python ignores SIGXFSZ)
            return path, f"cut at {kib} KiB"
        if out.returncode != 0 and strict:
            raise ResultUnavailable(f"the session's result could not be made ({args[0]}): {said}")
        return path, "" if out.returncode == 0 else f"not listed in full ({said})"


def head_of(file, limit: int = RUN_OUTPUT_BYTES, binary: bool = False) -> str | bytes:
    """The first ``limit`` bytes of a program's output file, with a note when there was more (as bytes:
    ``b""`` past the limit, so a caller cannot take a part for the whole)."""
    size = file.seek(0, os.SEEK_END)
    file.seek(0)
    data = file.read(limit)
    if binary:
        return data if size <= limit else b""
    text = data.decode("utf-8", errors="replace")
    if size > limit:
        text += f"\n[… output truncated: {size - limit} of {size} bytes not read …]\n"
    return text
