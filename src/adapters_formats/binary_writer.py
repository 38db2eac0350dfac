"""Write the instance tree as a binary model (.rbxm/.rbxl)."""

from __future__ import annotations

import hashlib
import struct
from collections import defaultdict
from typing import Any

from adapters_formats.binary_bytes import write_refs
from adapters_formats.binary_columns import CODECS, DEFAULTS, TYPE_IDS, Context
from adapters_formats.chunks import chunk_bytes, file_bytes
from licore.builds.errors import ModelFormatError
from licore.builds.tree import Instance, Model, Prop, Raw


def _string(value: str | bytes) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return struct.pack("<I", len(data)) + data


def _column_order(members: list[Instance]) -> list[Instance]:
    """Instances holding an unknown column keep the order that column was stored in."""
    if not any(isinstance(p.value, Raw) for p in members[0].properties.values()):
        return members  # a column is on every member or none, so the first one tells

    def key(item: tuple[int, Instance]) -> tuple[int, int]:
        position, inst = item
        for prop in inst.properties.values():
            if isinstance(prop.value, Raw) and prop.value.origin == "binary":
                return (prop.value.index, position)
        return (position, position)

    return [inst for _, inst in sorted(enumerate(members), key=key)]


def _raw_column(name: str, members: list[Instance]) -> tuple[int, bytes]:
    first = members[0].properties[name].value
    for i, inst in enumerate(members):
        prop = inst.properties.get(name)
        raw = prop.value if prop is not None else None
        if not (isinstance(raw, Raw) and raw.origin == "binary" and raw.index == i
                and raw.count == len(members) and raw.data == first.data
                and raw.type_id == first.type_id):
            raise ModelFormatError(
                f"property {name!r} of {inst.class_name} has a type this writer does not know, "
                "and the instances holding it changed, so it cannot be written back")
    return int(first.type_id, 16), first.data


def _type_id(name: str, props: list[Prop | None]) -> int:
    ids = set()
    for p in props:
        if p is None:
            continue
        tid = TYPE_IDS.get(p.type)
        if tid is None:
            raise ModelFormatError(f"property {name!r} of type {p.type} has no binary form")
        ids.add(tid)
    if len(ids) != 1:
        raise ModelFormatError(f"property {name!r} holds values of different types")
    return ids.pop()


def _value(prop: Prop | None, tid: int) -> Any:
    if prop is None:
        return DEFAULTS[tid]
    if tid == 0x01 and isinstance(prop.value, str):
        return prop.value.encode()
    return prop.value


def write_binary(model: Model) -> bytes:
    ctx = Context()
    classes, parents = _walk(model, ctx)
    inst_chunks: list[bytes] = []
    prop_chunks: list[bytes] = []
    for class_id, class_name in enumerate(sorted(classes)):
        members = _column_order(classes[class_name])
        inst_chunks.append(_inst_chunk(class_id, class_name, members, ctx))
        for name in sorted({n for m in members for n in m.properties}):
            tid, column = _column(name, members, ctx)
            head = struct.pack("<I", class_id) + _string(name) + bytes([tid])
            prop_chunks.append(chunk_bytes(b"PROP", head + column))
    # After the columns: writing them is what fills the shared strings.
    chunks = _head_chunks(model, ctx)
    prnt = b"\x00" + struct.pack("<I", len(parents))
    prnt += write_refs([ctx.refs[i.referent] for i, _ in parents])
    prnt += write_refs([-1 if p is None else ctx.refs[p.referent] for _, p in parents])
    chunks += inst_chunks + prop_chunks + [chunk_bytes(b"PRNT", prnt)]
    return file_bytes(len(classes), len(parents), chunks)


def _walk(model: Model, ctx: Context) -> tuple[dict[str, list[Instance]],
                                               list[tuple[Instance, Instance | None]]]:
    """Each instance's referent number in `ctx`, in depth-first order; the instances of
    each class; each instance with its parent."""
    classes: dict[str, list[Instance]] = defaultdict(list)
    parents: list[tuple[Instance, Instance | None]] = []
    stack: list[tuple[Instance, Instance | None]] = [(r, None) for r in reversed(model.roots)]
    while stack:
        inst, parent = stack.pop()
        if inst.referent in ctx.refs:
            raise ModelFormatError(f"instance {inst.referent!r} appears twice in the tree")
        ctx.refs[inst.referent] = len(ctx.refs)
        parents.append((inst, parent))
        classes[inst.class_name].append(inst)
        stack.extend((c, inst) for c in reversed(inst.children))
    return classes, parents


def _inst_chunk(class_id: int, class_name: str, members: list[Instance], ctx: Context) -> bytes:
    service = any(m.service for m in members)
    body = struct.pack("<I", class_id) + _string(class_name) + bytes([int(service)])
    body += struct.pack("<I", len(members))
    body += write_refs([ctx.refs[m.referent] for m in members])
    if service:
        body += b"\x01" * len(members)
    return chunk_bytes(b"INST", body)


def _column(name: str, members: list[Instance], ctx: Context) -> tuple[int, bytes]:
    props = [m.properties.get(name) for m in members]
    if any(p is not None and isinstance(p.value, Raw) for p in props):
        return _raw_column(name, members)
    tid = _type_id(name, props)
    return tid, CODECS[tid][2]([_value(p, tid) for p in props], ctx)


def _head_chunks(model: Model, ctx: Context) -> list[bytes]:
    chunks: list[bytes] = []
    if model.metadata:
        meta = struct.pack("<I", len(model.metadata)) + b"".join(
            _string(k) + _string(v) for k, v in model.metadata.items())
        chunks.append(chunk_bytes(b"META", meta))
    if ctx.shared:
        sstr = struct.pack("<II", 0, len(ctx.shared)) + b"".join(
            hashlib.md5(s, usedforsecurity=False).digest() + _string(s) for s in ctx.shared)
        chunks.append(chunk_bytes(b"SSTR", sstr))
    return chunks
