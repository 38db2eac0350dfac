"""Check a binary model against every limit `read_binary` enforces, without building the tree.

An upload needs to know that the file reads, and its scripts; keeping every property value
of every instance (what `read_binary` does) costs many times the file. Here each chunk is
inflated in turn and dropped when checked: a `PROP` column is checked in place (its size
for the fixed-width types, a scan for the variable ones) or, for the rarer types, decoded
and dropped at once. The instances are kept as referent numbers in flat arrays, and the
`Name` and `Source` columns are decoded only for the classes on a script's path, in a
second look at their chunks once the parent links are known.

Whatever `read_binary` refuses, `check_binary` refuses (a test holds the two together on
damaged and hostile files); the messages may differ in wording.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left
from itertools import accumulate
from typing import Any

from adapters_formats.binary_bytes import Cursor, deinterleave
from adapters_formats.binary_columns import BASIC_ROTATION_IDS, CODECS, Context
from adapters_formats.binary_reader import (
    MAX_DEPTH,
    check_tags,
    count_column,
    inst_head,
    prop_head,
    prop_values,
    read_meta,
    read_shared_strings,
)
from adapters_formats.chunks import StoredChunk, inflate, scan_framing
from licore.builds.errors import ModelFormatError
from licore.builds.tree import SCRIPT_CLASSES, CheckedModel, CheckedScript

# Bytes per value of the column types whose every bit pattern is a value: for these a
# column is valid exactly when it has n times this many bytes.
_WIDTH = {
    0x02: 1, 0x03: 4, 0x04: 4, 0x05: 8, 0x06: 8, 0x07: 16, 0x08: 24, 0x09: 1, 0x0A: 1,
    0x0B: 4, 0x0C: 12, 0x0D: 8, 0x0E: 12, 0x12: 4, 0x13: 4, 0x14: 6, 0x17: 8, 0x18: 16,
    0x1A: 3, 0x1B: 8, 0x1F: 16, 0x21: 8,
}
_STRING, _CFRAME, _OPTIONAL_CFRAME = 0x01, 0x10, 0x1E
_NAMES_INSTANCES = frozenset({0x13, 0x22})  # Ref and Content


def _scan_cframes(cur: Cursor, n: int) -> None:
    for _ in range(n):
        rid = cur.u8()
        if rid == 0:
            cur.take(36)
        elif rid not in BASIC_ROTATION_IDS:
            raise ModelFormatError(f"{cur.what}: unknown CFrame rotation id {rid:#x}")
    cur.take(12 * n)


def _check_column(data: bytes, sizes: dict[int, int], ctx: Context) -> tuple[int, str]:
    """Refuse a PROP chunk `read_binary` would refuse; its class id and property name."""
    cur = Cursor(data, "PROP")
    class_id, name, type_id, n = prop_head(cur, sizes)
    codec = CODECS.get(type_id)
    if codec is None:
        return class_id, name  # kept as raw bytes by the full reader: nothing to check
    cur.what = f"property {name!r} ({codec[0]})"
    width = _WIDTH.get(type_id)
    if width is not None:
        cur.take(width * n)
    elif type_id == _STRING:
        for _ in range(n):
            value = cur.string()
            if name == "Tags":
                check_tags(value)
    elif type_id == _CFRAME:
        _scan_cframes(cur, n)
    elif type_id == _OPTIONAL_CFRAME:
        if cur.u8() != 0x10:
            raise ModelFormatError("OptionalCFrame column does not hold CFrames")
        _scan_cframes(cur, n)
        if cur.u8() != 0x02:
            raise ModelFormatError("OptionalCFrame column has no presence flags")
        cur.take(n)
    else:
        # Sequences, physical properties, shared strings, fonts, content: rare and small
        # columns, checked by decoding them once and dropping the values.
        prop_values(data, sizes, ctx)
        return class_id, name
    cur.end()
    return class_id, name


def _ref_array(cur: Cursor, n: int) -> array[int]:
    """`read_refs` into a flat array: no Python int is kept per referent."""
    raw = array("I")
    raw.frombytes(deinterleave(cur.take(4 * n), n, 4))
    if sys.byteorder == "little":
        raw.byteswap()  # stored big-endian
    return array("q", accumulate((x >> 1) ^ -(x & 1) for x in raw))


class _Instances:
    """Every instance as an index 0..n-1 in INST order, with flat arrays beside it (a dict
    or a list of Python ints per instance would cost several times a compressed file)."""

    def __init__(self) -> None:
        self.refs = array("q")  # index -> referent
        self.klass = array("I")  # index -> class id (a u32 in the file)
        self.parent = array("i")  # index -> parent's index, -1 for none
        self.rank = array("i")  # index -> place among the PRNT entries, -1 for none
        self.sorted_refs = array("q")  # the referents in order, to find an index by one
        self.sorted_index = array("i")  # the index of each of those
        self.names: dict[int, str] = {}  # class id -> class name
        self.members: dict[int, tuple[int, int]] = {}  # class id -> (first index, count)
        self.sizes: dict[int, int] = {}  # class id -> count

    def add_class(self, data: bytes) -> None:
        cur = Cursor(data, "INST")
        class_id, class_name, service, n = inst_head(cur, self.sizes, len(self.refs))
        refs = _ref_array(cur, n)
        if service:
            cur.take(n)
        cur.end()
        if n and min(refs) < 0:
            raise ModelFormatError(f"referent {min(refs)} is invalid or used twice")
        first = len(self.refs)
        self.refs.extend(refs)
        self.klass.extend(array("I", [class_id]) * n)
        self.names[class_id] = class_name
        self.members[class_id] = (first, n)
        self.sizes[class_id] = n

    def index_referents(self) -> None:
        """Index the referents once every INST chunk is in; refuse one used twice. Studio
        numbers them 0..n-1, which needs no sorting."""
        count = len(self.refs)
        position = array("i", [-1]) * count
        dense = True
        for i, ref in enumerate(self.refs):
            if ref >= count:
                dense = False
                break
            if position[ref] != -1:
                raise ModelFormatError(f"referent {ref} is invalid or used twice")
            position[ref] = i
        if dense:
            self.sorted_refs = array("q", range(count))
            self.sorted_index = position
            return
        del position
        self.sorted_index = array("i", sorted(range(count), key=self.refs.__getitem__))
        self.sorted_refs = array("q", (self.refs[i] for i in self.sorted_index))
        for a, b in zip(self.sorted_refs, self.sorted_refs[1:], strict=False):
            if a == b:
                raise ModelFormatError(f"referent {a} is invalid or used twice")

    def index_of(self, ref: int) -> int | None:
        at = bisect_left(self.sorted_refs, ref)
        if at < len(self.sorted_refs) and self.sorted_refs[at] == ref:
            return self.sorted_index[at]
        return None

    def link(self, data: bytes) -> None:
        cur = Cursor(data, "PRNT")
        if cur.u8() != 0:
            raise ModelFormatError("unknown PRNT chunk version")
        n = cur.count(8)
        children, parents = _ref_array(cur, n), _ref_array(cur, n)
        cur.end()
        self.index_referents()
        count = len(self.refs)
        self.parent = array("i", [-1]) * count
        self.rank = array("i", [-1]) * count
        for place, (child, parent) in enumerate(zip(children, parents, strict=True)):
            i = self.index_of(child)
            if i is None or self.rank[i] != -1:
                raise ModelFormatError(f"PRNT names unknown or repeated child {child}")
            self.rank[i] = place
            if parent != -1:
                owner = self.index_of(parent)
                if owner is None:
                    raise ModelFormatError(f"PRNT names unknown parent {parent}")
                self.parent[i] = owner

    def check_shape(self) -> None:
        """Each instance's chain of parents ends at a root within MAX_DEPTH levels; a chain
        that runs into itself is a cycle. Each instance is walked once."""
        count = len(self.refs)
        depth = array("i", [0]) * count  # 0 not yet known, -1 on or under a cycle
        walked = array("i", [-1]) * count  # the start of the walk that last passed here
        too_deep = cycle = False
        for start in range(count):
            if depth[start]:
                continue
            chain = array("i")
            i = start
            while i != -1 and depth[i] == 0 and walked[i] != start:
                chain.append(i)
                walked[i] = start
                i = self.parent[i]
            if i != -1 and (depth[i] == -1 or walked[i] == start):
                cycle = True
                for j in chain:
                    depth[j] = -1
                continue
            level = 0 if i == -1 else depth[i]
            for j in reversed(chain):
                level += 1
                depth[j] = level
                too_deep = too_deep or level > MAX_DEPTH
        if too_deep:
            raise ModelFormatError(f"instances nest deeper than {MAX_DEPTH} levels")
        if cycle:
            raise ModelFormatError("the parent links form a cycle")

    def order_key(self, i: int) -> tuple[tuple[int, int], ...]:
        """Sorts instances as `Model.walk` visits them: roots with a PRNT entry in its
        order, then the rest in INST order; children in PRNT order."""
        key = []
        while True:
            parent = self.parent[i]
            if parent == -1:
                key.append((0, self.rank[i]) if self.rank[i] != -1 else (1, i))
                break
            key.append((0, self.rank[i]))
            i = parent
        return tuple(reversed(key))


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def check_binary(data: bytes) -> CheckedModel:
    """Refuse what `read_binary` refuses; the instance count and the scripts."""
    _, _, _, stored = scan_framing(data)
    insts = _Instances()
    ctx = Context()
    linked = False
    wanted: dict[tuple[int, str], StoredChunk] = {}  # (class id, Name/Source) -> chunk
    columns: dict[int, set[str]] = {}
    for chunk in stored:
        if chunk.name == b"META":
            read_meta(inflate(data, chunk))
        elif chunk.name == b"SSTR":
            ctx.shared = read_shared_strings(inflate(data, chunk))
        elif chunk.name == b"INST":
            if linked:
                raise ModelFormatError("INST chunk after PRNT")
            insts.add_class(inflate(data, chunk))
        elif chunk.name == b"PROP":
            class_id, name = _check_column(inflate(data, chunk), insts.sizes, ctx)
            count_column(columns, class_id, name)
            if name in ("Name", "Source"):
                wanted[class_id, name] = chunk  # the last one wins, as in the full reader
        elif chunk.name == b"PRNT":
            if linked:
                raise ModelFormatError("more than one PRNT chunk")
            insts.link(inflate(data, chunk))
            linked = True
        else:
            # The full reader inflates every chunk, those it then ignores too (SIGN,
            # unknown ones): one that does not inflate is refused here as there.
            inflate(data, chunk)
    if not linked:
        raise ModelFormatError("no PRNT chunk")
    insts.check_shape()
    return CheckedModel("binary", len(insts.refs), _scripts(data, insts, wanted, ctx))


def _values(payload: bytes, insts: _Instances, ctx: Context) -> list[Any]:
    """A column's values as the full reader gives them."""
    _, _, type_id, _ = prop_head(Cursor(payload, "PROP"), insts.sizes)
    if type_id in _NAMES_INSTANCES and not ctx.refs:
        # Such a value names an instance by its referent, as the full reader's do; only
        # a strange file stores a Name or a Source so.
        ctx.refs = {ref: str(ref) for ref in insts.refs}
    return prop_values(payload, insts.sizes, ctx)[3]


def _scripts(data: bytes, insts: _Instances, wanted: dict[tuple[int, str], StoredChunk],
             ctx: Context) -> tuple[CheckedScript, ...]:
    scripts = [i for cid, (first, n) in insts.members.items()
               if insts.names[cid] in SCRIPT_CLASSES and (cid, "Source") in wanted
               for i in range(first, first + n)]
    if not scripts:
        return ()
    on_paths: set[int] = set()
    for i in scripts:
        while i != -1:
            on_paths.add(insts.klass[i])
            i = insts.parent[i]
    names: dict[int, str] = {}
    for cid in on_paths:
        chunk = wanted.get((cid, "Name"))
        if chunk is not None:
            first = insts.members[cid][0]
            values = _values(inflate(data, chunk), insts, ctx)
            names.update((first + k, _text(v)) for k, v in enumerate(values))
    sources: dict[int, bytes] = {}
    for cid in {insts.klass[i] for i in scripts}:
        first = insts.members[cid][0]
        values = _values(inflate(data, wanted[cid, "Source"]), insts, ctx)
        sources.update((first + k, v if isinstance(v, bytes) else str(v).encode())
                       for k, v in enumerate(values))

    def name_of(i: int) -> str:
        return names.get(i, insts.names[insts.klass[i]])

    def path_of(i: int) -> str:
        chain = []
        while i != -1:
            chain.append(name_of(i))
            i = insts.parent[i]
        return "/".join(reversed(chain))

    scripts.sort(key=insts.order_key)
    return tuple(CheckedScript(path_of(i), name_of(i), sources[i]) for i in scripts)
