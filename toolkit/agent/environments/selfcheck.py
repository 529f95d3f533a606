"""Whether bubblewrap can run here, checked once at start-up, and, when it cannot, why in one line and what to
do: bwrap or util-linux missing, or the kernel refusing a user namespace to a user who is not root, with the
setting that refuses it named (AppArmor's restriction on Ubuntu 24.04 and Debian 13, Debian's older
``unprivileged_userns_clone``, ``user.max_user_namespaces`` of 0).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

SANDBOX_UID = SANDBOX_GID = 1000  # the sandbox's user as it sees itself (outside: BubblewrapEnvironment.outer_uid)
# (file below /proc/sys, the value that refuses, why and what to do)
USERNS_SETTINGS = (
    ("kernel/apparmor_restrict_unprivileged_userns", "1",
     "AppArmor refuses user namespaces to unconfined programs (kernel.apparmor_restrict_unprivileged_userns=1, "
     "as on Ubuntu 24.04 and Debian 13): give bwrap an AppArmor profile that allows them (e.g. a file in "
     "/etc/apparmor.d with 'profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }', then "
     "sudo apparmor_parser -r it), or sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0"),
    ("kernel/unprivileged_userns_clone", "0",
     "user namespaces are off for users who are not root (kernel.unprivileged_userns_clone=0): "
     "sudo sysctl kernel.unprivileged_userns_clone=1"),
    ("user/max_user_namespaces", "0",
     "user namespaces are off (user.max_user_namespaces=0): sudo sysctl user.max_user_namespaces=15000"),
)


def userns_problem(sysctl: Path = Path("/proc/sys"), root: bool | None = None) -> str | None:
    """The kernel setting that refuses this user a user namespace, with what to do; None when none does."""
    if os.geteuid() == 0 if root is None else root:
        return None
    for name, refusing, why in USERNS_SETTINGS:
        try:
            if (sysctl / name).read_text().strip() == refusing:
                return why
        except OSError:
            continue
    return None


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """None when bubblewrap works here, else why not (one line)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bwrap is not installed (Debian: apt-get install bubblewrap)"
    for tool in ("nsenter", "setpriv"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: apt-get install util-linux)"
    try:
        out = subprocess.run([exe, "--ro-bind", "/", "/", "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID),
                              "--gid", str(SANDBOX_GID), "--die-with-parent", "--cap-drop", "ALL", "true"],
                             capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap does not run: {exc}"
    if out.returncode != 0:
        said = " ".join(out.stderr.split())[-200:] or f"exit {out.returncode}"
        why = userns_problem()
        return f"bwrap cannot create namespaces here ({said})" + (f": {why}" if why else "")
    return None
