"""The collector set for a process that plays many games (toolkit.core.collector). The setting is process-wide:
every case puts Python's collector back as it found it."""

import gc

import pytest

from toolkit.core.collector import for_many_games


@pytest.fixture
def collector():
    threshold, enabled = gc.get_threshold(), gc.isenabled()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
    (gc.enable if enabled else gc.disable)()


def test_the_youngest_generation_is_collected_less_often_and_the_loaded_heap_is_frozen(collector):
    gc.set_threshold(700, 10, 10)  # Python's defaults
    for_many_games()
    assert gc.get_threshold() == (10_000, 10, 10)
    assert gc.get_freeze_count() > 0 and gc.isenabled()


def test_a_higher_threshold_or_a_collector_switched_off_is_left_as_the_caller_set_it(collector):
    gc.set_threshold(50_000, 10, 10)
    for_many_games()
    assert gc.get_threshold()[0] == 50_000
    gc.set_threshold(0)  # the collector switched off stays off
    for_many_games()
    assert gc.get_threshold()[0] == 0
