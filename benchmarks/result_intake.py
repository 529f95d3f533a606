"""The host's side of a session's result, old code beside new in one run (issue 43; session 19's reviews F4, M6):

- ``deep``: a result 900 folders deep holding 300 files (the hostile review's shape, its archive written
  directly): CPU and wall seconds of ``result.take`` (every session's end) and ``result.apply`` (``--apply``);
- ``ignored``: a git workspace with a 200 MB git-ignored tree (a venv, a data folder) where the session edits
  one file: the archive ``collect.py`` makes of the copy (made as the sandbox makes it, from the host's start
  listing), its size, and the seconds of collect and take.

Each code tree runs in a child process of its own (``PYTHONPATH``): the checkout this script is in, and with
``--old PATH`` another (e.g. ``git worktree add /tmp/old 7f68d02``).

    python benchmarks/result_intake.py [--old PATH] [--depth 900] [--files 300] [--ignored-mb 200]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def timed(call) -> tuple[object, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = call()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def deep(base: Path, depth: int, files: int) -> dict:
    import tarfile

    from toolkit.agent.environments import result
    from toolkit.agent.environments.manifest import manifest

    folder, made = base / "ws", base / "made" / "result.tar"
    folder.mkdir()
    made.parent.mkdir()
    (folder / "a.txt").write_text("a\n")
    parts = [f"d{i % 10}" for i in range(depth)]
    with tarfile.open(made, "w") as tar:
        for i in range(1, depth + 1):
            info = tarfile.TarInfo("/".join(parts[:i]))
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        for i in range(files):
            tar.addfile(tarfile.TarInfo("/".join(parts) + f"/f{i:05d}"))
    _, take_s, take_cpu = timed(lambda: result.take(folder, "s1", made, files=manifest(folder)))
    line, apply_s, apply_cpu = timed(lambda: result.apply(folder, "s1"))
    assert str(line).startswith(f"unpacked {depth + files} "), line
    return {"take wall s": take_s, "take CPU s": take_cpu, "apply wall s": apply_s, "apply CPU s": apply_cpu}


def ignored(base: Path, megabytes: int) -> dict:
    from toolkit.agent.environments import collect, holder, result
    from toolkit.agent.environments.manifest import manifest

    folder = base / "ws"
    (folder / "venv").mkdir(parents=True)
    for i in range(megabytes):
        (folder / "venv" / f"lib{i}.so").write_bytes(os.urandom(2**20))
    (folder / ".gitignore").write_text("venv/\n")
    (folder / "a.txt").write_text("a\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "s"]):
        subprocess.run(["git", *args], cwd=folder, check=True)
    listing = manifest(folder)
    copy = base / "copy"
    copy.mkdir()
    holder.copy(str(folder), str(copy), os.getuid(), os.getgid())  # as the sandbox's copy is made
    (copy / "a.txt").write_text("the session's\n")
    (base / "start.json").write_text(json.dumps(listing))
    made = base / "made" / "result.tar"
    made.parent.mkdir()
    with open(made, "wb") as out:
        _, collect_s, _ = timed(lambda: subprocess.run(
            [sys.executable, "-I", "-S", collect.__file__, "tar", str(copy), str(base / "start.json")], stdout=out,
            check=True))
    size = made.stat().st_size
    _, take_s, take_cpu = timed(lambda: result.take(folder, "s1", made, files=listing))
    kept = sum(p.stat().st_size for p in (folder / ".agent" / "results").iterdir())
    return {"archive MB": size / 1e6, "kept MB": kept / 1e6, "collect wall s": collect_s, "take wall s": take_s,
            "take CPU s": take_cpu}


def child(args) -> None:
    with tempfile.TemporaryDirectory(prefix="result-intake-") as scratch:
        base = Path(scratch)
        (base / "deep").mkdir()
        (base / "ignored").mkdir()
        print(json.dumps({"deep": deep(base / "deep", args.depth, args.files),
                          "ignored": ignored(base / "ignored", args.ignored_mb)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", help="another checkout of the toolkit to measure beside this one")
    parser.add_argument("--depth", type=int, default=900)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--ignored-mb", type=int, default=200)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    print(f"load average {os.getloadavg()[0]:.1f}; deep: {args.depth} folders, {args.files} files; ignored: "
          f"{args.ignored_mb} MB")
    trees = [("new", HERE)] + ([("old", Path(args.old).resolve())] if args.old else [])
    rows = {}
    for name, tree in trees:
        out = subprocess.run([sys.executable, __file__, "--child", "--depth", str(args.depth), "--files",
                              str(args.files), "--ignored-mb", str(args.ignored_mb)],
                             env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True, check=True)
        rows[name] = json.loads(out.stdout.splitlines()[-1])
    for case in ("deep", "ignored"):
        for key in rows["new"][case]:
            print(f"{case:8} {key:16}" + "".join(f" {name} {rows[name][case][key]:10.2f}" for name, _ in trees))


if __name__ == "__main__":
    main()
