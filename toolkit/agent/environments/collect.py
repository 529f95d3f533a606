"""The session's result as data, made inside the environment: ``python3 -I -S collect.py OP ROOT ARGS…``.
Standard library and git only: it runs as a script, in the sandbox, as the sandbox's user. What it prints
is parsed by the host as data (a commit id, a git bundle, a tar archive); nothing it leaves behind is read.

  snapshot            -> the id of a commit whose tree is the working tree now (tracked and untracked files,
                         ignored ones and ``.agent`` left out), its parent HEAD (if any); then a line of ``refs``
  refs                -> a digest of what a git commit, pull or push changes: every ref, HEAD, FETCH_HEAD's
                         time (eval mode's confirmation that one ran)
  bundle START        -> a git bundle on stdout: the branches, ``refs/toolkit/start`` = START and
                         ``refs/toolkit/result`` = a snapshot made now
  tar                 -> a tar archive of the folder on stdout (``.agent`` left out)

Everything it writes goes to its own ``/tmp`` (a scratch folder per command), not to the workspace: a
workspace whose disk or inodes are full still yields its result.
"""

import hashlib
import os
import re
import subprocess
import sys
import tarfile
import tempfile

# git's settings that keep it from running a program a repository's configuration names (hooks, fsmonitor,
# the ext:: transport, a credential helper, a pager, a signing program) or leaving one behind (automatic gc).
# Declared once, here (this script cannot import the toolkit; the toolkit imports it): every git the toolkit
# runs starts from them: this script's, the host's (result.py) and the session's shell (GIT_CONFIG_*).
GIT_SAFETY = {"core.hooksPath": "/dev/null", "core.fsmonitor": "false", "protocol.ext.allow": "never",
              "credential.helper": "", "core.pager": "cat", "gc.auto": "0", "maintenance.auto": "false",
              "commit.gpgSign": "false"}


def flags(settings: dict) -> list:
    """``settings`` as git's ``-c NAME=VALUE`` options."""
    return [x for name, value in settings.items() for x in ("-c", f"{name}={value}")]


SAFE = flags({**GIT_SAFETY, "core.excludesFile": "/dev/null", "core.autocrlf": "false",
              "core.untrackedCache": "false"})
# the highest of git's attribute sources in the script's own git folder: no path has a filter, an encoding or
# a line-ending conversion, whatever the working tree's .gitattributes say
NO_FILTERS = "* -filter -text -eol -ident -working-tree-encoding\n"


def git(root: str, *args: str, env: dict | None = None, stdout=subprocess.PIPE) -> str:
    out = subprocess.run(["git", *SAFE, "-C", root, *args], env=env, stdout=stdout, stderr=subprocess.PIPE,
                         check=False)
    if out.returncode != 0:
        sys.exit(f"git {args[0]}: {out.stderr.decode(errors='replace').strip()[-300:]}")
    return out.stdout.decode().strip() if stdout == subprocess.PIPE else ""


def snapshot(root: str, scratch: str, own: bool = False) -> str:
    """A commit of the working tree, written to objects in ``scratch`` (the repository's own objects are
    only read, as alternates), or with ``own`` (at the start, the copy fresh) to the repository's. Made with a
    git folder of this script's (``scratch/git``): none of the copy's configuration, hooks or ``info/`` is
    read (its ``info/exclude`` is copied, as data), and ``NO_FILTERS`` overrides every ``.gitattributes``, so
    no filter, encoding or line-ending conversion of the agent's runs: the files' bytes as they are."""
    objects = os.path.join(scratch, "objects")
    os.makedirs(objects, exist_ok=True)
    gitdir = git(root, "rev-parse", "--absolute-git-dir")
    mine = os.path.join(scratch, "git")
    subprocess.run(["git", "init", "-q", "--bare", mine], check=True, capture_output=True)
    os.makedirs(os.path.join(mine, "info"), exist_ok=True)
    with open(os.path.join(mine, "info", "attributes"), "w") as f:
        f.write(NO_FILTERS)
    try:
        with open(os.path.join(gitdir, "info", "exclude"), "rb") as src, \
                open(os.path.join(mine, "info", "exclude"), "wb") as dst:
            dst.write(src.read(2**20))
    except OSError:
        pass
    env = {**os.environ, "GIT_DIR": mine, "GIT_WORK_TREE": root, "GIT_INDEX_FILE": os.path.join(scratch, "index"),
           "GIT_OBJECT_DIRECTORY": os.path.join(gitdir, "objects") if own else objects,
           "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.path.join(gitdir, "objects"),
           "GIT_AUTHOR_NAME": "toolkit", "GIT_AUTHOR_EMAIL": "toolkit@example.invalid",
           "GIT_COMMITTER_NAME": "toolkit", "GIT_COMMITTER_EMAIL": "toolkit@example.invalid",
           "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z"}
    git(root, "-c", "core.bare=false", "add", "-A", env=env)
    git(root, "-c", "core.bare=false", "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", ".agent", env=env)
    tree = git(root, "write-tree", env=env)
    head = subprocess.run(["git", *SAFE, "-C", root, "rev-parse", "--verify", "-q", "HEAD^{commit}"],
                          capture_output=True, text=True).stdout.strip()
    return git(root, "commit-tree", tree, *(["-p", head] if head else []), "-m", "working tree", env=env)


def refs(root: str) -> str:
    digest = hashlib.sha256(git(root, "for-each-ref", "--format=%(objectname) %(refname)").encode())
    head = subprocess.run(["git", *SAFE, "-C", root, "rev-parse", "HEAD", "--symbolic-full-name", "HEAD"],
                          capture_output=True).stdout
    digest.update(head)
    try:
        digest.update(str(os.stat(os.path.join(git(root, "rev-parse", "--absolute-git-dir"), "FETCH_HEAD"))
                          .st_mtime_ns).encode())
    except OSError:
        pass
    return digest.hexdigest()


def bundle(root: str, start: str, scratch: str) -> None:
    result = snapshot(root, scratch)
    gitdir = git(root, "rev-parse", "--absolute-git-dir")
    repo = os.path.join(scratch, "r.git")  # a repository of refs only: objects from the two above
    subprocess.run(["git", "init", "-q", "--bare", repo], check=True, capture_output=True)
    with open(os.path.join(repo, "objects", "info", "alternates"), "w") as f:
        f.write(f"{os.path.join(scratch, 'objects')}\n{os.path.join(gitdir, 'objects')}\n")
    refs = [("refs/toolkit/result", result)]
    if re.fullmatch(r"[0-9a-f]{40}", start):
        refs.append(("refs/toolkit/start", start))
    listed = git(root, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/")
    for line in filter(None, listed.splitlines()):
        sha, name = line.split(" ", 1)
        refs.append((name, sha))
    for name, sha in refs:
        git(repo, "update-ref", name, sha)
    sys.stdout.flush()
    git(repo, "bundle", "create", "-", "--all", stdout=sys.stdout.buffer.fileno())


def archive(root: str) -> None:
    with tarfile.open(fileobj=sys.stdout.buffer, mode="w|") as tar:
        for name in sorted(os.listdir(root)):
            if name != ".agent":
                tar.add(os.path.join(root, name), arcname=name, recursive=True)


def main() -> None:
    op, root = sys.argv[1], os.path.realpath(sys.argv[2])
    with tempfile.TemporaryDirectory() as scratch:
        if op == "snapshot":
            print(snapshot(root, scratch, own=True))
            print(refs(root))
        elif op == "refs":
            print(refs(root))
        elif op == "bundle":
            bundle(root, sys.argv[3] if len(sys.argv) > 3 else "", scratch)
        elif op == "tar":
            archive(root)
        else:
            sys.exit(f"unknown operation {op}")


if __name__ == "__main__":
    main()
