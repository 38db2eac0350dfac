"""Hostile binary model files, built by hand: each must be refused, in bounded time and memory."""

from __future__ import annotations

import struct

import zstandard

from adapters_formats.binary_bytes import write_refs
from adapters_formats.chunks import chunk_bytes, file_bytes


def folders(pairs: list[tuple[int, int]], count: int) -> bytes:
    """`count` Folders with the (child, parent) links given, as a binary file."""
    name = b"Folder"
    inst = chunk_bytes(b"INST", struct.pack("<I", 0) + struct.pack("<I", len(name)) + name
                       + b"\x00" + struct.pack("<I", count) + write_refs(list(range(count))))
    prnt = chunk_bytes(b"PRNT", b"\x00" + struct.pack("<I", len(pairs))
                       + write_refs([c for c, _ in pairs]) + write_refs([p for _, p in pairs]))
    return file_bytes(1, count, [inst, prnt])


def referent_cycle() -> bytes:
    return folders([(0, 1), (1, 0)], 2)


def deep_chain(depth: int) -> bytes:
    return folders([(0, -1)] + [(i, i - 1) for i in range(1, depth)], depth)


def zstd_bomb(inflated: int = 200 * 1024 * 1024, claimed: int = 1000) -> bytes:
    """A chunk whose Zstandard frame inflates to `inflated` bytes while its header says
    `claimed`."""
    bomb = zstandard.ZstdCompressor(level=19).compress(bytes(inflated))
    chunk = struct.pack("<4sIII", b"INST", len(bomb), claimed, 0) + bomb
    return file_bytes(1, 1, [chunk])
