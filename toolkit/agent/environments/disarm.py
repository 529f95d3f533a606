"""What the agent planted for later, removed at the session's end: ``python -I disarm.py WORKSPACE``, run
inside the session's execution environment (so nothing here acts on the host's files), finds every git
repository in the workspace (``.git`` folders and ``gitdir:`` files, links not followed, ``.agent`` skipped)
and, in each, removes the settings that make git run a program or read another file (``core.fsmonitor``,
``core.hooksPath``, ``core.sshCommand``, editors, pagers, ``include.path``, ``includeIf``, filters, diff
drivers, ``!`` aliases, credential helpers, …) from its config files, and moves its active hooks (any file in
``hooks/`` not ending in ``.sample``) to ``.agent/planted/``. Prints what it removed as JSON. Standard library
and git only: it runs as a script."""

import json
import os
import re
import subprocess
import sys

DANGEROUS = re.compile(
    r"^(core\.(fsmonitor|hookspath|sshcommand|editor|pager|askpass|gitproxy|alternaterefscommand|worktree)"
    r"|include\.path|includeif\..*\.path|credential\..*|filter\..*\.(clean|smudge|process)"
    r"|diff\..*\.(textconv|command)|diff\.external|merge\..*\.driver|gpg\.program|gpg\..*\.program|sequence\.editor"
    r"|uploadpack\.packobjectshook|receive\.procreceiverefs|pager\..*|web\.browser|browser\..*\.(cmd|path)"
    r"|man\..*\.(cmd|path)|sendemail\..*cmd|remote\..*\.(uploadpack|receivepack|vcs)|protocol\..*\.allow"
    r"|safe\.directory|submodule\..*\.update)$", re.IGNORECASE)


def git_dirs(workspace: str) -> list[str]:
    found = []
    for top, dirs, files in os.walk(workspace, followlinks=False):
        dirs[:] = [d for d in dirs if d != ".agent" and not os.path.islink(os.path.join(top, d))]
        if ".git" in dirs:
            found.append(os.path.join(top, ".git"))
            dirs.remove(".git")
        elif ".git" in files and not os.path.islink(os.path.join(top, ".git")):
            with open(os.path.join(top, ".git"), errors="replace") as f:
                line = f.read(4096).strip()
            if line.startswith("gitdir:"):
                found.append(os.path.normpath(os.path.join(top, line[7:].strip())))
    return found


def configs(gitdir: str) -> list[str]:
    out = [os.path.join(gitdir, n) for n in ("config", "config.worktree")]
    worktrees = os.path.join(gitdir, "worktrees")
    if os.path.isdir(worktrees) and not os.path.islink(worktrees):
        out += [os.path.join(worktrees, w, "config.worktree") for w in sorted(os.listdir(worktrees))]
    return [c for c in out if os.path.isfile(c) and not os.path.islink(c)]


def disarm(workspace: str) -> list[str]:
    removed = []
    planted = os.path.join(workspace, ".agent", "planted")
    for gitdir in git_dirs(workspace):
        where = os.path.relpath(gitdir, workspace)
        for config in configs(gitdir):
            listed = subprocess.run(["git", "config", "--file", config, "--no-includes", "--null", "--list"],
                                    capture_output=True, timeout=30).stdout.decode(errors="replace")
            keys = []
            for entry in filter(None, listed.split("\0")):
                key, _, value = entry.partition("\n")
                if DANGEROUS.match(key) or (key.lower().startswith("alias.") and value.lstrip().startswith("!")):
                    keys.append(key)
            for key in dict.fromkeys(keys):
                subprocess.run(["git", "config", "--file", config, "--unset-all", key], capture_output=True, timeout=30)
                removed.append(f"{os.path.relpath(config, workspace)}: {key}")
        hooks = os.path.join(gitdir, "hooks")
        if os.path.islink(hooks):
            os.unlink(hooks)
            removed.append(f"{where}/hooks (a link)")
        elif os.path.isdir(hooks):
            for name in sorted(os.listdir(hooks)):
                if not name.endswith(".sample"):
                    os.makedirs(planted, exist_ok=True)
                    os.replace(os.path.join(hooks, name),
                               os.path.join(planted, f"{where.replace(os.sep, '__')}__hooks__{name}"))
                    removed.append(f"{where}/hooks/{name}")
    return removed


if __name__ == "__main__":
    print(json.dumps(disarm(os.path.realpath(sys.argv[1]))))
