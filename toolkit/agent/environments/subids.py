"""The sandbox's user when the toolkit is not root: one of the caller's subordinate ids.

A caller that is not root may own ranges of ids in ``/etc/subuid`` and ``/etc/subgid`` (``owner:start:count``,
owner by name or uid; ``usermod --add-subuids``). Debian's set-user-ID ``newuidmap``/``newgidmap`` (package
``uidmap``) write a user namespace's mapping from those ranges. A session's namespace holder (``holder.py``)
is then mapped ``0 -> the caller`` (so it may mount and copy the caller's folder) and ``1 -> one id drawn at
random from the range`` (the sandbox's user, ``INNER``): what the sandbox creates is owned on the host by
that id, and a file of the caller's that the sandbox can see reads as another user's (a 0600 file is not
readable). ``find`` says None and why when this cannot be arranged; the sandbox's user is then the caller.
"""

from __future__ import annotations

import os
import pwd
import random
import shutil
import subprocess
from dataclasses import dataclass

INNER = 1  # the sandbox's user (and group) in the holder's user namespace
TOOLS = ("newuidmap", "newgidmap")


@dataclass(frozen=True)
class SubIds:
    uid: int  # the host's ids of this session's sandbox user
    gid: int

    def map(self, pid: int) -> str | None:
        """Map the user namespace of ``pid`` (made by it, not yet mapped): None, or why not (one line)."""
        for tool, own, sub in (("newuidmap", os.getuid(), self.uid), ("newgidmap", os.getgid(), self.gid)):
            try:
                done = subprocess.run([tool, str(pid), "0", str(own), "1", str(INNER), str(sub), "1"],
                                      capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"{tool}: {exc}"
            if done.returncode != 0:
                return f"{tool}: {(done.stderr.strip().splitlines() or [str(done.returncode)])[-1]}"
        return None


FIRST_ID = 1000  # ids below (root, system accounts) are never the sandbox's user, whatever a range grants


def ranges(text: str, names: set[str]) -> list[tuple[int, int]]:
    """The ``(start, count)`` ranges of ``/etc/subuid``-style ``text`` whose owner is one of ``names``, each
    cut to ids from ``FIRST_ID`` on (a range written from 0 would otherwise map the sandbox to host root)."""
    found = []
    for line in text.splitlines():
        parts = line.strip().split(":")
        if len(parts) == 3 and parts[0] in names and parts[1].isdigit() and parts[2].isdigit():
            start, end = max(int(parts[1]), FIRST_ID), int(parts[1]) + int(parts[2])
            if end > start:
                found.append((start, end - start))
    return found


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read(2**20)
    except OSError:
        return ""


def _draw(found: list[tuple[int, int]], own: int, rng: random.Random) -> int | None:
    ids = [(start, count) for start, count in found if not start <= own < start + count or count > 1]
    if not ids:
        return None
    total = sum(count for _, count in ids)
    while True:
        n = rng.randrange(total)
        for start, count in ids:
            if n < count:
                if start + n != own:
                    return start + n
                break
            n -= count


def find(subuid: str = "/etc/subuid", subgid: str = "/etc/subgid") -> tuple[SubIds | None, str]:
    """This caller's sandbox ids (a fresh draw from its ranges each call) and ``""``, or None and why not."""
    uid, gid = os.getuid(), os.getgid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        return None, f"uid {uid} has no account (newuidmap needs one)"
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return None, f"{' and '.join(missing)} not installed (Debian: apt-get install uidmap)"
    rng = random.SystemRandom()
    names = {name, str(uid)}
    sub_uid = _draw(ranges(_read(subuid), names), uid, rng)
    sub_gid = _draw(ranges(_read(subgid), names), gid, rng)
    if sub_uid is None or sub_gid is None:
        return None, f"{name} has no range in {subuid if sub_uid is None else subgid}"
    return SubIds(sub_uid, sub_gid), ""
