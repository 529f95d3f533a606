"""The session's namespaces and its private copy: ``python3 -I holder.py SPEC_JSON``, started by the host
once per sandboxed session. Standard library only: it runs as a script, not as part of the toolkit.

It makes a mount and a network namespace of its own (and, when the toolkit is not root, a user namespace
in which the caller is root, so the mounts below are allowed), then:

- with ``spec["map"]`` (the caller has subordinate ids, ``subids.py``) prints ``map`` and waits for a line:
  ``go`` when the host has mapped the namespace (``0`` the caller, ``1`` the sandbox's user), ``self`` when
  it could not (then the namespace maps only the caller, as without ``map``, and the sandbox's user is 0);

- mounts the private copy's file system at ``spec["ws"]``: a tmpfs with ``size`` bytes and ``nr_inodes``
  inodes, ``nosuid,nodev``, owned by the sandbox's user (blocks and inodes are the session's, not the host
  disk's);
- copies the user's folder into it (regular files, folders and symlinks as links; set-id bits dropped; FIFOs,
  sockets and devices left out; ``.agent`` left out), owned by the sandbox's user. This is the host reading
  the user's own folder, which the sandbox never writes;
- bind-mounts the read-only folders the sandbox may see (``reach``: the Python prefix, ``read_only``
  folders, the allowed git remotes) at ``spec["mnt"]/<i>``, read-only, ``nosuid,nodev``, so a sandbox user
  that cannot walk to them through their parents (e.g. a pytest folder under a 0700 one) still sees them;
- brings the loopback interface up (the network namespace has nothing else unless ``network: true``
  attaches slirp4netns to it).

It prints ``ready`` and then waits until its standard input closes (the host ends the session, or dies:
then the kernel's parent-death signal, set here, ends it too: the host forks it from a thread that lives as
long as its process, ``toolkit/core/spawn.py``); with it go the namespaces and the tmpfs.
"""

import ctypes
import fcntl
import json
import os
import signal
import socket
import stat
import struct
import sys

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG = 1
libc = ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def enc(text):
    return text.encode() if text is not None else None


def mount(source, target, fstype, flags, data=None) -> None:
    check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def enter_namespaces(root: bool, mapped_by_host: bool) -> bool:
    """The holder's namespaces; True when the host mapped the user namespace (subordinate ids)."""
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWNET | (0 if root else CLONE_NEWUSER)
    check(libc.unshare(flags), "unshare")
    if mapped_by_host:
        os.write(1, b"map\n")  # the protocol with the host (its stdout is a pipe), not terminal output
        mapped_by_host = sys.stdin.buffer.readline() == b"go\n"
    if not root and not mapped_by_host:  # the caller is root in its own namespace: mounts are allowed there
        write("/proc/self/setgroups", "deny")
        write("/proc/self/uid_map", f"0 {uid} 1")
        write("/proc/self/gid_map", f"0 {gid} 1")
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing mounted here reaches the host, and back
    return mapped_by_host


def loopback_up() -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ifreq = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(s, 0x8913, ifreq))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(s, 0x8914, struct.pack("16sH14s", b"lo", flags | 0x1, b""))  # SIOCSIFFLAGS: IFF_UP
    finally:
        s.close()


def copy(src: str, dst: str, uid: int, gid: int) -> None:
    """The user's folder into the private copy: what a working copy needs and nothing the host could be
    tricked by later (the copy is the sandbox's from here on; the host never reads it again)."""
    def own(path: str) -> None:
        os.lchown(path, uid, gid)

    own(dst)
    for top, dirs, files in os.walk(src, followlinks=False):
        rel = os.path.relpath(top, src)
        out = dst if rel == "." else os.path.join(dst, rel)
        if rel == ".":
            dirs[:] = [d for d in dirs if d != ".agent"]
            files = [f for f in files if f != ".agent"]
        for name in list(dirs) + files:
            s, d = os.path.join(top, name), os.path.join(out, name)
            st = os.lstat(s)
            if stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(s), d)
                if name in dirs:
                    dirs.remove(name)
            elif stat.S_ISDIR(st.st_mode):
                os.mkdir(d, 0o700)
            elif stat.S_ISREG(st.st_mode):
                with open(s, "rb", buffering=0) as fi, open(d, "xb", buffering=0) as fo:
                    while chunk := fi.read(1 << 20):
                        fo.write(chunk)
            else:
                continue  # FIFOs, sockets, devices: not data
            own(d)
            if not stat.S_ISLNK(st.st_mode):
                os.chmod(d, stat.S_IMODE(st.st_mode) & 0o1777)  # no set-user-ID or set-group-ID bit
                os.utime(d, ns=(st.st_atime_ns, st.st_mtime_ns))  # git's index stays valid
    st = os.stat(src)
    os.chmod(dst, stat.S_IMODE(st.st_mode) & 0o1777 | 0o700)


def main() -> None:
    spec = json.loads(sys.argv[1])
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:
        sys.exit(1)
    root = os.geteuid() == 0
    mapped = enter_namespaces(root, bool(spec.get("map")))
    uid, gid = (spec["uid"], spec["gid"]) if root or mapped else (0, 0)
    ws = spec["ws"]
    mount("tmpfs", ws, "tmpfs", MS_NOSUID | MS_NODEV,
          f"size={spec['size']},nr_inodes={spec['inodes']},mode=0700,uid={uid},gid={gid}")
    for i, path in enumerate(spec["reach"]):
        target = os.path.join(spec["mnt"], str(i))  # made by the host
        mount(path, target, None, MS_BIND | MS_REC)
        mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    loopback_up()
    if spec.get("source"):
        copy(spec["source"], ws, uid, gid)
    print("ready", flush=True)
    while sys.stdin.buffer.read(4096):
        pass


if __name__ == "__main__":
    try:
        main()
    except OSError as exc:
        print(f"error: {exc}", flush=True)
        sys.exit(1)
