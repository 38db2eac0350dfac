"""A version's `/update` nodes with every script's `Source` cut out: made once per version
and form, then a buyer's nodes are that text with the buyer's sources written into the gaps
(docs/performance.md, "A publish").

Only script sources differ between buyers' copies (the key injected, the seller's rules
applied); every other byte of the nodes is the same for all of them, and making it (a full
read of the build, the node tree, its JSON) is nearly all of a cold `/update`. The template
is built from the build itself: each source is replaced, through the codec's source-only
rewrite, by a marker naming its place in `read_sources` order, the marked file is read and
turned into nodes as a buyer's copy would be, and the markers are found in the JSON text. So
a gap is tied to the script the codec's own source reader gives at that index, whatever the
order of the tree, and the JSON around it is what `to_nodes` writes for a copy.

Stored form: `MAGIC`, a 4-byte big-endian header length, the header (JSON: the node code's
revision, the form, each gap's script path and `Source` type in `read_sources` order, and
the gaps' offsets in the body in text order), then the body (the nodes' JSON without the
gaps).
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Sequence
from typing import Any

import attrs

from licore.builds.nodes import NODES_REVISION, nodes_json, value_of
from licore.builds.tree import Prop, ScriptSource
from licore.ports import ModelCodec

MAGIC = b"licore-nodes-template\n"
# Characters XML 1.0 cannot carry: the XML codec stores a source holding one (or one that
# is not UTF-8) as a BinaryString, so its type, and its nodes, follow the text.
_NOT_XML_TEXT = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]|\xef\xbf[\xbe\xbf]")
_LENGTH = struct.Struct(">I")
_INDEX_DIGITS = 9


class TemplateUnusable(ValueError):
    """The build's nodes could not be cut into a template (a marker not found exactly once);
    buyers' nodes are then made from their whole copies, as before templates."""


@attrs.frozen
class Slot:
    """One script: its path of names and its `Source` property's type."""

    path: str
    type: str


@attrs.frozen(eq=False)
class NodesTemplate:
    compact: bool
    slots: tuple[Slot, ...]  # in `read_sources` order
    gaps: tuple[tuple[int, int], ...]  # (offset in body, slot index), in text order
    body: bytes | memoryview = attrs.field(repr=False)

    def splice(self, scripts: Sequence[ScriptSource], *, from_build: bool) -> bytes | None:
        """The nodes' JSON text with each script's source as the value of its slot's
        `Source`: byte for byte what `nodes_json` gives for the copy holding them.

        None when the scripts do not line up with the slots by path, or one is not plain
        text (its type in the copy may then differ from the slot's; such a copy is made
        whole). `from_build`: the scripts are the build's own `read_sources` list,
        rewritten (so in slot order by construction); else they were read from a stored
        copy, where two scripts of one path cannot be told apart, so a template with a
        repeated path takes none."""
        paths = [s.path for s in self.slots]
        if [s.path for s in scripts] != paths or (
                not from_build and len(set(paths)) != len(paths)) or not all(
                    _plain_text(s.source) for s in scripts):
            return None
        pieces: list[bytes | memoryview] = []
        at = 0
        for offset, index in self.gaps:
            pieces.append(self.body[at:offset])
            pieces.append(self._fragment(index, scripts[index].source))
            at = offset
        pieces.append(self.body[at:])
        return b"".join(pieces)

    def _fragment(self, index: int, source: bytes) -> bytes:
        value = value_of(Prop(self.slots[index].type, source), self.compact)
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()

    def to_bytes(self) -> bytes:
        header = json.dumps({
            "revision": NODES_REVISION, "compact": self.compact,
            "slots": [[s.path, s.type] for s in self.slots],
            "gaps": [list(g) for g in self.gaps]}, separators=(",", ":")).encode()
        return b"".join([MAGIC, _LENGTH.pack(len(header)), header, self.body])

    @classmethod
    def from_bytes(cls, data: bytes) -> NodesTemplate | None:
        """The stored template, or None when it was made by another revision of the node
        code (or is not a template): it is then made again."""
        if not data.startswith(MAGIC):
            return None
        start = len(MAGIC) + _LENGTH.size
        (length,) = _LENGTH.unpack_from(data, len(MAGIC))
        header: dict[str, Any] = json.loads(data[start:start + length])
        if header.get("revision") != NODES_REVISION:
            return None
        return cls(bool(header["compact"]), tuple(Slot(p, t) for p, t in header["slots"]),
                   tuple((int(o), int(i)) for o, i in header["gaps"]),
                   memoryview(data)[start + length:])


def _plain_text(source: bytes) -> bool:
    try:
        source.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return _NOT_XML_TEXT.search(source) is None


def marker_prefix(salt: str) -> str:
    """The text a marker starts with: `salt` is the build's SHA-256, which the build itself
    cannot contain beside that prefix, so a marker is never confused with the seller's
    text."""
    return f"licore-template-slot-{salt}-"


def make_template(models: ModelCodec, data: bytes, compact: bool, salt: str) -> NodesTemplate:
    """The template of the build `data` in one form (see the module's docstring)."""
    build = models.read_sources(data)
    prefix = marker_prefix(salt)
    for i, script in enumerate(build.scripts):
        script.source = f"{prefix}{i:0{_INDEX_DIGITS}d}".encode()
    marked = models.read(models.write_sources(build))
    types: dict[int, str] = {}
    for _, instance in marked.scripts():
        source = instance.properties["Source"]
        text = source.value if isinstance(source.value, bytes) else str(source.value).encode()
        if text.startswith(prefix.encode()):
            types[int(text[len(prefix):])] = source.type
    text = nodes_json(marked, compact)
    # Each marker is a JSON string of its own: the quotes go with it.
    pattern = re.compile(b'"' + re.escape(prefix.encode()) + rb'(\d{%d})"' % _INDEX_DIGITS)
    body: list[bytes] = []
    gaps: list[tuple[int, int]] = []
    at = length = 0
    for found in pattern.finditer(text):
        body.append(text[at:found.start()])
        length += found.start() - at
        gaps.append((length, int(found.group(1))))
        at = found.end()
    body.append(text[at:])
    count = len(build.scripts)
    if sorted(i for _, i in gaps) != list(range(count)) or len(types) != count or (
            text.count(prefix.encode()) != count):
        raise TemplateUnusable("a script's place in the nodes was not found exactly once")
    slots = tuple(Slot(s.path, types[i]) for i, s in enumerate(build.scripts))
    return NodesTemplate(compact, slots, tuple(gaps), b"".join(body))
