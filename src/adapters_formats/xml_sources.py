"""An XML model's script sources, found by streaming the document and written back by
splicing: only the `Source` elements of scripts whose source changed are rewritten, and every
other byte of the document is kept as it was.

The parser is expat, driven by events, with no tree built. As in `read_xml`, a document type
declaration is refused before anything else is read (so entity expansion and external
entities cannot start), nesting depth and instance count are bounded, and the root must be
`<roblox>`.
"""

from __future__ import annotations

import base64
import binascii
import re
import xml.parsers.expat

import attrs

from adapters_formats.binary_reader import MAX_DEPTH, MAX_INSTANCES
from adapters_formats.binary_sources import Unusual
from adapters_formats.xml_reader import Decoded, guarded_parser, parse_bounded
from adapters_formats.xml_writer import property_element
from licore.builds.errors import ModelFormatError
from licore.builds.tree import SCRIPT_CLASSES, Prop, ScriptSource, Sources

_TEXT_TAGS = {"string": "String", "ProtectedString": "ProtectedString"}
_DECLARED = re.compile(rb"^(?:\xef\xbb\xbf)?\s*<\?xml[^>]*encoding\s*=\s*[\"']([^\"']*)")


@attrs.define(eq=False)
class _Item:
    class_name: str
    parent: _Item | None
    name: str | None = None

    def path(self) -> str:
        chain = []
        item: _Item | None = self
        while item is not None:
            chain.append(item.class_name if item.name is None else item.name)
            item = item.parent
        return "/".join(reversed(chain))


@attrs.define(eq=False)
class _Found:
    """A script's `Source` element: where it sits in the document, and what it held."""

    item: _Item
    start: int
    end: int
    type: str
    original: bytes
    script: ScriptSource | None = None


@attrs.define(eq=False)
class XmlSources:
    data: bytes
    found: list[_Found]


class _Bad(Exception):
    pass


def _tag_end(data: bytes, pos: int) -> int:
    """Where the tag starting at `pos` ends (past its `>`), quotes in attributes skipped."""
    quote = 0
    for i in range(pos, len(data)):
        c = data[i]
        if quote:
            if c == quote:
                quote = 0
        elif c in (0x22, 0x27):
            quote = c
        elif c == 0x3E:
            return i + 1
    raise ModelFormatError("a tag is not closed")


def read_xml_sources(data: bytes) -> Sources:
    declared = _DECLARED.match(data[:400])
    if declared and declared.group(1).lower().replace(b"-", b"") != b"utf8":
        raise Unusual("the document is not UTF-8")
    parser = guarded_parser(_Bad)
    kinds: list[str] = []  # per open element: "root", "item", "props", "prop" or ""
    items: list[_Item] = []  # open <Item>s
    found: list[_Found] = []
    count = 0
    # The property element being read: its name, its element name, start, text pieces.
    reading: list[object] = []
    text: list[str] = []
    decoded = Decoded(_Bad)

    def start(tag: str, attrs_: dict[str, str]) -> None:
        nonlocal count
        decoded.attributes(attrs_)
        parent = kinds[-1] if kinds else None
        kind = ""
        if parent is None:
            if tag != "roblox":
                raise _Bad("the XML root element is not <roblox>")
            kind = "root"
        elif tag == "Item" and parent in ("root", "item"):
            kind = "item"
            count += 1
            if count > MAX_INSTANCES:
                raise _Bad(f"more than {MAX_INSTANCES} instances")
            if len(items) >= MAX_DEPTH:
                raise _Bad(f"instances nest deeper than {MAX_DEPTH} levels")
            class_name = attrs_.get("class")
            if not class_name:
                raise _Bad("an <Item> has no class")
            items.append(_Item(class_name, items[-1] if items else None))
        elif tag == "Properties" and parent == "item":
            kind = "props"
        elif parent == "props":
            name = attrs_.get("name")
            item = items[-1]
            if name == "Name" or (name == "Source" and item.class_name in SCRIPT_CLASSES):
                kind = "prop"
                reading[:] = [name, tag, parser.CurrentByteIndex]
                text.clear()
        kinds.append(kind)

    def chars(piece: str) -> None:
        decoded.text(piece)
        if reading:
            text.append(piece)

    def end(tag: str) -> None:
        decoded.run = 0
        kind = kinds.pop()
        if kind == "item":
            items.pop()
        if kind != "prop":
            return
        name, element, begin = reading
        reading.clear()
        assert isinstance(begin, int) and isinstance(element, str)
        value = "".join(text)
        item = items[-1]
        if name == "Name":
            item.name = _name(element, value)
            return
        type_name = _TEXT_TAGS.get(element)
        if type_name is None or (found and found[-1].item is item):
            raise Unusual("a Source that is not text, or two of them")
        here = parser.CurrentByteIndex
        stop = data.index(b">", here) + 1 if data.startswith(b"</", here) else _tag_end(
            data, here)
        found.append(_Found(item, begin, stop, type_name, value.encode()))

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    try:
        parse_bounded(parser, data, _Bad)
    except _Bad as bad:
        raise ModelFormatError(str(bad)) from None
    except xml.parsers.expat.ExpatError as err:
        raise ModelFormatError(f"not well-formed XML: {err}") from None
    scripts = []
    for f in found:
        f.script = ScriptSource(f.item.path(), f.original)
        scripts.append(f.script)
    return Sources("xml", scripts, XmlSources(data, found))


def _name(element: str, value: str) -> str | None:
    if element in _TEXT_TAGS:
        return value
    if element == "BinaryString":
        try:
            return base64.b64decode("".join(value.split()), validate=True).decode(
                "utf-8", "replace")
        except (binascii.Error, ValueError):
            raise _Bad("a Name is not base64") from None
    raise Unusual(f"a Name held as <{element}>")


def write_xml_sources(build: Sources) -> bytes:
    handle = build.handle
    assert isinstance(handle, XmlSources)
    data, out, pos = handle.data, [], 0
    for f in handle.found:
        assert f.script is not None
        if f.script.source == f.original:
            continue
        out.append(data[pos:f.start])
        out.append(property_element("Source", Prop(f.type, f.script.source)).encode("utf-8"))
        pos = f.end
    out.append(data[pos:])
    return b"".join(out)
