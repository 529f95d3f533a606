"""Where a worker shares its limits is the study's for the time of its work only (toolkit.llm.shared_limits.adopt):
a Dask worker lives on and serves the next study. Before, ``adopt`` set TOOLKIT_SHARED_LIMITS for the worker's
life, so the next study's batches on that worker kept sharing the first study's limits (and ``adopt`` was no
context manager: these tests fail there with a TypeError)."""

import os
import threading

from toolkit.llm.shared_limits import ENV, adopt, store_for
from toolkit.llm.limits import Limits


def test_a_worker_adopts_each_studys_limits_only_for_its_batch(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    first, second = str(tmp_path / "study1"), str(tmp_path / "study2")
    with adopt(first):
        assert os.environ[ENV] == first
        store = store_for("http://127.0.0.1:1/v1", Limits())
        assert store.path.parent == tmp_path / "study1"
    assert ENV not in os.environ  # the worker as it was started
    with adopt(second):
        assert os.environ[ENV] == second  # the next study's, not the first one's
        assert store_for("http://127.0.0.1:1/v1", Limits()).path.parent == tmp_path / "study2"
    assert ENV not in os.environ


def test_a_worker_started_with_its_own_place_keeps_it(tmp_path, monkeypatch):
    own = str(tmp_path / "shared-by-the-machines")
    monkeypatch.setenv(ENV, own)
    with adopt(str(tmp_path / "study1")):
        assert os.environ[ENV] == own
    assert os.environ[ENV] == own


def test_overlapping_batches_of_one_study_keep_it_until_the_last_ends(tmp_path, monkeypatch):
    """Two threads of one worker play two batches of a study at once: the first to end leaves the other's
    setting in place."""
    monkeypatch.delenv(ENV, raising=False)
    study = str(tmp_path / "study")
    inside, first_done, seen = threading.Event(), threading.Event(), []

    def other_batch() -> None:
        with adopt(study):
            inside.set()
            first_done.wait(5)
            seen.append(os.environ.get(ENV))

    t = threading.Thread(target=other_batch)
    t.start()
    inside.wait(5)
    with adopt(study):
        pass
    first_done.set()
    t.join(5)
    assert seen == [study] and ENV not in os.environ


def test_a_batch_leaves_no_file_open_behind_it(tmp_path, monkeypatch):
    """A study's batches in one worker reuse its folder store (one open file per study and endpoint). Before,
    every ``adopt`` block's end dropped the store unclosed and the next batch opened the file again: 50 batches,
    50 descriptors left open (a study of thousands of batches ran past ``ulimit -n``)."""
    monkeypatch.delenv(ENV, raising=False)
    opened = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    for _ in range(50):
        with adopt(str(tmp_path / "study")):
            store_for("http://127.0.0.1:1/v1", Limits())
    if opened is not None:
        assert len(os.listdir("/proc/self/fd")) <= opened + 1
