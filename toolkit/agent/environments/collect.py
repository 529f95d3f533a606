"""The session's result as data, made inside the environment: ``python3 -I -S collect.py OP ROOT ARGS…``.
Standard library and git only: it runs as a script, in the sandbox, as the sandbox's user. What it prints
is parsed by the host as data (hex ids, a tar archive, text); nothing it leaves behind is read.

  refs                -> a digest of what a git commit, pull or push changes: every ref, HEAD, FETCH_HEAD's
                         time (eval mode's confirmation that one ran)
  start               -> that digest, then the ids of HEAD and every branch, a line each (at the start)
  tar [LISTING]       -> a tar archive of the folder on stdout (``.agent`` at the top, ``.git`` anywhere, FIFOs,
                         sockets and devices left out: the files, never git's objects); with LISTING (the host's
                         listing of the folder at the start, JSON) only what changed since, and last the names
                         of the listing that are gone (``DELETED``)
  log TIPS…           -> the commits no TIPS reach (the agent's) as ``git format-patch`` text on stdout, for
                         the user to read; no textconv or external diff of the agent's runs
"""

import hashlib
import io
import json
import os
import re
import stat
import subprocess
import sys
import tarfile

# git's settings that keep it from running a program a repository's configuration names (hooks, fsmonitor,
# the ext:: transport, a credential helper, a pager, a signing program) or leaving one behind (automatic gc).
# Declared once, here (this script cannot import the toolkit; the toolkit imports it): every git the toolkit
# runs starts from them: this script's, the host's (hostgit.py) and the session's shell (GIT_CONFIG_*).
GIT_SAFETY = {"core.hooksPath": "/dev/null", "core.fsmonitor": "false", "protocol.ext.allow": "never",
              "credential.helper": "", "core.pager": "cat", "gc.auto": "0", "maintenance.auto": "false",
              "commit.gpgSign": "false"}


def flags(settings: dict) -> list:
    """``settings`` as git's ``-c NAME=VALUE`` options."""
    return [x for name, value in settings.items() for x in ("-c", f"{name}={value}")]


# a commit message's line git am takes for the start of a patch (mailinfo's patchbreak) or of another mail
BREAK = re.compile(rb"diff -|Index: |From |---(?: \S|\s*$)")
DELETED = ".agent/deleted"  # the archive's member naming what the session deleted (NUL-separated): never a file's
SAFE = flags({**GIT_SAFETY, "diff.external": "", "core.attributesFile": "/dev/null"})


def git(root: str, *args: str, check: bool = True, stdout=subprocess.PIPE) -> bytes:
    out = subprocess.run(["git", *SAFE, "-C", root, *args], stdout=stdout, stderr=subprocess.PIPE, check=False)
    if out.returncode == -25:  # SIGXFSZ: past the bound the host set (``ulimit -f``), said as Python says it
        sys.exit(f"git {args[0]}: [Errno 27] File too large")
    if check and out.returncode != 0:
        sys.exit(f"git {args[0]}: {out.stderr.decode(errors='replace').strip()[-300:]}")
    return out.stdout


def refs(root: str) -> str:
    digest = hashlib.sha256(git(root, "for-each-ref", "--format=%(objectname) %(refname)"))
    digest.update(git(root, "rev-parse", "HEAD", "--symbolic-full-name", "HEAD", check=False))
    try:
        gitdir = git(root, "rev-parse", "--absolute-git-dir").decode().strip()
        digest.update(str(os.stat(os.path.join(gitdir, "FETCH_HEAD")).st_mtime_ns).encode())
    except OSError:
        pass
    return digest.hexdigest()


def tips(root: str) -> str:
    head = git(root, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
    return (head + git(root, "for-each-ref", "--format=%(objectname)", "refs/heads/", check=False)).decode()


def log(root: str, start: list) -> None:
    """The commits no ``start`` reaches, oldest first, as ``git format-patch`` text; a line of a message that
    ``git am`` would take for a patch (``diff -``, ``---``, ``Index: ``) or another mail (``From ``) is indented
    by a space, so that applying the text never applies a diff written in a message as code."""
    ends = tips(root).split()
    if not ends:
        return
    for commit in git(root, "rev-list", "--reverse", "--topo-order", "--no-merges", *ends, "--not", *start).split():
        mail = git(root, "format-patch", "--stdout", "--no-textconv", "--no-ext-diff", "--no-color", "-1", commit)
        body = git(root, "log", "-1", "--format=%b", commit).rstrip(b"\n")
        head, _, rest = mail.partition(b"\n\n")
        lines, said = rest.split(b"\n"), body.split(b"\n") if body else []
        if lines[:len(said)] != said:  # not where format-patch puts it: the whole mail is not the user's to apply
            sys.exit(f"git format-patch: commit {commit.decode()}'s message not found in its text")
        lines[:len(said)] = [b" " + line if BREAK.match(line) else line for line in said]
        sys.stdout.buffer.write(head + b"\n\n" + b"\n".join(lines))
        sys.stdout.flush()


def archive(root: str, listing: dict | None) -> None:
    """The folder as a tar archive; with the host's ``listing`` of it at the start, only the change: a file of
    the same size, modification time and mode as listed, or a folder that was one, is left out (a venv or a
    data folder the session did not touch costs nothing), and the listed names no longer there end it."""
    seen = set()
    with tarfile.open(fileobj=sys.stdout.buffer, mode="w|") as tar:
        # a folder that cannot be listed fails the result: skipped, its names would read as the session's deletions
        for top, dirs, files in os.walk(root, onerror=unlisted):
            at = os.path.relpath(top, root)
            out = (".agent", ".git") if at == "." else (".git",)
            dirs[:] = sorted(d for d in dirs if d not in out)
            for name in sorted([*dirs, *(f for f in files if f not in out)]):
                rel = name if at == "." else f"{at}/{name}"
                seen.add(rel)
                if listing is None or not unchanged(os.path.join(top, name), listing.get(rel)):
                    tar.add(os.path.join(top, name), arcname=rel, recursive=False, filter=kept)
        if listing is not None:
            gone = b"\0".join(os.fsencode(n) for n in sorted(set(listing) - seen))
            info = tarfile.TarInfo(DELETED)
            info.size = len(gone)
            tar.addfile(info, io.BytesIO(gone))


def unlisted(error: OSError) -> None:
    """``os.walk``'s ``onerror``: a folder of the copy it cannot list ends the archive (the walk would skip it)."""
    raise error


def unchanged(path: str, entry) -> bool:
    """Whether ``path`` is as the listing has it (``[kind, size, mtime_ns, mode]``): a file of the same size,
    modification time and mode, or a folder that was one (a link always comes: few, and checked where written)."""
    st = os.lstat(path)
    if not isinstance(entry, list) or len(entry) != 4:
        return False
    if stat.S_ISDIR(st.st_mode):
        return entry[0] == "d"
    return stat.S_ISREG(st.st_mode) and entry == ["f", st.st_size, st.st_mtime_ns, st.st_mode & 0o777]


def kept(member: tarfile.TarInfo):
    """Files, links and folders only, as the copy holds them (a FIFO or a socket of the session's is left out),
    and no ``.git`` at any depth: a nested repository's or a submodule's git is the user's, never the result's."""
    if ".git" in member.name.split("/"):
        return None
    return member if member.isfile() or member.isdir() or member.issym() or member.islnk() else None


def main() -> None:
    op, root = sys.argv[1], os.path.realpath(sys.argv[2])
    if op == "refs":
        print(refs(root))
    elif op == "start":
        print(refs(root))
        print(tips(root), end="")
    elif op == "log":
        log(root, sys.argv[3:])
    elif op == "tar":
        listing = None
        if len(sys.argv) > 3:
            with open(sys.argv[3]) as f:
                listing = json.load(f)
        archive(root, listing)
    else:
        sys.exit(f"unknown operation {op}")


if __name__ == "__main__":
    main()
