"""What a run writes and how it is read back: ``Run`` (the run log: a folder of tables) and ``load`` (every run
below a folder, one pandas frame per table).

    from toolkit.record import Run, load
"""

from __future__ import annotations

# imported here, not when first used: ``load`` is also the name of the module it lives in, and a lazy lookup
# would hand out the module once something imported ``toolkit.record.load``
from toolkit.record.load import Results, games_with_params, load
from toolkit.record.run_log import Run

__all__ = ["Results", "Run", "games_with_params", "load"]
