"""Read a binary model (.rbxm/.rbxl) into the instance tree, refusing malformed files."""

from __future__ import annotations

import struct
from collections.abc import Container, Mapping
from typing import Any

from adapters_formats.binary_bytes import Cursor, read_refs
from adapters_formats.binary_columns import CODECS, Context
from adapters_formats.chunks import read_framing
from adapters_formats.string_kinds import BINARY_STRING_NAMES
from licore.builds.errors import ModelFormatError
from licore.builds.tree import Instance, Model, Prop, Raw

MAX_INSTANCES = 500_000
MAX_DEPTH = 1_000
# Per instance (docs/instances.md): the largest classes serialize about a hundred properties,
# and an instance's properties are held together, so a file naming a million on one item
# would be read (and kept) in full before anything else could refuse it.
MAX_PROPERTIES = 1_000
MAX_TAGS = 1_000  # CollectionService tags, the zero-separated names of `Tags`


def check_tags(value: bytes) -> None:
    if value.count(b"\0") >= MAX_TAGS:  # n names have n - 1 separators, or n with a last
        raise ModelFormatError(f"an instance has more than {MAX_TAGS} tags")


def count_column(columns: dict[int, set[str]], class_id: int, name: str) -> None:
    """Refuse a class with more than `MAX_PROPERTIES` columns: each is a property of every
    instance of the class."""
    names = columns.setdefault(class_id, set())
    names.add(name)
    if len(names) > MAX_PROPERTIES:
        raise ModelFormatError(f"an instance has more than {MAX_PROPERTIES} properties")


def read_meta(data: bytes) -> dict[str, str]:
    cur = Cursor(data, "META")
    out = {}
    for _ in range(cur.count(8)):
        key = cur.string().decode("utf-8", "replace")
        out[key] = cur.string().decode("utf-8", "replace")
    return out


def read_shared_strings(data: bytes) -> list[bytes]:
    cur = Cursor(data, "SSTR")
    if cur.u32() != 0:
        raise ModelFormatError("unknown SSTR chunk version")
    out = []
    for _ in range(cur.count(20)):
        cur.take(16)  # an MD5 of the string; Studio ignores it, and so do we
        out.append(cur.string())
    return out


def inst_head(cur: Cursor, defined: Container[int],
              instances: int) -> tuple[int, str, bool, int]:
    """An INST chunk's class id, class name, service flag and instance count, refused when
    the class id is among those `defined` before or the count takes the file past
    `MAX_INSTANCES` (`instances` are those already read)."""
    class_id = cur.u32()
    class_name = cur.name().decode("utf-8", "replace")
    service = cur.u8() == 1
    n = cur.count(4)
    if class_id in defined:
        raise ModelFormatError(f"class id {class_id} is defined twice")
    if instances + n > MAX_INSTANCES:
        raise ModelFormatError(f"more than {MAX_INSTANCES} instances")
    return class_id, class_name, service, n


def prop_head(cur: Cursor, sizes: Mapping[int, int]) -> tuple[int, str, int, int]:
    """A PROP chunk's class id, property name and type id, and how many values it holds
    (its class's instance count)."""
    class_id = cur.u32()
    name = cur.name().decode("utf-8", "replace")
    type_id = cur.u8()
    n = sizes.get(class_id)
    if n is None:
        raise ModelFormatError(f"property {name!r} names an unknown class id {class_id}")
    return class_id, name, type_id, n


def prop_values(data: bytes, sizes: Mapping[int, int],
                ctx: Context) -> tuple[int, str, str, list[Any]]:
    """A PROP chunk's class id, property name, type name and one value per instance."""
    cur = Cursor(data, "PROP")
    class_id, name, type_id, n = prop_head(cur, sizes)
    codec = CODECS.get(type_id)
    if codec is None:
        column = cur.rest()
        return class_id, name, "Raw", [Raw("binary", f"{type_id:02x}", column, i, n)
                                       for i in range(n)]
    type_name, read, _ = codec
    cur.what = f"property {name!r} ({type_name})"
    try:
        values = read(cur, n, ctx)
    except (struct.error, ValueError, OverflowError) as err:
        raise ModelFormatError(f"{cur.what}: {err}") from None
    cur.end()
    if type_name == "String" and name in BINARY_STRING_NAMES:
        type_name = "BinaryString"  # bytes, as the XML form and the /update nodes say
    return class_id, name, type_name, values


class _Reader:
    def __init__(self) -> None:
        self.ctx = Context()
        self.by_ref: dict[int, Instance] = {}
        self.classes: dict[int, list[Instance]] = {}
        self.sizes: dict[int, int] = {}  # class id -> how many instances it has
        self.order: list[int] = []  # referents in INST order, for roots without a PRNT entry
        self.columns: dict[int, set[str]] = {}  # class id -> its properties so far

    def inst(self, data: bytes) -> None:
        cur = Cursor(data, "INST")
        class_id, class_name, service, n = inst_head(cur, self.sizes, len(self.by_ref))
        members = []
        for ref in read_refs(cur, n):
            if ref in self.by_ref or ref < 0:
                raise ModelFormatError(f"referent {ref} is invalid or used twice")
            inst = Instance(class_name, str(ref), service=service)
            self.by_ref[ref] = inst
            self.ctx.refs[ref] = inst.referent
            self.order.append(ref)
            members.append(inst)
        if service:
            cur.take(n)
        cur.end()
        self.classes[class_id] = members
        self.sizes[class_id] = len(members)

    def prop(self, data: bytes) -> None:
        class_id, name, type_name, values = prop_values(data, self.sizes, self.ctx)
        count_column(self.columns, class_id, name)
        if name == "Tags":
            for value in values:
                if isinstance(value, bytes):
                    check_tags(value)
        for inst, value in zip(self.classes[class_id], values, strict=True):
            inst.properties[name] = Prop(type_name, value)

    def prnt(self, data: bytes) -> list[Instance]:
        cur = Cursor(data, "PRNT")
        if cur.u8() != 0:
            raise ModelFormatError("unknown PRNT chunk version")
        n = cur.count(8)
        children, parents = read_refs(cur, n), read_refs(cur, n)
        cur.end()
        placed: set[int] = set()
        roots: list[Instance] = []
        for child, parent in zip(children, parents, strict=True):
            inst = self.by_ref.get(child)
            if inst is None or child in placed:
                raise ModelFormatError(f"PRNT names unknown or repeated child {child}")
            placed.add(child)
            if parent == -1:
                roots.append(inst)
                continue
            owner = self.by_ref.get(parent)
            if owner is None:
                raise ModelFormatError(f"PRNT names unknown parent {parent}")
            owner.children.append(inst)
        roots.extend(self.by_ref[r] for r in self.order if r not in placed)
        self._check_shape(roots)
        return roots

    def _check_shape(self, roots: list[Instance]) -> None:
        """Every instance reachable once from a root (no cycles), nesting depth bounded."""
        seen = 0
        stack = [(r, 1) for r in roots]
        while stack:
            inst, depth = stack.pop()
            seen += 1
            if depth > MAX_DEPTH:
                raise ModelFormatError(f"instances nest deeper than {MAX_DEPTH} levels")
            stack.extend((c, depth + 1) for c in inst.children)
        if seen != len(self.by_ref):
            raise ModelFormatError("the parent links form a cycle")


def read_binary(data: bytes) -> Model:
    framing = read_framing(data)
    reader = _Reader()
    model = Model("binary")
    roots: list[Instance] | None = None
    for chunk in framing.chunks:
        name = chunk.name
        if name == b"META":
            model.metadata = read_meta(chunk.data)
        elif name == b"SSTR":
            reader.ctx.shared = read_shared_strings(chunk.data)
        elif name == b"INST":
            if roots is not None:
                raise ModelFormatError("INST chunk after PRNT")
            reader.inst(chunk.data)
        elif name == b"PROP":
            reader.prop(chunk.data)
        elif name == b"PRNT":
            if roots is not None:
                raise ModelFormatError("more than one PRNT chunk")
            roots = reader.prnt(chunk.data)
        # Other chunks (SIGN and any future ones) describe the file as it was saved and
        # mean nothing once a copy is rewritten.
    if roots is None:
        raise ModelFormatError("no PRNT chunk")
    model.roots = roots
    return model
