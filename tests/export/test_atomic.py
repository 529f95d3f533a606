"""Exports are written whole or not at all (issue 43, point 7): a full disk part-way leaves no damaged file under
a final name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_an_export_that_fails_part_way_leaves_no_file_under_a_final_name(tmp_path, game_folder):
    """The export as a user runs it, its files limited to 2 KiB (``RLIMIT_FSIZE``, as a full disk): it fails,
    and ``out`` holds no file (on 51c499d the truncated ones were left under their final names)."""
    import resource

    out = tmp_path / "out"

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    done = subprocess.run([sys.executable, "-m", "toolkit", "export", "hf", str(game_folder), "--out", str(out)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          preexec_fn=small_files, timeout=300)
    assert done.returncode != 0
    assert [p for p in out.rglob("*") if p.is_file()] == []
    done = subprocess.run([sys.executable, "-m", "toolkit", "export", "hf", str(game_folder), "--out", str(out)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 0 and [p for p in out.rglob("*") if p.is_file()]
