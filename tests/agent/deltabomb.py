"""Hostile git data made byte by byte, for the intake's tests: a pack whose one ``REF_DELTA`` makes an object of
any size from a few hundred bytes (copy instructions of 64 KiB each from a small base)."""

from __future__ import annotations

import hashlib
import zlib


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def obj_header(kind: int, size: int) -> bytes:
    out = bytearray([(kind << 4) | (size & 15) | (0x80 if size >> 4 else 0)])
    size >>= 4
    while size:
        out.append((size & 0x7F) | (0x80 if size >> 7 else 0))
        size >>= 7
    return bytes(out)


def git_id(kind: str, data: bytes) -> str:
    return hashlib.sha1(f"{kind} {len(data)}\0".encode() + data).hexdigest()


def bomb_pack(claim: int, real: bool) -> tuple[bytes, str, list[tuple[int, bytes]]]:
    """A pack of a 64 KiB blob of ``x`` and a delta on it claiming ``claim`` bytes (``real``: copy
    instructions that make them, and a tree and commit holding the result; else only the claim, the result's id
    made up). Returns the pack, the commit's (or the claimed blob's) id and the objects."""
    base = b"x" * 65536
    copies = claim // 65536
    delta = varint(len(base)) + varint(claim) + (b"\x80" * copies if real else b"\x80")  # copy 64 KiB from 0
    objects = [(3, base), (7, bytes.fromhex(git_id("blob", base)) + delta)]
    tip = "0" * 40
    if real:
        blob = git_id("blob", b"x" * claim) if claim <= 2**28 else "0" * 40
        tree = b"100644 big\0" + bytes.fromhex(blob)
        commit = (f"tree {git_id('tree', tree)}\nauthor a <a@a> 0 +0000\ncommitter a <a@a> 0 +0000\n\nbig\n").encode()
        objects += [(2, tree), (1, commit)]
        tip = git_id("commit", commit)
    body = b"PACK" + (2).to_bytes(4, "big") + len(objects).to_bytes(4, "big")
    for kind, data in objects:
        if kind == 7:
            body += obj_header(7, len(data) - 20) + data[:20] + zlib.compress(data[20:], 9)
        else:
            body += obj_header(kind, len(data)) + zlib.compress(data, 9)
    return body + hashlib.sha1(body).digest(), tip, objects
