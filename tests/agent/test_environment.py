"""Execution environments: the protocol, the allow-list environment, colour off, timeouts, selection
(role, CLI, default) and the engineer suite with its default output folder under both environments."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolkit.agent.environments import environment as envmod
from toolkit.agent.environments.environment import (BubblewrapEnvironment, EnvironmentConfig, EnvironmentUnavailable,
                                       LocalEnvironment, bwrap_problem, make_environment)
from toolkit.agent.loop.session import Session, SessionConfig
from toolkit.agent.loop.role import RoleConfig, load_role
from toolkit.agent.tools.terminal import Terminal
from toolkit.agent.tools.base import Failed
from toolkit.agent.environments.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
ENVS = ["local", pytest.param("bubblewrap", marks=[pytest.mark.sandbox, pytest.mark.skipif(
    bool(bwrap_problem()), reason=f"no bubblewrap: {bwrap_problem()}")])]


@pytest.mark.parametrize("kind", ENVS)
@pytest.mark.slow
async def test_the_protocol_allow_list_and_colour(kind, tmp_path, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("CLICOLOR_FORCE", "1")
    monkeypatch.setenv("MY_SETTING", "passed-through")
    monkeypatch.setenv("OTHER_SETTING", "kept-out")
    env = make_environment(kind, tmp_path / "ws", EnvironmentConfig(pass_env=["MY_SETTING"]))
    term = Terminal(Workspace.on_host(tmp_path / "ws"), timeout_s=1.5, environment=env)
    try:
        result = await env.execute("echo $HOME; echo ${FORCE_COLOR:-unset} ${NO_COLOR} $MY_SETTING "
                                   "${OTHER_SETTING:-absent}; exit_me() { return 3; }; exit_me", 10)
        home, line = result.output.splitlines()
        assert home == str(env.root / ".agent" / "home") and result.exit_code == 3
        assert line == "unset 1 passed-through absent"
        assert await term.run_command("printf '\\033[1;31mred\\033[0m plain\\n'") == "red plain\n[exit code 0]"
        with pytest.raises(Failed, match="killed after 1.5s timeout"):
            await term.run_command("sleep 1000")
        assert (await term.run_command("echo alive")).startswith("alive")  # the shell stayed
        with pytest.raises(Failed, match=r"(?s)before-exit.*the shell exited"):  # `exit` keeps its output
            await term.run_command("echo before-exit; exit 3")
        assert (await term.run_command("echo back")).startswith("back")  # and the shell restarts
        assert env.run(["git", "config", "core.hooksPath"]).stdout.strip() == "/dev/null"
    finally:
        await env.stop()
    assert not env.session_dir.exists()


@pytest.mark.sandbox
async def test_bubblewrap_confines_the_filesystem(tmp_path):
    if bwrap_problem():
        pytest.skip(bwrap_problem())
    (tmp_path / "outside.txt").write_text("x")
    env = BubblewrapEnvironment(tmp_path / "ws")
    try:
        out = await env.execute(f"cat {tmp_path}/outside.txt; touch /usr/x; ls /root; echo > /etc/hostile; "
                                "touch inside && echo wrote-inside; hostname", 10)
        assert "No such file" in out.output and "Read-only file system" in out.output
        assert "wrote-inside" in out.output and out.output.endswith("sandbox")
        assert env.run(["test", "-e", "inside"]).returncode == 0  # in the session's copy
        assert not (tmp_path / "ws" / "inside").exists() and not Path("/etc/hostile").exists()
    finally:
        await env.stop()


def test_containers_skip_with_one_clear_line(tmp_path):
    for kind in ("docker", "podman"):
        with pytest.raises(EnvironmentUnavailable) as err:
            make_environment(kind, tmp_path / "ws")
        message = str(err.value)
        assert message.startswith(f"{kind}: ") and "use --env bubblewrap or --env local" in message
        assert "\n" not in message
    with pytest.raises(EnvironmentUnavailable, match="unknown environment 'vm'"):
        make_environment("vm", tmp_path / "ws")


def test_an_unknown_kind_is_refused_with_auto_among_the_choices():
    """``kinds.refusal`` (engineer widget, ``run_engineer_cell``, ``--env``) names every choice, ``auto`` first, as
    ``EnvironmentConfig`` does; before, its list left ``auto`` out."""
    from toolkit.agent.environments import kinds

    assert kinds.refusal("vm") == f"unknown environment 'vm'; choose one of {', '.join(kinds.choices())}"
    assert kinds.refusal("vm").split("choose one of ")[1].startswith("auto, bubblewrap, local")
    assert kinds.refusal("auto") is None


def test_unknown_environment_is_said_by_one_function(tmp_path):
    """``kinds.unknown`` builds the line; the role's config, ``make_environment`` and ``kinds.refusal`` say it as
    it is (before, each of the three built it)."""
    from toolkit.agent.environments import kinds

    line = kinds.unknown("vm")
    assert line == f"unknown environment 'vm'; choose one of {', '.join(kinds.choices())}"
    assert kinds.unknown("local") is None and kinds.unknown("auto") is None
    assert kinds.refusal("vm") == line
    with pytest.raises(EnvironmentUnavailable) as err:
        make_environment("vm", tmp_path / "ws")
    assert str(err.value) == line
    with pytest.raises(ValueError, match=re.escape(line)):
        EnvironmentConfig(kind="vm")
    sources = [p.read_text() for p in Path(kinds.__file__).parents[2].rglob("*.py")]
    assert sum(text.count('"unknown environment') for text in sources) == 1


def test_auto_is_bubblewrap_where_it_works_else_local_with_one_warning(tmp_path, monkeypatch, capsys):
    if not bwrap_problem():
        assert isinstance(make_environment(None, tmp_path / "a"), BubblewrapEnvironment)
    # a stand-in for a machine without bwrap (this one has it): the probe's answer only
    monkeypatch.setattr(envmod, "bwrap_problem", lambda: "bwrap is not installed (Debian: apt-get install bubblewrap)")
    envmod.warn_once.cache_clear()
    for _ in range(2):
        assert isinstance(make_environment("auto", tmp_path / "b"), LocalEnvironment)
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["warning: commands run UNCONFINED on this host (environment 'local'): bwrap is not installed "
                   "(Debian: apt-get install bubblewrap)"]


def test_selection_per_role_and_per_call(tmp_path):
    (tmp_path / "s.yaml").write_text("answers: []\n")
    model = f"scripted:{tmp_path / 's.yaml'}"
    role = load_role("engineer").model_copy(update={"environment": EnvironmentConfig(kind="local")})
    assert Session(SessionConfig(role, "t", tmp_path / "ws", model)).environment.name == "local"
    if not bwrap_problem():
        assert Session(SessionConfig(role, "t", tmp_path / "ws", model,
                                     environment="bubblewrap")).environment.name == "bubblewrap"
    with pytest.raises(ValueError, match="environment"):
        RoleConfig.model_validate({**load_role("engineer").model_dump(), "environment": {"kind": "vm"}})


@pytest.mark.parametrize("kind", ["local", pytest.param(None, id="default")])
@pytest.mark.slow
def test_engineer_suite_passes_with_its_default_output_folder(kind, tmp_path):
    """The CLI as a newcomer runs it: no --out, so a relative ``results/`` under the current folder."""
    cmd = [sys.executable, "-m", "toolkit", "engineer-suite"] + (["--env", kind] if kind else [])
    out = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "succeeded: 10/10; tables: results/" in out.stdout, out.stdout
    assert (tmp_path / "results").is_dir()
    # each task's line names its session, which `toolkit view --session` takes
    sessions = re.findall(r" session=(\S+)$", out.stdout, re.M)
    assert len(sessions) == 10 and len(set(sessions)) == 10
    assert "--session SESSION" in out.stdout


@pytest.mark.slow
def test_git_pushes_only_to_remotes_inside_or_configured(tmp_path):
    from toolkit.agent.tools.git import Git
    from toolkit.agent.tools.base import ToolError

    ws = Workspace.on_host(tmp_path / "ws")
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "s"],
                 ["init", "-q", "--bare", "inside.git"], ["init", "-q", "--bare", str(tmp_path / "out.git")],
                 ["remote", "add", "inside", "inside.git"], ["remote", "add", "out", str(tmp_path / "out.git")],
                 ["remote", "add", "web", "https://example.invalid/r.git"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=ws.root, check=True)
    assert "Pushed a to inside" in Git(ws, "inside").create_pull("a", "t")
    for remote in ("out", "web"):
        with pytest.raises(ToolError, match="is refused: pushes go only to a remote"):
            Git(ws, remote).create_pull("b", "t")
    configured = LocalEnvironment(ws.root, allowed_remotes=[tmp_path / "out.git", "https://example.invalid/r.git"],
                                  private=False)
    assert "Pushed c to out" in Git(ws, "out", environment=configured).create_pull("c", "t")
    Git(ws, "web", environment=configured).allowed_remote("web")  # allowed (the push itself needs the network)
    record = (ws.root / ".agent" / "pulls" / "c.json").read_text()
    assert '"head": "c"' in record


@pytest.mark.parametrize("kind", ENVS)
@pytest.mark.slow
def test_nothing_outlives_a_killed_toolkit_process(kind, tmp_path):
    """The toolkit process dies without cleaning up (SIGKILL): the daemon its session started dies too
    (PR_SET_PDEATHSIG on the subreaper / bwrap's --die-with-parent)."""
    import signal
    import time

    (tmp_path / "ws").mkdir()
    marker = f"{tmp_path}/ws/sleeper"  # inside the workspace: the one host folder a bubblewrap sandbox sees
    code = (f"import asyncio, os, shutil, signal\n"
            f"from toolkit.agent.environments.environment import make_environment\n"
            f"shutil.copy('/bin/sleep', {marker!r})\n"
            f"async def main():\n"
            f"    env = make_environment({kind!r}, {str(tmp_path / 'ws')!r})\n"
            f"    out = (await env.execute('setsid -f {marker} 600; echo up', 10)).output\n"
            f"    print(out, env.session_dir, flush=True)\n"
            f"    os.kill(os.getpid(), signal.SIGKILL)\n"
            f"asyncio.run(main())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    up, session_dir = out.stdout.split()
    shutil.rmtree(session_dir)  # what a killed process cannot remove itself
    assert out.returncode == -signal.SIGKILL and up == "up", out.stderr
    for _ in range(50):
        left = [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p).startswith(marker)]
        if not left:
            break
        time.sleep(0.1)
    assert left == []


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_the_toolkit_folder_stays_out_of_commits(tmp_path):
    from toolkit.agent.tools.git import Git

    ws = Workspace.on_host(tmp_path / "ws")
    env = ws.environment
    assert env.run(["git", "init", "-q"]).returncode == 0
    (ws.root / "a.txt").write_text("a")
    ws.write_private("trajectories/s.json", "{}")
    assert Git(ws, environment=env).status().splitlines()[1:] == ["?? a.txt"]


@pytest.mark.slow
def test_the_cli_says_in_one_line_when_a_container_engine_cannot_run(tmp_path):
    out = subprocess.run([sys.executable, "-m", "toolkit", "engineer-suite", "--env", "docker"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 2 and out.stderr.startswith("error: --env docker: ") and out.stderr.count("\n") == 1
    assert out.stderr.rstrip().endswith("choose one of auto, bubblewrap, local, podman")  # preflight, from the registry


# ------------------------------------------------------------------ the cgroups' place
def test_the_pids_cgroup_is_found_below_the_toolkits_own(tmp_path):
    """Where the session's cgroup goes, read from mountinfo and /proc/self/cgroup: the v1 pids hierarchy
    at the process's own path (also inside a cgroup namespace whose root is not /), else v2 where the
    process's cgroup offers pids (a folder stands in for the v2 mount: this machine has no v2 pids)."""
    from toolkit.agent.environments.cgroup import hierarchy

    v1 = ("30 25 0:26 / /sys/fs/cgroup/pids rw,relatime shared:10 - cgroup cgroup rw,pids\n"
          "31 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n")
    assert hierarchy(v1, "8:pids:/user/me\n4:memory:/x\n0::/\n") == (Path("/sys/fs/cgroup/pids/user/me"), "v1")
    nested = v1.replace(" / /sys/fs/cgroup/pids", " /ns /sys/fs/cgroup/pids")
    assert hierarchy(nested, "8:pids:/ns/job\n") == (Path("/sys/fs/cgroup/pids/job"), "v1")
    assert hierarchy(v1, "4:memory:/x\n") is None
    assert hierarchy(v1, "4:memory:/x\n", "memory") == (Path("/sys/fs/cgroup/memory/x"), "v1")
    (tmp_path / "me").mkdir()
    (tmp_path / "me" / "cgroup.controllers").write_text("cpu memory pids\n")
    v2 = f"40 25 0:30 / {tmp_path} rw - cgroup2 cgroup2 rw\n"
    assert hierarchy(v2, "0::/me\n") == (tmp_path / "me", "v2")
    (tmp_path / "me" / "cgroup.controllers").write_text("cpu memory\n")
    assert hierarchy(v2, "0::/me\n") is None


def test_the_memory_cgroup_in_v2_bounds_memory_and_swap_in_one_folder(tmp_path, monkeypatch):
    """cgroup v2 (this machine has v1 only: a folder stands in for the v2 mount, so this checks the path
    choice and the files written, not the kernel): the memory controller is found where the toolkit's
    cgroup offers it, the session's one folder serves both controllers, memory.max is the bound and
    memory.swap.max is 0 (no swapping past it)."""
    from toolkit.agent.environments import cgroup

    me = tmp_path / "me"
    me.mkdir()
    (me / "cgroup.controllers").write_text("cpu memory pids\n")
    (me / "cgroup.subtree_control").write_text("")
    v2 = f"40 25 0:30 / {tmp_path} rw - cgroup2 cgroup2 rw\n"
    assert cgroup.hierarchy(v2, "0::/me\n", "memory") == (me, "v2")
    (me / "cgroup.controllers").write_text("cpu pids\n")
    assert cgroup.hierarchy(v2, "0::/me\n", "memory") is None  # not offered: RLIMIT_AS instead
    monkeypatch.setattr(cgroup, "hierarchy", lambda mountinfo, cgroups, controller: (me, "v2"))
    pids, memory = cgroup.Cgroup.make("s1", 64, "pids"), cgroup.Cgroup.make("s1", 256 * 2**20, "memory")
    assert pids.path == memory.path == me / f"toolkit-{os.getpid()}-s1" and memory.version == "v2"
    assert (memory.path / "memory.max").read_text() == str(256 * 2**20)
    assert (memory.path / "memory.swap.max").read_text() == "0" and (memory.path / "pids.max").read_text() == "64"
    assert "+memory" in (me / "cgroup.subtree_control").read_text()  # the controller enabled for the children


@pytest.mark.sandbox
async def test_a_bound_or_filter_that_cannot_be_had_is_said_in_one_line(tmp_path, monkeypatch, capsys):
    """Stand-ins for a machine where no pids cgroup can be made and libseccomp is missing (this one has
    both): under root the process bound's absence is one warning line, the filter's another, and the
    sandbox still runs, without ``--seccomp``. Nothing weaker is silent."""
    from toolkit.agent.environments import syscall_filter

    if bwrap_problem():
        pytest.skip(bwrap_problem())
    monkeypatch.setattr(envmod.Cgroup, "make", classmethod(lambda cls, name, n, c: f"no {c} cgroup here"))
    monkeypatch.setattr(syscall_filter, "program",
                        lambda unbounded_memory=False: "no seccomp filter: libseccomp not found")
    envmod.warn_once.cache_clear()
    env = make_environment("bubblewrap", tmp_path / "ws")
    try:
        assert env.cgroups == [] and "--seccomp" not in env.wrap(["true"], fds=[])
        assert (await env.execute("grep '^Seccomp:' /proc/self/status", 10)).output == "Seccomp:\t0"
        assert " -v " in " ".join(env.bounded(["true"]))  # RLIMIT_AS stands in for the memory cgroup
    finally:
        await env.stop()
    err = capsys.readouterr().err.strip().splitlines()
    expected = ["warning: limits.processes is not a session-wide bound (no pids cgroup here); RLIMIT_NPROC, which "
                "does not bind root instead",
                "warning: limits.memory_mb is not a session-wide bound (no memory cgroup here); RLIMIT_AS of each "
                "process instead",
                "warning: bubblewrap without a system-call filter: no seccomp filter: libseccomp not found"]
    assert err == expected


def test_a_cgroup_left_by_a_killed_toolkit_is_removed_by_the_next(tmp_path):
    """A toolkit killed with SIGKILL cannot remove its session's cgroup; the next one made removes an
    empty ``toolkit-<pid>-…`` whose process is gone, and leaves a live toolkit's alone."""
    from toolkit.agent.environments.cgroup import Cgroup

    first = Cgroup.make("first", 16)
    if isinstance(first, str):
        pytest.skip(first)
    dead = next(pid for pid in range(4_000_000, 3_000_000, -1) if not os.path.exists(f"/proc/{pid}"))
    stale = first.path.parent / f"toolkit-{dead}-stale"
    stale.mkdir()
    try:
        second = Cgroup.make("second", 16)
        assert not stale.exists() and first.path.is_dir() and second.path.is_dir()
        assert first.path.name.startswith(f"toolkit-{os.getpid()}-")
    finally:
        first.remove()
        second.remove()
        if stale.exists():
            stale.rmdir()
    assert not first.path.exists() and not second.path.exists()


@pytest.mark.skipif(not all(map(shutil.which, ("newuidmap", "newgidmap"))), reason="no uidmap (newuidmap)")
def test_the_sandbox_user_is_drawn_from_the_callers_own_subordinate_ids(tmp_path):
    """``subids.find`` reads the caller's ranges (by name or by uid) and nobody else's; a malformed or
    empty range is no range, and with none the answer names the file (the warning line's reason)."""
    import pwd

    from toolkit.agent.environments import subids

    name, uid = pwd.getpwuid(os.getuid()).pw_name, os.getuid()
    subuid, subgid, empty = tmp_path / "subuid", tmp_path / "subgid", tmp_path / "empty"
    subuid.write_text(f"someone-else:100000:65536\n{name}:x:5\n{name}:7000000:0\n\n{name}:5000000:10\n")
    subgid.write_text(f"{uid}:6000000:3\n")
    empty.write_text("someone-else:100000:65536\n")
    drawn = {subids.find(str(subuid), str(subgid))[0] for _ in range(50)}  # a fresh draw per session
    assert {d.uid for d in drawn} <= set(range(5000000, 5000010)) and len({d.uid for d in drawn}) > 1
    assert {d.gid for d in drawn} <= set(range(6000000, 6000003))
    for files, where in (((empty, subgid), empty), ((subuid, empty), empty)):
        ids, why = subids.find(*map(str, files))
        assert ids is None and why == f"{name} has no range in {where}"
    # a range written from 0 never gives root or a system account: only its ids from 1000 on are drawn
    subuid.write_text(f"{name}:0:1002\n")
    subgid.write_text(f"{name}:0:1002\n")
    assert {subids.find(str(subuid), str(subgid))[0].uid for _ in range(30)} <= {1000, 1001} - {uid}
    subgid.write_text(f"{name}:0:1000\n")
    assert subids.find(str(subuid), str(subgid)) == (None, f"{name} has no range in {subgid}")


def test_unpacking_refuses_a_result_that_makes_or_changes_a_repository(tmp_path):
    """A plain folder's result (a tar archive) with a folder git would take for a repository (it holds a
    HEAD), new, at the top, or the user's own with a changed config, is refused in one line and nothing is
    written; the user's unchanged one does not stop an ordinary change."""
    import io
    import json
    import tarfile

    from toolkit.agent.environments import result

    def archive(name, files, start=None):
        path = tmp_path / f"{name}.tar"
        with tarfile.open(path, "w") as tar:
            for member, (text, mtime) in files.items():
                info = tarfile.TarInfo(member)
                info.size, info.mtime = len(text), mtime
                tar.addfile(info, io.BytesIO(text.encode()))
        if start is not None:
            path.with_suffix(".start.json").write_text(json.dumps(start))
        return path

    evil = {"HEAD": ("ref: refs/heads/main\n", 1), "config": ("[core]\n\tpager = touch PWNED\n", 1),
            "objects/keep": ("", 1), "refs/heads/keep": ("", 1)}
    fixture = {f"fix/{k}": v for k, v in evil.items()}
    start = {name: ["f", len(text), mtime * 10**9] for name, (text, mtime) in fixture.items()}
    for name, files, listing, refused in (
            ("new", {"a.txt": ("x", 1), **{f"sub/{k}": v for k, v in evil.items()}}, {}, "'sub/HEAD' is in sub/"),
            ("top", evil, {}, "'HEAD' is in the top"),
            ("changed", {**fixture, "fix/config": ("[core]\n\tpager = touch PWNED2\n", 2)}, start,
             "'fix/config' is in fix/")):
        folder = tmp_path / name
        folder.mkdir()
        with pytest.raises(result.ResultError, match="which git would take for a repository") as refusal:
            result.unpack(archive(name, files, listing), folder)
        assert refused in str(refusal.value) and "\n" not in str(refusal.value)
        assert list(folder.iterdir()) == []
    folder = tmp_path / "ordinary"
    folder.mkdir()
    made = archive("ordinary", {**fixture, "a.txt": ("x", 1)}, start)
    assert "unpacked 1 new or changed entries" in result.unpack(made, folder)
    assert (folder / "a.txt").read_text() == "x"
