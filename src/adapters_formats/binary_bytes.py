"""Byte-level building blocks of the binary format: a bounds-checked cursor, byte
interleaving, zig-zag integers and Roblox's rotated float32."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from itertools import accumulate

from adapters_formats.model_limits import MAX_NAME_BYTES, MAX_VALUE_BYTES
from licore.builds.errors import ModelFormatError


class Cursor:
    """Reads a chunk; every read past the end is a ModelFormatError, never an IndexError."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def take(self, size: int) -> bytes:
        end = self.pos + size
        if size < 0 or end > len(self.data):
            raise ModelFormatError(f"{self.what}: data ends early")
        out = self.data[self.pos:end]
        self.pos = end
        return out

    def u8(self) -> int:
        return self.take(1)[0]

    def u32(self) -> int:
        value: int = struct.unpack("<I", self.take(4))[0]
        return value

    def count(self, item_size: int) -> int:
        """A u32 element count, refused when that many items cannot fit in what is left."""
        n = self.u32()
        if n * max(item_size, 1) > len(self.data) - self.pos:
            raise ModelFormatError(f"{self.what}: count {n} runs past the end")
        return n

    def string(self, limit: int = MAX_VALUE_BYTES) -> bytes:
        """A length-prefixed string of at most `limit` bytes (docs/instances.md)."""
        size = self.count(1)
        if size > limit:
            raise ModelFormatError(f"{self.what}: a string of {size:,} bytes, more than "
                                   f"{limit:,}")
        return self.take(size)

    def name(self) -> bytes:
        """A class or property name."""
        return self.string(MAX_NAME_BYTES)

    def rest(self) -> bytes:
        return self.take(len(self.data) - self.pos)

    def unpack(self, fmt: str, n: int) -> tuple[float, ...]:
        size = struct.calcsize(fmt)
        values: tuple[float, ...] = struct.unpack(f"<{fmt * n}", self.take(size * n))
        return values

    def end(self) -> None:
        if self.pos != len(self.data):
            raise ModelFormatError(f"{self.what}: {len(self.data) - self.pos} bytes left over")


def deinterleave(data: bytes, n: int, width: int) -> bytes:
    out = bytearray(n * width)
    for k in range(width):
        out[k::width] = data[k * n:(k + 1) * n]
    return bytes(out)


def interleave(rows: bytes, n: int, width: int) -> bytes:
    out = bytearray(n * width)
    for k in range(width):
        out[k * n:(k + 1) * n] = rows[k::width]
    return bytes(out)


def read_u32s(cur: Cursor, n: int) -> list[int]:
    """Interleaved big-endian u32 values."""
    return list(struct.unpack(f">{n}I", deinterleave(cur.take(4 * n), n, 4)))


def write_u32s(values: Sequence[int]) -> bytes:
    return interleave(struct.pack(f">{len(values)}I", *values), len(values), 4)


def read_i32s(cur: Cursor, n: int) -> list[int]:
    """Interleaved, zig-zag encoded 32-bit integers."""
    return [(x >> 1) ^ -(x & 1) for x in read_u32s(cur, n)]


def write_i32s(values: Sequence[int]) -> bytes:
    for v in values:
        if not -(2**31) <= v < 2**31:
            raise ModelFormatError(f"integer {v} does not fit in 32 bits")
    return write_u32s([((v << 1) ^ (v >> 31)) & 0xFFFFFFFF for v in values])


def read_u64s(cur: Cursor, n: int) -> list[int]:
    return list(struct.unpack(f">{n}Q", deinterleave(cur.take(8 * n), n, 8)))


def write_u64s(values: Sequence[int]) -> bytes:
    return interleave(struct.pack(f">{len(values)}Q", *values), len(values), 8)


def read_i64s(cur: Cursor, n: int) -> list[int]:
    return [(x >> 1) ^ -(x & 1) for x in read_u64s(cur, n)]


def write_i64s(values: Sequence[int]) -> bytes:
    for v in values:
        if not -(2**63) <= v < 2**63:
            raise ModelFormatError(f"integer {v} does not fit in 64 bits")
    return write_u64s([((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF for v in values])


def read_floats(cur: Cursor, n: int) -> list[float]:
    """Interleaved big-endian float32 with the sign bit moved to the end."""
    bits = [(x >> 1) | ((x & 1) << 31) for x in read_u32s(cur, n)]
    return list(struct.unpack(f"<{n}f", struct.pack(f"<{n}I", *bits)))


def write_floats(values: Sequence[float]) -> bytes:
    n = len(values)
    try:
        raw = struct.unpack(f"<{n}I", struct.pack(f"<{n}f", *values))
    except (struct.error, OverflowError, TypeError) as err:
        raise ModelFormatError(f"not a float32 value: {err}") from None
    return write_u32s([((x << 1) | (x >> 31)) & 0xFFFFFFFF for x in raw])


def read_refs(cur: Cursor, n: int) -> list[int]:
    """Referents: zig-zag, interleaved, and each one a difference from the one before."""
    return list(accumulate(read_i32s(cur, n)))


def write_refs(values: Sequence[int]) -> bytes:
    deltas: list[int] = []
    last = 0
    for v in values:
        deltas.append(v - last)
        last = v
    return write_i32s(deltas)
