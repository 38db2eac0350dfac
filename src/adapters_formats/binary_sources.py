"""A binary model's script sources, read and written back without decoding anything else.

Only these chunks are inflated and decoded: `INST` (which instance is which class), `PRNT`
(the parent links, for each script's path), the `Name` columns of the classes on a script's
path, and the scripts' `Source` columns. A `PROP` chunk is inflated to learn whose column it
is and then dropped. Writing re-encodes only the `Source` columns whose values changed; every
other chunk goes back as the bytes it was stored as. Chunks the full reader ignores (`SIGN`,
unknown ones) are dropped, as a full rewrite drops them. The framing limits (decompressed
size, compression ratio) are checked from the chunk headers as in `read_binary`; the limits
on the chunks that pass through undecoded were checked when the build was uploaded.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import attrs

from adapters_formats.binary_bytes import Cursor, read_refs
from adapters_formats.binary_reader import MAX_DEPTH, inst_head
from adapters_formats.chunks import StoredChunk, chunk_bytes, inflate, scan_framing
from licore.builds.errors import ModelFormatError
from licore.builds.tree import SCRIPT_CLASSES, ScriptSource, Sources

_KEPT = frozenset({b"META", b"SSTR", b"INST", b"PROP", b"PRNT", b"END\x00"})
_STRING = 0x01


class Unusual(Exception):
    """A valid file this fast path does not handle (a Source column that is not a string,
    say); the codec falls back to the full reader."""


@attrs.define(eq=False)
class _Column:
    """A `Source` column: its chunk's position in the output, its header, its values."""

    slot: int
    head: bytes
    scripts: list[ScriptSource]
    original: list[bytes]


@attrs.define(eq=False)
class BinarySources:
    parts: list[bytes]  # the file as stored pieces: header, then each kept chunk
    columns: list[_Column]


def _strings(cur: Cursor, n: int) -> list[bytes]:
    return [cur.string() for _ in range(n)]


def _prop_head(cur: Cursor) -> tuple[int, bytes, int]:
    class_id = cur.u32()
    name = cur.name()
    return class_id, name, cur.u8()


@attrs.define(eq=False)
class _Read:
    """What the kept chunks said, as they are read in file order."""

    data: bytes
    parts: list[bytes]  # the file as stored pieces: header, then each kept chunk
    class_of: dict[int, int] = attrs.Factory(dict)  # referent -> class id
    members: dict[int, list[int]] = attrs.Factory(dict)  # class id -> referents, in order
    class_names: dict[int, str] = attrs.Factory(dict)
    parent: dict[int, int] | None = None
    wanted: dict[tuple[int, bytes], int] = attrs.Factory(dict)  # (class, property) -> slot
    payloads: dict[int, bytes] = attrs.Factory(dict)  # slot -> inflated PROP, those wanted

    def inst(self, chunk: StoredChunk) -> None:
        if self.parent is not None:
            raise ModelFormatError("INST chunk after PRNT")
        cur = Cursor(inflate(self.data, chunk), "INST")
        class_id, class_name, service, n = inst_head(cur, self.members, len(self.class_of))
        refs = read_refs(cur, n)
        for ref in refs:
            if ref in self.class_of or ref < 0:
                raise ModelFormatError(f"referent {ref} is invalid or used twice")
            self.class_of[ref] = class_id
        if service:
            cur.take(n)
        cur.end()
        self.members[class_id] = refs
        self.class_names[class_id] = class_name

    def prop(self, chunk: StoredChunk) -> None:
        payload = inflate(self.data, chunk)
        class_id, name, _ = _prop_head(Cursor(payload, "PROP"))
        if class_id not in self.members:
            raise ModelFormatError(f"property {name!r} names an unknown class id {class_id}")
        if name in (b"Name", b"Source"):
            if (class_id, name) in self.wanted:
                raise Unusual("a property stored twice for one class")
            self.wanted[class_id, name] = len(self.parts) - 1
            self.payloads[len(self.parts) - 1] = payload

    def prnt(self, chunk: StoredChunk) -> None:
        if self.parent is not None:
            raise ModelFormatError("more than one PRNT chunk")
        self.parent = _parents(inflate(self.data, chunk), self.class_of)


def read_binary_sources(data: bytes) -> Sources:
    _, _, _, stored = scan_framing(data)
    read = _Read(data, [data[:stored[0].start]])
    readers = {b"INST": read.inst, b"PROP": read.prop, b"PRNT": read.prnt}
    for chunk in stored:
        if chunk.name not in _KEPT:
            continue
        read.parts.append(data[chunk.start:chunk.end])
        reader = readers.get(chunk.name)
        if reader is not None:
            reader(chunk)
    if read.parent is None:
        raise ModelFormatError("no PRNT chunk")
    scripted = {cid for cid, name in read.class_names.items() if name in SCRIPT_CLASSES}
    sources = [(slot, cid) for (cid, name), slot in read.wanted.items()
               if name == b"Source" and cid in scripted]
    path_of = _paths(read, read.parent, sources)
    columns = []
    scripts: list[ScriptSource] = []
    for slot, cid in sources:
        values = _column(read.payloads[slot], len(read.members[cid]))
        column = _Column(slot, _head(read.payloads[slot]), [
            ScriptSource(path_of(ref), value) for ref, value in zip(read.members[cid], values,
                                                                     strict=True)], values)
        columns.append(column)
        scripts += column.scripts
    return Sources("binary", scripts, BinarySources(read.parts, columns))


def _paths(read: _Read, parent: dict[int, int],
           sources: list[tuple[int, int]]) -> Callable[[int], str]:
    """A script's path from its referent, reading only the `Name` columns it needs: those
    of the scripts' own classes and their ancestors'."""
    on_paths: set[int] = set()
    for _, cid in sources:
        for ref in read.members[cid]:
            _ancestry(ref, parent, read.class_of, on_paths)
    names: dict[int, bytes] = {}
    for (cid, name), slot in read.wanted.items():
        if name == b"Name" and cid in on_paths:
            for ref, value in zip(read.members[cid],
                                  _column(read.payloads[slot], len(read.members[cid])),
                                  strict=True):
                names[ref] = value

    def path_of(ref: int) -> str:
        chain = []
        while ref != -1:
            value = names.get(ref)
            chain.append(read.class_names[read.class_of[ref]] if value is None
                         else value.decode("utf-8", "replace"))
            ref = parent.get(ref, -1)
        return "/".join(reversed(chain))

    return path_of


def _parents(data: bytes, class_of: dict[int, int]) -> dict[int, int]:
    cur = Cursor(data, "PRNT")
    if cur.u8() != 0:
        raise ModelFormatError("unknown PRNT chunk version")
    n = cur.count(8)
    children, parents = read_refs(cur, n), read_refs(cur, n)
    cur.end()
    out = dict(zip(children, parents, strict=True))
    # Set operations rather than a loop: this is the one column as long as the file.
    if len(out) != n or not out.keys() <= class_of.keys():
        raise ModelFormatError("PRNT names an unknown or repeated child")
    if not (set(parents) - {-1}) <= class_of.keys():
        raise ModelFormatError("PRNT names an unknown parent")
    return out


def _ancestry(ref: int, parent: dict[int, int], class_of: dict[int, int],
              into: set[int]) -> None:
    depth = 0
    while ref != -1:
        depth += 1
        if depth > MAX_DEPTH:
            # Deeper than the limit, or a cycle in the parent links: refused either way.
            raise ModelFormatError(f"instances nest deeper than {MAX_DEPTH} levels")
        into.add(class_of[ref])
        ref = parent.get(ref, -1)


def _head(payload: bytes) -> bytes:
    cur = Cursor(payload, "PROP")
    _prop_head(cur)
    return payload[:cur.pos]


def _column(payload: bytes, n: int) -> list[bytes]:
    cur = Cursor(payload, "PROP")
    _, name, type_id = _prop_head(cur)
    if type_id != _STRING:
        raise Unusual(f"{name!r} is not a string column")
    cur.what = f"property {name.decode('utf-8', 'replace')!r} (String)"
    values = _strings(cur, n)
    cur.end()
    return values


def write_binary_sources(build: Sources) -> bytes:
    handle = build.handle
    assert isinstance(handle, BinarySources)
    parts = list(handle.parts)
    for column in handle.columns:
        values = [s.source for s in column.scripts]
        if values == column.original:
            continue
        body = b"".join(struct.pack("<I", len(v)) + v for v in values)
        parts[column.slot] = chunk_bytes(b"PROP", column.head + body)
    return b"".join(parts)
