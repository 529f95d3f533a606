"""Bounds without root (issue 43, point 5): the start-up self-check names the kernel setting that keeps bubblewrap
from running for a user who is not root and what to do; without a memory cgroup, the memory nothing else bounds
(memfd, System V shared memory) is refused by the sandbox's system-call filter."""

from __future__ import annotations

import os
import subprocess

import pytest

from toolkit.agent.environments import selfcheck, syscall_filter


@pytest.mark.parametrize("name,value,said", [("kernel/apparmor_restrict_unprivileged_userns", "1", "AppArmor"),
                                             ("kernel/unprivileged_userns_clone", "0", "unprivileged_userns_clone"),
                                             ("user/max_user_namespaces", "0", "max_user_namespaces")])
def test_the_setting_that_refuses_user_namespaces_is_named(tmp_path, name, value, said):
    (tmp_path / name).parent.mkdir(parents=True)
    (tmp_path / name).write_text(value + "\n")
    why = selfcheck.userns_problem(tmp_path, root=False)
    assert said in why and "sudo" in why and "\n" not in why
    assert selfcheck.userns_problem(tmp_path, root=True) is None  # root needs none of them
    (tmp_path / name).write_text({"1": "0", "0": "1"}[value])
    assert selfcheck.userns_problem(tmp_path, root=False) is None


@pytest.mark.sandbox
@pytest.mark.skipif(bool(selfcheck.bwrap_problem()) or isinstance(syscall_filter.program(), str),
                    reason="needs bubblewrap and libseccomp")
def test_without_a_memory_cgroup_memfd_is_refused_in_the_sandbox():
    probe = ("import os, mmap\ntry:\n    os.memfd_create('x'); print('memfd')\nexcept OSError as e:\n"
             "    print('refused', e.errno)")
    said = {}
    for unbounded in (False, True):
        fd = syscall_filter.fd(unbounded_memory=unbounded)
        try:
            out = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-all", "--unshare-user", "--dev", "/dev",
                                  "--seccomp", str(fd), "python3", "-I", "-c", probe], pass_fds=(fd,),
                                 capture_output=True, text=True, timeout=60)
        finally:
            os.close(fd)
        said[unbounded] = out.stdout.strip()
    assert said == {False: "memfd", True: "refused 1"}
