"""The host's intake of a session's result (``result.take``): bounded, hostile data. A bundle whose pack claims
more than the session could make (a ``REF_DELTA`` of a few hundred bytes that makes gigabytes) is refused from
its headers, before any git of the host reads it, in one line, with nothing of it left in the user's
repository; the host's git itself runs under bounds of its own (``hostgit.Bounds``). Real git, real files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent.deltabomb import bomb_bundle
from tests.agent.test_boundary import AS, Host, observations, session, term, workspace
from toolkit.agent.environments import result
from toolkit.agent.environments.environment import bwrap_problem
from toolkit.agent.environments.limits import Limits

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
def test_a_delta_bomb_is_refused_before_any_git_reads_it(tmp_path, claim, real):
    """A 300-to-450-byte bundle whose delta makes (or claims) an object far larger than ``disk_mb``: refused in
    one line, no ref and no object kept. On 51c499d the 64 MiB one is fetched into ``refs/agent/…`` (and the 6 GiB
    claim makes index-pack allocate it: not run on the old code here)."""
    user = repo(tmp_path / "user")
    bundle = tmp_path / "result.bundle"
    bundle.write_bytes(bomb_bundle(claim, real))
    assert bundle.stat().st_size < 1000
    before = repository_state(user)
    with pytest.raises(result.ResultError) as refused:
        result.take(user, "s1", bundle, limits=Limits(disk_mb=8))
    line = str(refused.value)
    assert "\n" not in line and f"makes an object of {claim} bytes" in line and "nothing of it was kept" in line
    assert repository_state(user) == before
    refs = subprocess.run(["git", "-C", str(user), "for-each-ref"], capture_output=True, text=True).stdout
    assert "refs/agent" not in refs


@pytest.mark.slow
def test_a_result_within_the_limits_is_taken(tmp_path):
    """The same shape of bundle, 64 MiB made, with ``disk_mb`` 100: fetched as ``refs/agent/s1/result``."""
    user = repo(tmp_path / "user")
    bundle = tmp_path / "result.bundle"
    bundle.write_bytes(bomb_bundle(64 * MiB))
    line = result.take(user, "s1", bundle, limits=Limits(disk_mb=100))
    assert line.startswith("refs/agent/s1/result")
    size = subprocess.run(["git", "-C", str(user), "cat-file", "-s", "refs/agent/s1/result:big"], capture_output=True,
                          text=True).stdout
    assert size.strip() == str(64 * MiB)


def test_the_hosts_git_runs_under_its_own_memory_bound(tmp_path):
    """Past ``packcheck`` (called directly here), the host's git itself cannot hold more than its bounds: a
    256 MiB delta fetched with a 1 MiB object bound (258 MiB of memory) fails in one line."""
    from toolkit.agent.environments.hostgit import Bounds, ResultError, git

    user = repo(tmp_path / "user")
    bundle = tmp_path / "result.bundle"
    bundle.write_bytes(bomb_bundle(512 * MiB))
    with pytest.raises(ResultError) as refused:
        git(user, "fetch", "-q", str(bundle), "refs/toolkit/*:refs/x/*", bounds=Bounds(objects=MiB))
    assert "\n" not in str(refused.value)
    assert "refs/x" not in subprocess.run(["git", "-C", str(user), "for-each-ref"], capture_output=True,
                                          text=True).stdout


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
def test_a_session_whose_repository_holds_a_delta_bomb_ends_with_its_line_and_nothing_fetched(host):
    """The attack end to end, through the CLI under bubblewrap, as root and as a normal user: the agent writes
    the pack into its copy's ``.git`` and points a branch at it; the session still ends with its ``ended_by``
    line and its trajectory, the result is refused in one line, and the user's repository has no
    ``refs/agent`` and no new object."""
    import base64

    from tests.agent.deltabomb import bomb_pack

    ws = workspace(host)
    before = repository_state(ws)
    pack, tip, _ = bomb_pack(64 * MiB, True)
    plant = (f"echo {base64.b64encode(pack).decode()} | base64 -d > .git/objects/pack/pack-bomb.pack && "
             f"git index-pack .git/objects/pack/pack-bomb.pack && git update-ref refs/heads/bomb {tip} && echo planted")
    traj = session(host, ws, [term(plant)], environment={"limits": {"disk_mb": 8}})
    assert "planted" in observations(traj)
    assert "ended_by: end" in traj["stdout"]
    assert "larger than the session could make" in traj["result"] and "\n" not in traj["result"]
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
    """``collect.py`` on a copy whose ``.git/config`` names a clean filter and whose ``.gitattributes`` and
    ``.git/info/attributes`` apply it: the snapshot runs nothing and stores the files' bytes as they are. On
    51c499d ``git add -A`` ran the filter (here: it would touch a marker; in the issue: ``sleep 300`` stalled the
    session's end past its wall clock)."""
    from toolkit.agent.environments import collect

    copy = repo(tmp_path / "copy")
    marker = tmp_path / "PWNED"
    subprocess.run(["git", "-C", str(copy), "config", "filter.evil.clean", f"touch {marker}; tr a b"], check=True)
    (copy / ".gitattributes").write_text("* filter=evil\n")
    (copy / ".git" / "info" / "attributes").write_text("* filter=evil\n")
    (copy / "a.txt").write_text("aaa\n")
    out = subprocess.run([sys.executable, "-I", "-S", collect.__file__, "snapshot", str(copy)], capture_output=True,
                         text=True, check=True, timeout=60)
    commit = out.stdout.split()[0]
    stored = subprocess.run(["git", "-C", str(copy), "cat-file", "blob", f"{commit}:a.txt"], capture_output=True,
                            text=True).stdout
    assert not marker.exists() and stored == "aaa\n"
