"""An export written whole or not at all: the exporter writes into a staging folder beside ``out`` (the same
file system), and only once it has finished is each file renamed to its final name. A full disk (or any
failure) part-way leaves no file under a final name, damaged or not: the staging folder goes."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Callable


def write_all(write: Callable[[Path], list[Path]], out: Path) -> list[Path]:
    """``write(folder) -> paths`` into a staging folder, then every file it made moved into ``out``; returns
    the final paths (in ``write``'s order)."""
    out.mkdir(parents=True, exist_ok=True)
    staging = out / f".export-{uuid.uuid4().hex}.part"
    staging.mkdir()
    try:
        made = write(staging)
        final = [out / Path(p).relative_to(staging) if Path(p).is_relative_to(staging) else Path(p) for p in made]
        for top, _, files in os.walk(staging):
            for name in files:
                src = Path(top) / name
                dst = out / src.relative_to(staging)
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.replace(src, dst)
        return final
    finally:
        shutil.rmtree(staging, ignore_errors=True)
