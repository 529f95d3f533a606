"""The intake's bounds on the whole of a result, not only on each object (issue 43, review findings 1-3, 7):
the objects a bundle would add to the user's repository are measured together against ``disk_mb``; only the
branches the session made or moved are taken, at most ``result.MAX_BRANCHES``; a tree listing more files than
``inodes`` (a "tree bomb": one subtree listed many times) is refused; and the host's git starts under an
inherited lower hard ``RLIMIT_AS``. Real git objects and bundles (deltas made byte by byte as
``tests/agent/deltabomb`` does), real ``result.take``; every refusal leaves the user's repository as it was."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from tests.agent.deltabomb import git_id, obj_header, varint
from tests.agent.test_intake import repo, repository_state
from toolkit.agent.environments import result
from toolkit.agent.environments.limits import Limits

MiB = 2**20
BRANCHES, REFS = getattr(result, "MAX_BRANCHES", 100), getattr(result, "MAX_REFS", 10_000)  # the old code had none
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def commit(tree: str, msg: str = "c") -> bytes:
    return f"tree {tree}\nauthor a <a@a> 0 +0000\ncommitter a <a@a> 0 +0000\n\n{msg}\n".encode()


def bundle(refs: dict[str, str], objects: list[tuple[int, bytes]]) -> bytes:
    pack = b"PACK" + (2).to_bytes(4, "big") + len(objects).to_bytes(4, "big")
    for kind, data in objects:
        if kind == 7:
            pack += obj_header(7, len(data) - 20) + data[:20] + zlib.compress(data[20:], 9)
        else:
            pack += obj_header(kind, len(data)) + zlib.compress(data, 9)
    pack += hashlib.sha1(pack).digest()
    return b"# v2 git bundle\n" + "".join(f"{sha} {name}\n" for name, sha in refs.items()).encode() + b"\n" + pack


def small() -> tuple[str, list[tuple[int, bytes]]]:
    """A commit of the empty tree (the result and start of the bundles below)."""
    c = commit(EMPTY_TREE)
    return git_id("commit", c), [(2, b""), (1, c)]


def many_deltas(k: int, size: int) -> tuple[str, list[tuple[int, bytes]]]:
    """A commit whose tree holds ``k`` different blobs of ``size`` bytes, each a ``REF_DELTA`` of a few bytes
    on one 64 KiB base: each within the per-object bound, together far over ``disk_mb``."""
    base, copies = b"x" * 65536, size // 65536
    objects, entries = [(3, base)], []
    for i in range(k):
        tail = b"%08d" % i
        objects.append((7, bytes.fromhex(git_id("blob", base)) + varint(len(base)) + varint(copies * 65536 + 8)
                        + b"\x80" * copies + bytes([8]) + tail))
        entries.append((f"f{i}", git_id("blob", base * copies + tail)))
    tree = b"".join(b"100644 " + n.encode() + b"\0" + bytes.fromhex(h) for n, h in sorted(entries))
    c = commit(git_id("tree", tree), "big")
    return git_id("commit", c), [*objects, (2, tree), (1, c)]


def tree_bomb(depth: int, fan: int) -> tuple[str, list[tuple[int, bytes]]]:
    """A commit of ``depth`` trees, each listing the one below ``fan`` times: ``fan ** depth`` paths."""
    blob = b"b\n"
    objects, sha, mode = [(3, blob)], git_id("blob", blob), b"100644"
    for _ in range(depth):
        tree = b"".join(mode + b" " + str(i).encode() + b"\0" + bytes.fromhex(sha) for i in range(fan))
        objects.append((2, tree))
        sha, mode = git_id("tree", tree), b"40000"
    c = commit(sha, "bomb")
    return git_id("commit", c), [*objects, (1, c)]


def refused(tmp_path: Path, data: bytes, limits: Limits, why: str) -> None:
    user = repo(tmp_path / "user")
    made = tmp_path / "result.bundle"
    made.write_bytes(data)
    before = repository_state(user)
    with pytest.raises(result.ResultError) as exc:
        result.take(user, "s1", made, limits=limits)
    line = str(exc.value)
    assert "\n" not in line and why in line and "nothing of it was kept" in line, line
    assert repository_state(user) == before
    assert "refs/agent" not in subprocess.run(["git", "-C", str(user), "for-each-ref"], capture_output=True,
                                              text=True).stdout


def test_objects_on_a_branch_that_together_exceed_disk_mb_are_refused(tmp_path):
    """Eight 1 MiB blobs on a branch (each under the 2 MiB per-object bound, 8 MiB together) with
    ``disk_mb`` 4: refused. On 51c499d (and 0491331) all eight are fetched as ``refs/agent/s1/heads/big``."""
    tip, objects = small()
    big, more = many_deltas(8, MiB)
    data = bundle({"refs/toolkit/result": tip, "refs/toolkit/start": tip, "refs/heads/big": big}, objects + more)
    assert len(data) < 2000
    refused(tmp_path, data, Limits(disk_mb=4, file_size_mb=2), "more than the session could make (disk_mb")


def test_more_branches_than_a_session_makes_are_refused(tmp_path):
    """``MAX_BRANCHES`` + 1 new branches: refused (on the old code each became a ref file in the user's .git)."""
    tip, objects = small()
    heads = {f"refs/heads/b{i:04d}": tip for i in range(BRANCHES + 1)}
    data = bundle({"refs/toolkit/result": tip, "refs/toolkit/start": tip, **heads}, objects)
    refused(tmp_path, data, Limits(), f"{BRANCHES + 1} new or moved branches")


def test_a_bundle_naming_more_refs_than_allowed_is_refused_before_any_git(tmp_path):
    tip, objects = small()
    heads = {f"refs/heads/b{i:05d}": tip for i in range(REFS + 1)}
    refused(tmp_path, bundle({"refs/toolkit/result": tip, "refs/toolkit/start": tip, **heads}, objects), Limits(),
            "more than 10000 refs")


def test_a_tree_bomb_on_a_branch_is_refused(tmp_path):
    """A branch whose 6 trees list 10**6 paths, with ``inodes`` 64: refused (the old code fetched it)."""
    tip, objects = small()
    bomb, more = tree_bomb(6, 10)
    data = bundle({"refs/toolkit/result": tip, "refs/toolkit/start": tip, "refs/heads/bomb": bomb}, objects + more)
    refused(tmp_path, data, Limits(inodes=64), "heads/bomb lists more files than the session could make")


def test_only_branches_the_session_made_or_moved_are_taken(tmp_path):
    """The user's own branch, unchanged, is not taken again; a new one within the bounds is."""
    user = repo(tmp_path / "user")
    main = subprocess.run(["git", "-C", str(user), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    branch = subprocess.run(["git", "-C", str(user), "symbolic-ref", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    tip, objects = small()
    made = tmp_path / "result.bundle"
    made.write_bytes(bundle({"refs/toolkit/result": tip, "refs/toolkit/start": tip, f"refs/heads/{branch}": main,
                             "refs/heads/new": tip}, objects))
    assert result.take(user, "s1", made, limits=Limits(disk_mb=1)).startswith("refs/agent/s1/result")
    refs = subprocess.run(["git", "-C", str(user), "for-each-ref", "--format=%(refname)", "refs/agent/"],
                          capture_output=True, text=True).stdout.split()
    assert refs == ["refs/agent/s1/heads/new", "refs/agent/s1/result", "refs/agent/s1/start"]


def test_the_hosts_git_starts_under_an_inherited_lower_hard_address_space_limit(tmp_path):
    """Under ``prlimit --as`` lower than the intake's own bound (``ulimit -v`` in a container or CI job), the
    host's git runs: on 0491331 prlimit failed to raise the hard limit and every intake was refused."""
    user = repo(tmp_path / "user")
    code = ("import sys; from pathlib import Path; from toolkit.agent.environments.hostgit import git; "
            "print(git(Path(sys.argv[1]), 'rev-parse', 'HEAD').stdout.decode().strip())")
    run = subprocess.run(["prlimit", f"--as={3 * 2**30}", "--", sys.executable, "-c", code, str(user)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    assert run.returncode == 0 and len(run.stdout.strip()) == 40, run.stderr[-300:]
