"""The test suite's write guard, loaded by every Python process the tests start (PYTHONPATH names this folder).

An audit hook notes each write a process makes under the guarded folder (TOOLKIT_WRITE_GUARD) with the test that
was running (PYTEST_CURRENT_TEST, which pytest sets and subprocesses inherit) in the report file
(TOOLKIT_WRITE_GUARD_REPORT); tests/conftest.py fails that test. A user's own `play` in the same checkout
during the suite has no test name and no hook, so it is never counted.
"""
import os
import sys


def _install():
    guarded, report = os.environ.get("TOOLKIT_WRITE_GUARD"), os.environ.get("TOOLKIT_WRITE_GUARD_REPORT")
    if not guarded or not report or getattr(sys, "_toolkit_write_guard", False):
        return
    sys._toolkit_write_guard = True
    prefix, busy = guarded.rstrip(os.sep) + os.sep, [False]
    writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def note(path):
        if isinstance(path, int) or path is None:
            return
        path = os.path.abspath(os.fsdecode(path))
        test = os.environ.get("PYTEST_CURRENT_TEST")
        if test and (path + os.sep).startswith(prefix):
            busy[0] = True
            try:
                with open(report, "a") as out:
                    out.write(f"{test.rsplit(' (', 1)[0]}\t{path}\n")
            finally:
                busy[0] = False

    def hook(event, args):
        if busy[0]:
            return
        if event == "open":
            path, mode, flags = args
            if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (flags or 0) & writing:
                note(path)
        elif event == "os.mkdir":
            if not isinstance(args[0], int) and not os.path.lexists(args[0]):  # an existing folder is not made
                note(args[0])
        elif event in ("os.symlink", "os.link"):
            note(args[1])
        elif event in ("os.rename", "os.replace", "shutil.copyfile", "shutil.copytree", "shutil.move"):
            note(args[1])

    sys.addaudithook(hook)


_install()
