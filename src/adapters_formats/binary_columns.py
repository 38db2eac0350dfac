"""Property columns of the binary format, one reader and one writer per type id.

A PROP chunk holds one property for every instance of a class, as a column; most types split
their components into separate interleaved arrays. Values come out in the shapes of
`licore.builds.tree.SHAPES`.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from adapters_formats.binary_bytes import (
    Cursor,
    deinterleave,
    interleave,
    read_floats,
    read_i32s,
    read_i64s,
    read_refs,
    read_u32s,
    write_floats,
    write_i32s,
    write_i64s,
    write_refs,
    write_u32s,
)
from licore.builds.errors import ModelFormatError


@attrs.define
class Context:
    """What columns share across a file: the SSTR table and referent numbering."""

    shared: list[bytes] = attrs.Factory(list)
    shared_index: dict[bytes, int] = attrs.Factory(dict)
    # reading: file referent -> tree referent; writing: tree referent -> file referent
    refs: dict[Any, Any] = attrs.Factory(dict)

    def share(self, value: bytes) -> int:
        index = self.shared_index.get(value)
        if index is None:
            index = self.shared_index[value] = len(self.shared)
            self.shared.append(value)
        return index


Reader = Callable[[Cursor, int, Context], list[Any]]
Writer = Callable[[Sequence[Any], Context], bytes]


def _columns(cur: Cursor, n: int, kinds: str) -> list[tuple[Any, ...]]:
    """Read one array per component (f = float32, i = int32), then zip them into values."""
    cols: list[list[Any]] = [
        read_floats(cur, n) if k == "f" else read_i32s(cur, n) for k in kinds
    ]
    return list(zip(*cols, strict=True)) if cols else []


def _write_columns(values: Sequence[Sequence[Any]], kinds: str) -> bytes:
    out = []
    for k, kind in enumerate(kinds):
        col = [v[k] for v in values]
        out.append(write_floats(col) if kind == "f" else write_i32s(col))
    return b"".join(out)


def _check_shape(values: Sequence[Any], size: int, what: str) -> None:
    for v in values:
        if not isinstance(v, tuple | list) or len(v) != size:
            raise ModelFormatError(f"{what} value must have {size} components, got {v!r}")


# --- per-type readers and writers -------------------------------------------------------

def _read_string(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    return [cur.string() for _ in range(n)]


def _write_string(values: Sequence[Any], ctx: Context) -> bytes:
    out = []
    for v in values:
        data = v if isinstance(v, bytes) else str(v).encode()
        out.append(struct.pack("<I", len(data)) + data)
    return b"".join(out)


def _read_bool(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    return [b != 0 for b in cur.take(n)]


def _write_bool(values: Sequence[Any], ctx: Context) -> bytes:
    return bytes(1 if v else 0 for v in values)


def _read_int32(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    return read_i32s(cur, n)


def _write_int32(values: Sequence[Any], ctx: Context) -> bytes:
    return write_i32s([int(v) for v in values])


def _read_float32(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    return read_floats(cur, n)


def _write_float32(values: Sequence[Any], ctx: Context) -> bytes:
    return write_floats([float(v) for v in values])


def _read_float64(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    return list(cur.unpack("d", n))


def _write_float64(values: Sequence[Any], ctx: Context) -> bytes:
    return struct.pack(f"<{len(values)}d", *values)


def _fixed(kinds: str, order: tuple[int, ...] | None = None) -> tuple[Reader, Writer]:
    """A struct stored as separate interleaved arrays; `order` maps file order to tuple order."""

    def read(cur: Cursor, n: int, ctx: Context) -> list[Any]:
        rows = _columns(cur, n, kinds)
        if order is None:
            return rows
        return [tuple(row[i] for i in order) for row in rows]

    def write(values: Sequence[Any], ctx: Context) -> bytes:
        _check_shape(values, len(kinds), "struct")
        if order is not None:
            inverse = sorted(range(len(order)), key=lambda i: order[i])
            values = [tuple(v[i] for i in inverse) for v in values]
        return _write_columns(values, kinds)

    return read, write


def _packed(fmt: str, size: int) -> tuple[Reader, Writer]:
    """Little-endian structs stored one after another, with no interleaving."""

    def read(cur: Cursor, n: int, ctx: Context) -> list[Any]:
        flat = cur.unpack(fmt, n * size)
        return [tuple(flat[i * size:(i + 1) * size]) for i in range(n)]

    def write(values: Sequence[Any], ctx: Context) -> bytes:
        _check_shape(values, size, "struct")
        try:
            return b"".join(struct.pack(f"<{fmt * size}", *v) for v in values)
        except struct.error as err:
            raise ModelFormatError(f"value out of range: {err}") from None

    return read, write


def _read_byte(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    return list(cur.take(n))


def _write_byte(values: Sequence[Any], ctx: Context) -> bytes:
    try:
        return bytes(int(v) for v in values)
    except ValueError as err:
        raise ModelFormatError(str(err)) from None


def _read_u32(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    return read_u32s(cur, n)


def _write_u32(values: Sequence[Any], ctx: Context) -> bytes:
    for v in values:
        if not 0 <= int(v) < 2**32:
            raise ModelFormatError(f"value {v} does not fit in an unsigned 32-bit integer")
    return write_u32s([int(v) for v in values])


# CFrame rotations stored as one id byte: the matrix's first two columns are axis
# directions (NormalId order: +X, +Y, +Z, -X, -Y, -Z); the third is their cross product.
_AXES = ((1, 0, 0), (0, 1, 0), (0, 0, 1), (-1, 0, 0), (0, -1, 0), (0, 0, -1))


def _cross(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, int, int]:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _basic_rotation(rotation_id: int) -> tuple[float, ...] | None:
    x_id, y_id = divmod(rotation_id - 1, 6)
    if not 0 <= x_id < 6 or x_id % 3 == y_id % 3:
        return None
    c0, c1 = _AXES[x_id], _AXES[y_id]
    c2 = _cross(c0, c1)
    # row-major r00 r01 r02 r10 ...; ints first so no -0.0 appears
    return tuple(float(col[row]) for row in range(3) for col in (c0, c1, c2))


_BASIC_BY_ID: dict[int, tuple[float, ...]] = {
    i: m for i in range(1, 37) if (m := _basic_rotation(i)) is not None}
_BASIC: dict[tuple[float, ...], int] = {m: i for i, m in _BASIC_BY_ID.items()}
BASIC_ROTATION_IDS = frozenset(_BASIC_BY_ID)  # the id bytes other than 0 a CFrame may have


def _rotation_id(matrix: Sequence[float]) -> int:
    rid = _BASIC.get(tuple(matrix), 0)
    if rid and any(math.copysign(1.0, x) < 0 and x == 0 for x in matrix):
        return 0  # -0.0 would come back as +0.0 from a basic rotation id
    return rid


def _read_cframes(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    rotations: list[tuple[float, ...]] = []
    for _ in range(n):
        rid = cur.u8()
        if rid == 0:
            rotations.append(tuple(cur.unpack("f", 9)))
        else:
            basic = _BASIC_BY_ID.get(rid)
            if basic is None:
                raise ModelFormatError(f"unknown CFrame rotation id {rid:#x}")
            rotations.append(basic)
    positions = _columns(cur, n, "fff")
    return [(*p, *r) for p, r in zip(positions, rotations, strict=True)]


def _write_cframes(values: Sequence[Any], ctx: Context) -> bytes:
    _check_shape(values, 12, "CFrame")
    out = bytearray()
    for v in values:
        rid = _rotation_id(v[3:])
        out.append(rid)
        if rid == 0:
            out += struct.pack("<9f", *v[3:])
    out += _write_columns([v[:3] for v in values], "fff")
    return bytes(out)


def _read_optional_cframes(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    if cur.u8() != 0x10:
        raise ModelFormatError("OptionalCFrame column does not hold CFrames")
    frames = _read_cframes(cur, n, ctx)
    if cur.u8() != 0x02:
        raise ModelFormatError("OptionalCFrame column has no presence flags")
    flags = cur.take(n)
    return [f if flag else None for f, flag in zip(frames, flags, strict=True)]


_IDENTITY = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)


def _write_optional_cframes(values: Sequence[Any], ctx: Context) -> bytes:
    frames = [_IDENTITY if v is None else v for v in values]
    flags = bytes(0 if v is None else 1 for v in values)
    return b"\x10" + _write_cframes(frames, ctx) + b"\x02" + flags


def _read_refs(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    out = []
    for ref in read_refs(cur, n):
        # A referent that names no instance in this file is an unset value, as in Studio.
        out.append(None if ref == -1 else ctx.refs.get(ref))
    return out


def _write_refs(values: Sequence[Any], ctx: Context) -> bytes:
    return write_refs([-1 if v is None else ctx.refs.get(v, -1) for v in values])


def _read_sequence(size: int) -> Reader:
    def read(cur: Cursor, n: int, ctx: Context) -> list[Any]:
        out = []
        for _ in range(n):
            count = cur.count(4 * size)
            flat = cur.unpack("f", count * size)
            out.append(tuple(tuple(flat[i * size:(i + 1) * size]) for i in range(count)))
        return out

    return read


def _write_sequence(size: int) -> Writer:
    def write(values: Sequence[Any], ctx: Context) -> bytes:
        out = bytearray()
        for v in values:
            _check_shape(v, size, "keypoint")
            out += struct.pack("<I", len(v))
            for point in v:
                out += struct.pack(f"<{size}f", *point)
        return bytes(out)

    return write


def _read_physical(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    out: list[Any] = []
    for _ in range(n):
        flags = cur.u8()
        if flags & 1:
            out.append(tuple(cur.unpack("f", 6 if flags & 2 else 5)))
        else:
            out.append(None)
    return out


def _write_physical(values: Sequence[Any], ctx: Context) -> bytes:
    out = bytearray()
    for v in values:
        if v is None:
            out.append(0)
        elif isinstance(v, tuple | list) and len(v) in (5, 6):
            out.append(1 if len(v) == 5 else 3)
            out += struct.pack(f"<{len(v)}f", *v)
        else:
            raise ModelFormatError(f"PhysicalProperties value must be None or 5-6 floats: {v!r}")
    return bytes(out)


def _read_color3uint8(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    data = cur.take(3 * n)
    return list(zip(data[:n], data[n:2 * n], data[2 * n:], strict=True))


def _write_color3uint8(values: Sequence[Any], ctx: Context) -> bytes:
    _check_shape(values, 3, "Color3uint8")
    try:
        return bytes(v[0] for v in values) + bytes(v[1] for v in values) + bytes(
            v[2] for v in values)
    except ValueError as err:
        raise ModelFormatError(str(err)) from None


def _read_int64(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    return read_i64s(cur, n)


def _write_int64(values: Sequence[Any], ctx: Context) -> bytes:
    return write_i64s([int(v) for v in values])


def _read_shared(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    out = []
    for index in read_u32s(cur, n):
        if index >= len(ctx.shared):
            raise ModelFormatError(f"shared string {index} is not in the SSTR chunk")
        out.append(ctx.shared[index])
    return out


def _write_shared(values: Sequence[Any], ctx: Context) -> bytes:
    return write_u32s([ctx.share(bytes(v)) for v in values])


def _read_unique_ids(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    rows = deinterleave(cur.take(16 * n), n, 16)
    out = []
    for i in range(n):
        index, time, rand = struct.unpack_from(">IIQ", rows, 16 * i)
        rand = ((rand >> 1) | ((rand & 1) << 63))  # stored rotated left by one bit
        out.append((index, time, rand - (1 << 64) if rand >= 1 << 63 else rand))
    return out


def _write_unique_ids(values: Sequence[Any], ctx: Context) -> bytes:
    _check_shape(values, 3, "UniqueId")
    rows = bytearray()
    for index, time, rand in values:
        r = rand & 0xFFFFFFFFFFFFFFFF
        r = ((r << 1) | (r >> 63)) & 0xFFFFFFFFFFFFFFFF
        try:
            rows += struct.pack(">IIQ", index, time, r)
        except struct.error as err:
            raise ModelFormatError(f"UniqueId out of range: {err}") from None
    return interleave(bytes(rows), len(values), 16)


def _read_fonts(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    out = []
    for _ in range(n):
        family = cur.string().decode("utf-8", "surrogateescape")
        weight = struct.unpack("<H", cur.take(2))[0]
        style = cur.u8()
        cached = cur.string().decode("utf-8", "surrogateescape")
        out.append((family, weight, style, cached))
    return out


def _write_fonts(values: Sequence[Any], ctx: Context) -> bytes:
    _check_shape(values, 4, "Font")
    out = bytearray()
    for family, weight, style, cached in values:
        fam = family.encode("utf-8", "surrogateescape")
        face = cached.encode("utf-8", "surrogateescape")
        try:
            out += struct.pack("<I", len(fam)) + fam + struct.pack("<HB", weight, style)
        except struct.error as err:
            raise ModelFormatError(f"Font weight or style out of range: {err}") from None
        out += struct.pack("<I", len(face)) + face
    return bytes(out)


def _read_capabilities(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    return [v & 0xFFFFFFFFFFFFFFFF for v in read_i64s(cur, n)]


def _write_capabilities(values: Sequence[Any], ctx: Context) -> bytes:
    return write_i64s([v - (1 << 64) if v >= 1 << 63 else v for v in values])


def _read_content(cur: Cursor, n: int, ctx: Context) -> list[Any]:
    kinds = read_i32s(cur, n)
    uris = [cur.string().decode("utf-8", "surrogateescape") for _ in range(cur.count(4))]
    objects = read_refs(cur, cur.count(4))
    cur.take(4 * cur.count(4))  # references outside this file mean nothing once saved
    out: list[Any] = []
    uri_iter, obj_iter = iter(uris), iter(objects)
    for kind in kinds:
        try:
            if kind == 0:
                out.append(None)
            elif kind == 1:
                out.append(("uri", next(uri_iter)))
            elif kind == 2:
                target = ctx.refs.get(next(obj_iter))
                out.append(None if target is None else ("object", target))
            else:
                raise ModelFormatError(f"unknown Content source type {kind}")
        except StopIteration:
            raise ModelFormatError("Content column has fewer items than it names") from None
    return out


def _write_content(values: Sequence[Any], ctx: Context) -> bytes:
    kinds, uris, objects = [], [], []
    for v in values:
        if v is None:
            kinds.append(0)
        elif v[0] == "uri":
            kinds.append(1)
            uris.append(v[1].encode("utf-8", "surrogateescape"))
        elif v[0] == "object" and v[1] in ctx.refs:
            kinds.append(2)
            objects.append(ctx.refs[v[1]])
        else:
            kinds.append(0)
    out = bytearray(write_i32s(kinds))
    out += struct.pack("<I", len(uris))
    for u in uris:
        out += struct.pack("<I", len(u)) + u
    out += struct.pack("<I", len(objects)) + write_refs(objects)
    out += struct.pack("<I", 0)
    return bytes(out)


_UDIM_R, _UDIM_W = _fixed("fi")
_UDIM2_R, _UDIM2_W = _fixed("ffii", order=(0, 2, 1, 3))  # file: xs ys xo yo
_RAY_R, _RAY_W = _packed("f", 6)
_V3I16_R, _V3I16_W = _packed("h", 3)
_RANGE_R, _RANGE_W = _packed("f", 2)

# type id -> (type name, reader, writer)
CODECS: dict[int, tuple[str, Reader, Writer]] = {
    0x01: ("String", _read_string, _write_string),
    0x02: ("Bool", _read_bool, _write_bool),
    0x03: ("Int32", _read_int32, _write_int32),
    0x04: ("Float32", _read_float32, _write_float32),
    0x05: ("Float64", _read_float64, _write_float64),
    0x06: ("UDim", _UDIM_R, _UDIM_W),
    0x07: ("UDim2", _UDIM2_R, _UDIM2_W),
    0x08: ("Ray", _RAY_R, _RAY_W),
    0x09: ("Faces", _read_byte, _write_byte),
    0x0A: ("Axes", _read_byte, _write_byte),
    0x0B: ("BrickColor", _read_u32, _write_u32),
    0x0C: ("Color3", *_fixed("fff")),
    0x0D: ("Vector2", *_fixed("ff")),
    0x0E: ("Vector3", *_fixed("fff")),
    0x10: ("CFrame", _read_cframes, _write_cframes),
    0x12: ("Enum", _read_u32, _write_u32),
    0x13: ("Ref", _read_refs, _write_refs),
    0x14: ("Vector3int16", _V3I16_R, _V3I16_W),
    0x15: ("NumberSequence", _read_sequence(3), _write_sequence(3)),
    0x16: ("ColorSequence", _read_sequence(5), _write_sequence(5)),
    0x17: ("NumberRange", _RANGE_R, _RANGE_W),
    0x18: ("Rect", *_fixed("ffff")),
    0x19: ("PhysicalProperties", _read_physical, _write_physical),
    0x1A: ("Color3uint8", _read_color3uint8, _write_color3uint8),
    0x1B: ("Int64", _read_int64, _write_int64),
    0x1C: ("SharedString", _read_shared, _write_shared),
    0x1E: ("OptionalCFrame", _read_optional_cframes, _write_optional_cframes),
    0x1F: ("UniqueId", _read_unique_ids, _write_unique_ids),
    0x20: ("Font", _read_fonts, _write_fonts),
    0x21: ("SecurityCapabilities", _read_capabilities, _write_capabilities),
    0x22: ("Content", _read_content, _write_content),
}

# Tree types a binary file spells with another type's id.
TYPE_IDS: dict[str, int] = {name: tid for tid, (name, _, _) in CODECS.items()}
TYPE_IDS.update({"ProtectedString": 0x01, "BinaryString": 0x01, "ContentId": 0x01,
                 "NetAssetRef": 0x1C})

# What an instance that lacks a property its classmates have gets in the column.
DEFAULTS: dict[int, Any] = {
    0x01: b"", 0x02: False, 0x03: 0, 0x04: 0.0, 0x05: 0.0, 0x06: (0.0, 0),
    0x07: (0.0, 0, 0.0, 0), 0x08: (0.0,) * 6, 0x09: 0, 0x0A: 0, 0x0B: 194,
    0x0C: (0.0, 0.0, 0.0), 0x0D: (0.0, 0.0), 0x0E: (0.0, 0.0, 0.0), 0x10: _IDENTITY,
    0x12: 0, 0x13: None, 0x14: (0, 0, 0), 0x15: ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0)),
    0x16: ((0.0, 1.0, 1.0, 1.0, 0.0), (1.0, 1.0, 1.0, 1.0, 0.0)), 0x17: (0.0, 0.0),
    0x18: (0.0, 0.0, 0.0, 0.0), 0x19: None, 0x1A: (0, 0, 0), 0x1B: 0, 0x1C: b"",
    0x1E: None, 0x1F: (0, 0, 0), 0x20: ("", 400, 0, ""), 0x21: 0, 0x22: None,
}
