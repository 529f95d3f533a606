"""A git bundle's objects measured from their headers, before any git of the host reads it: the size each
object says it has (a delta: the size of the object it makes, from the delta's own header), so a pack of a
few hundred bytes that claims gigabytes is refused before ``index-pack`` would allocate them. Reads the file
in pieces and inflates each object only as far as it must (a delta's first bytes; any object's whole stream,
discarded piece by piece, no further than the size it declares), so its own memory stays small.
"""

from __future__ import annotations

import time
import zlib
from typing import BinaryIO

OFS_DELTA, REF_DELTA = 6, 7
PIECE = 2**16


class PackRefused(ValueError):
    """The bundle is refused (one line: why)."""


def take(f: BinaryIO, n: int) -> bytes:
    """The next ``n`` bytes of the bundle (Python's buffered file holds the pieces)."""
    data = f.read(n)
    if len(data) < n:
        raise PackRefused("the bundle ends inside an object")
    return data


def varint(data: bytes, at: int) -> tuple[int, int]:
    """A delta header's size (7 bits a byte, low first) at ``at``; returns it and where it ends."""
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise PackRefused("a delta's header is cut short")
        c = data[at]
        value |= (c & 0x7F) << shift
        shift, at = shift + 7, at + 1
        if not c & 0x80:
            return value, at


def header(f: BinaryIO) -> tuple[int, int]:
    """An object's type and declared size (the inflated data's: for a delta, the delta's)."""
    c = take(f, 1)[0]
    kind, size, shift = (c >> 4) & 7, c & 15, 4
    while c & 0x80:
        if shift > 63:
            raise PackRefused("an object's header is too long")
        c = take(f, 1)[0]
        size |= (c & 0x7F) << shift
        shift += 7
    if kind == OFS_DELTA:
        c = take(f, 1)[0]
        while c & 0x80:
            c = take(f, 1)[0]
    elif kind == REF_DELTA:
        take(f, 20)
    elif kind not in (1, 2, 3, 4):
        raise PackRefused(f"an object of unknown type {kind}")
    return kind, size


def inflate(f: BinaryIO, size: int, first: int) -> bytes:
    """Inflate one object's stream to its end, keeping only its first ``first`` bytes; refused when it
    inflates to more than ``size`` bytes (the header's)."""
    z, kept, total = zlib.decompressobj(), b"", 0
    while not z.eof:
        data = z.unconsumed_tail or f.read(PIECE)
        if not data:
            raise PackRefused("the bundle ends inside an object")
        try:
            out = z.decompress(data, PIECE)
        except zlib.error as exc:
            raise PackRefused(f"an object's data is not zlib ({exc})") from None
        total += len(out)
        if total > size:
            raise PackRefused("an object inflates to more than its header says")
        if len(kept) < first:
            kept += out[:first - len(kept)]
    f.seek(-len(z.unused_data), 1)  # what follows the stream: the next object's
    return kept


def check(path: str, max_object: int, max_objects: int, deadline_s: float = 600, max_refs: int = 10_000,
          max_delta: int | None = None, max_total: int | None = None) -> int:
    """Raise ``PackRefused`` when an object of the bundle at ``path`` is more than ``max_object`` bytes, a
    delta makes more than ``max_delta`` (``max_object`` when None: git holds its base and result in memory at
    once), all its objects together (a delta: what it makes) more than ``max_total`` (None: no bound;
    ``index-pack`` builds and hashes every object of the pack, whether a ref reaches it or not), it has more
    than ``max_objects`` objects or names more than ``max_refs`` refs, or reading it takes more than
    ``deadline_s``; else return how many objects it has."""
    deadline, max_delta = time.monotonic() + deadline_s, max_object if max_delta is None else max_delta
    total = 0
    with open(path, "rb") as f:
        first = f.readline(100)
        if first not in (b"# v2 git bundle\n", b"# v3 git bundle\n"):
            raise PackRefused("not a git bundle")
        refs = 0
        for _ in range(max_refs + 64):  # capabilities, prerequisites and refs, up to the empty line
            line = f.readline(4096)
            if line == b"\n":
                break
            if not line.endswith(b"\n"):
                raise PackRefused("the bundle's list of refs is cut short or has an overlong line")
            refs += not line.startswith((b"@", b"-"))
            if refs > max_refs:
                break
        else:
            refs = max_refs + 1
        if refs > max_refs:
            raise PackRefused(f"the bundle names more than {max_refs} refs")
        head = take(f, 12)
        if head[:4] != b"PACK" or int.from_bytes(head[4:8], "big") not in (2, 3):
            raise PackRefused("the bundle holds no pack")
        count = int.from_bytes(head[8:12], "big")
        if count > max_objects:
            raise PackRefused(f"{count} objects, more than the session could make ({max_objects})")
        for _ in range(count):
            kind, size = header(f)
            if size > max_object and kind not in (OFS_DELTA, REF_DELTA):
                raise PackRefused(f"an object of {size} bytes, larger than the session could make "
                                  f"({max_object} bytes)")
            if kind in (OFS_DELTA, REF_DELTA):
                data = inflate(f, size, 20)
                made = varint(data, varint(data, 0)[1])[0]
                if made > min(max_object, max_delta):
                    bound = f"the session could make ({max_object} bytes)" if made > max_object else \
                        f"the intake may hold in memory with its base ({max_delta} bytes: half of memory_mb)"
                    raise PackRefused(f"a delta that makes an object of {made} bytes, larger than {bound}")
                size = made
            else:
                inflate(f, size, 0)
            total += size
            if max_total is not None and total > max_total:
                raise PackRefused(f"its objects make more than {max_total} bytes together, more than the session "
                                  "could make (disk_mb)")
            if time.monotonic() > deadline:
                raise PackRefused(f"reading its objects ran past the intake's wall clock ({deadline_s:.0f} s left)")
    return count
