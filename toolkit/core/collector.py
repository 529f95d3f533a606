"""Python's garbage collector set for a process that plays many games at once: ``for_many_games`` is called by
the entry point that owns its process (the ``tournament`` command with one worker), after its imports. (A study's
pool workers keep the defaults: set there, a killed sweep's rerun did not finish, tests/study/test_sweep.py
kill_9[local].)
Library code never calls it: it changes the whole process, so a notebook keeps Python's defaults unless it calls
``for_many_games()`` itself.

Why: with Python's defaults (a collection of the youngest objects every 700 new ones, of the whole heap every
100 of those) the collector took 0.16 ms of CPU per model call at 64 classic7 games in flight and 0.34 ms at 256
(17% of the client's CPU; the whole-heap scans grow with the games in flight), measured with ``gc.callbacks``
around the benchmark's study (``benchmarks/endpoint_throughput.py``, whose new code calls this). Set here: what
is loaded before the games start (modules, compiled templates, output models) is frozen, never scanned again, and
the youngest generation is collected every 10,000 new objects: 0.03-0.05 ms per call at 64 games. Garbage in
cycles lives a little longer (up to 10,000 allocations); nothing else changes.
"""

from __future__ import annotations

import gc

YOUNG = 10_000  # new objects between two collections of the youngest generation (Python's default: 700)


def for_many_games() -> None:
    """Freeze what the process holds now and collect the youngest generation less often (see the module)."""
    gc.collect()
    gc.freeze()
    young, middle, old = gc.get_threshold()
    if young:  # 0: the collector was switched off by the caller; leave it off
        gc.set_threshold(max(young, YOUNG), middle, old)
