"""The bubblewrap sandbox's seccomp filter: the system calls a coding agent never needs fail with EPERM.

Built with libseccomp (through PyPI's ``pyseccomp``, a ctypes binding of the C library Debian ships as
``libseccomp2``) and handed to ``bwrap --seccomp FD`` as a compiled BPF program. Everything else is
allowed; the filter is a second wall behind the dropped capabilities and the user namespace, and it takes
away kernel interfaces that are reachable without privilege (keyrings, ptrace, new namespaces, perf,
io_uring, userfaultfd) and are the usual way into a kernel bug. A system call of another architecture
(32-bit ``int 0x80``, x32) kills the process: libseccomp's default for an architecture the filter does
not name. ``EnvironmentConfig.seccomp = false`` turns the filter off (e.g. to run ``strace`` or ``gdb``).
"""

from __future__ import annotations

import errno
import functools
import os
import tempfile

BLOCKED = {  # name: why a coding agent has no use for it
    "init_module": "kernel modules", "finit_module": "kernel modules", "delete_module": "kernel modules",
    "kexec_load": "another kernel", "kexec_file_load": "another kernel", "reboot": "the machine",
    "keyctl": "kernel keyrings", "add_key": "kernel keyrings", "request_key": "kernel keyrings",
    "ptrace": "other processes' memory", "process_vm_readv": "other processes' memory",
    "process_vm_writev": "other processes' memory",
    "mount": "file systems", "umount2": "file systems", "pivot_root": "file systems", "chroot": "file systems",
    "move_mount": "file systems", "open_tree": "file systems", "fsopen": "file systems",
    "fsconfig": "file systems", "fsmount": "file systems", "fspick": "file systems",
    "mount_setattr": "file systems", "swapon": "file systems", "swapoff": "file systems",
    "quotactl": "file systems", "quotactl_fd": "file systems",
    "unshare": "new namespaces", "setns": "other namespaces",
    "bpf": "kernel programs", "perf_event_open": "kernel tracing", "lookup_dcookie": "kernel tracing",
    "userfaultfd": "a common exploit primitive", "io_uring_setup": "io_uring", "io_uring_enter": "io_uring",
    "io_uring_register": "io_uring", "open_by_handle_at": "files by handle", "name_to_handle_at": "files by handle",
    "acct": "system settings", "syslog": "system settings", "settimeofday": "system settings",
    "clock_settime": "system settings", "clock_adjtime": "system settings", "adjtimex": "system settings",
    "iopl": "hardware ports", "ioperm": "hardware ports", "uselib": "obsolete", "vhangup": "obsolete",
    "nfsservctl": "obsolete",
}
# clone() with any of these flags (a new namespace) fails with EPERM; plain fork/thread clone() works.
# CLONE_NEWTIME is left out: in clone() that bit is part of the exit signal.
CLONE_NAMESPACES = {"CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
                    "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
                    "CLONE_NEWNET": 0x40000000}
# clone3() passes its flags in memory the filter cannot read: it fails with ENOSYS, so the C library falls
# back to clone(), whose flags the filter sees (what Docker's default profile does).


# Without a memory cgroup (a normal user where none is delegated) nothing bounds the pages of a memfd or of
# System V shared memory: these fail with EPERM then, and programs fall back to /dev/shm (a tmpfs of tmp_mb).
UNBOUNDED_MEMORY = ("memfd_create", "memfd_secret", "shmget")


@functools.lru_cache(maxsize=2)
def program(unbounded_memory: bool = False) -> bytes | str:
    """The compiled BPF program, or one line saying why there is none (libseccomp missing);
    ``unbounded_memory``: the session has no memory cgroup (``UNBOUNDED_MEMORY`` fail too)."""
    try:
        import pyseccomp as seccomp
    except (ImportError, RuntimeError) as exc:  # RuntimeError: the binding is there, libseccomp.so is not
        return f"no seccomp filter: {exc} (pip install pyseccomp; Debian: apt-get install libseccomp2)"
    f = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in [*BLOCKED, *(UNBOUNDED_MEMORY if unbounded_memory else ())]:
        if seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) >= 0:  # negative: not a call of this machine
            f.add_rule(seccomp.ERRNO(errno.EPERM), name)
    for flag in CLONE_NAMESPACES.values():
        f.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    if seccomp.resolve_syscall(seccomp.Arch.NATIVE, "clone3") >= 0:
        f.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    with tempfile.TemporaryFile() as out:
        f.export_bpf(out)
        out.seek(0)
        return out.read()


def fd(unbounded_memory: bool = False) -> int | None:
    """A fresh descriptor holding the program (bwrap reads it to the end), or None when there is none.
    The caller passes it to the child and closes it after the start."""
    bpf = program(unbounded_memory)
    if isinstance(bpf, str):
        return None
    memfd = os.memfd_create("toolkit-seccomp", os.MFD_CLOEXEC)
    os.write(memfd, bpf)
    os.lseek(memfd, 0, os.SEEK_SET)
    return memfd
