"""What a run writes and how it is read back: ``Run`` (the run log: a folder of tables) and ``load`` (every run
below a folder, one pandas frame per table).

    from toolkit.record import Run, load

Names here are imported when first used (``toolkit.core.lazy``), so importing one module of the package, such as
``toolkit.record.rows``, loads no pandas. ``load`` is both the function and the module it lives in
(``toolkit.record.load``): the package's ``load`` stays the function even once the module is imported
(``toolkit.core.lazy``)."""

from __future__ import annotations

from toolkit.core.lazy import face

_WHERE = {
    "Results": "toolkit.record.load",
    "games_with_params": "toolkit.record.load",
    "load": "toolkit.record.load",
    "Run": "toolkit.record.run_log",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = face(__name__, _WHERE)
