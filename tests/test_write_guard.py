"""The suite's write guard (tests/write_guard/sitecustomize.py) counts what a test's processes write under the
guarded folder and nothing else: a process with no running test (a user's own `play` beside the suite) and
writes elsewhere are not counted."""
import os
import subprocess
import sys
from pathlib import Path

GUARD = Path(__file__).resolve().parent / "write_guard"
WRITER = """
import os, pathlib, shutil, sys
root = pathlib.Path(sys.argv[1])
(root / "guarded" / "run1").mkdir(parents=True)
(root / "guarded").mkdir(exist_ok=True)  # an existing folder: nothing made
(root / "guarded" / "run1" / "calls.jsonl").write_text("{}")
fd = os.open(root / "guarded" / "raw", os.O_WRONLY | os.O_CREAT); os.close(fd)
shutil.copyfile(root / "elsewhere.txt", root / "guarded" / "copy.txt")
(root / "guarded" / "run1" / "calls.jsonl").read_text()  # reading is not writing
(root / "elsewhere2.txt").write_text("x")
"""


def run_writer(tmp_path, test_name):
    (tmp_path / "elsewhere.txt").write_text("x")
    report = tmp_path / "report.tsv"
    report.touch()
    env = {**os.environ, "PYTHONPATH": str(GUARD), "TOOLKIT_WRITE_GUARD": str(tmp_path / "guarded"),
           "TOOLKIT_WRITE_GUARD_REPORT": str(report)}
    env.pop("PYTEST_CURRENT_TEST", None)
    if test_name:
        env["PYTEST_CURRENT_TEST"] = f"{test_name} (call)"
    subprocess.run([sys.executable, "-c", WRITER, str(tmp_path)], env=env, check=True)
    return [line.split("\t") for line in report.read_text().splitlines()]


def test_a_tests_subprocess_writes_are_counted_with_the_tests_name(tmp_path):
    lines = run_writer(tmp_path, "tests/x.py::test_y[a b]")
    guarded = tmp_path / "guarded"
    assert {test for test, _ in lines} == {"tests/x.py::test_y[a b]"}
    assert {Path(path) for _, path in lines} == {guarded, guarded / "run1", guarded / "run1" / "calls.jsonl",
                                                 guarded / "raw", guarded / "copy.txt"}


def test_a_process_with_no_running_test_is_not_counted(tmp_path):
    assert run_writer(tmp_path, None) == []
    assert (tmp_path / "guarded" / "run1" / "calls.jsonl").exists()
