"""Read an XML model (.rbxmx/.rbxlx) into the instance tree, refusing malformed files.

The parser is defusedxml's: a document type declaration is refused outright, so entity
expansion and external entities cannot start. The tree is walked without recursion and its
depth is bounded, as the binary reader's is.
"""

from __future__ import annotations

import base64
import binascii
import io
import struct
import xml.etree.ElementTree as ET
import xml.parsers.expat
from collections.abc import Callable
from typing import Any

import attrs
import defusedxml
import defusedxml.ElementTree as SafeET

from adapters_formats.binary_reader import (
    MAX_DEPTH,
    MAX_INSTANCES,
    MAX_PROPERTIES,
    check_tags,
)
from adapters_formats.model_limits import (
    MAX_NAME_BYTES,
    MAX_TOTAL_DECODED,
    MAX_VALUE_BYTES,
)
from licore.builds.errors import ModelFormatError
from licore.builds.tree import Instance, Model, Prop, Raw

RAW_MARK = "licore-raw-type"  # a binary-only property written into XML (see xml_writer)


class _Bad(Exception):
    """A property value that does not parse; turned into ModelFormatError with its name."""


def _text(el: ET.Element) -> str:
    return el.text or ""


def _child(el: ET.Element, name: str) -> ET.Element:
    found = el.find(name)
    if found is None:
        raise _Bad(f"missing <{name}>")
    return found


def _float(text: str) -> float:
    t = text.strip()
    try:
        return float(t)  # takes INF, +INF, -INF and NAN as Roblox writes them
    except ValueError:
        raise _Bad(f"{t[:40]!r} is not a number") from None


def _f32(text: str) -> float:
    value: float = struct.unpack("<f", struct.pack("<f", _float(text)))[0]
    return value


def _int(text: str, low: int, high: int) -> int:
    t = text.strip()
    try:
        value = int(t)
    except ValueError:
        raise _Bad(f"{t[:40]!r} is not a whole number") from None
    if not low <= value <= high:
        raise _Bad(f"{value} is out of range")
    return value


def _floats(el: ET.Element, names: tuple[str, ...]) -> tuple[float, ...]:
    return tuple(_f32(_text(_child(el, n))) for n in names)


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise _Bad("is not base64") from None


def _url(el: ET.Element) -> str:
    """The legacy content form: a <url> or an empty <null> (or the historic <binary>/<hash>,
    which mean empty)."""
    for child in el:
        if child.tag == "url":
            return _text(child)
        if child.tag in ("null", "binary", "hash"):
            return ""
    raise _Bad("has no <url> or <null>")


_XYZ = ("X", "Y", "Z")
_CFRAME = ("X", "Y", "Z", "R00", "R01", "R02", "R10", "R11", "R12", "R20", "R21", "R22")


def _color3(el: ET.Element) -> tuple[float, ...]:
    if el.find("R") is not None:
        return _floats(el, ("R", "G", "B"))
    packed = _int(_text(el), 0, 2**32 - 1)  # the old packed form: 0xAARRGGBB
    return tuple(_f32(str(((packed >> s) & 0xFF) / 255)) for s in (16, 8, 0))


def _sequence(el: ET.Element, size: int) -> tuple[tuple[float, ...], ...]:
    numbers = [_f32(t) for t in _text(el).split()]
    if len(numbers) % size:
        raise _Bad(f"holds {len(numbers)} numbers, not a multiple of {size}")
    return tuple(tuple(numbers[i:i + size]) for i in range(0, len(numbers), size))


def _physical(el: ET.Element) -> tuple[float, ...] | None:
    if _text(_child(el, "CustomPhysics")).strip().lower() != "true":
        return None
    names: tuple[str, ...] = ("Density", "Friction", "Elasticity", "FrictionWeight",
                              "ElasticityWeight")
    if el.find("AcousticAbsorption") is not None:
        names += ("AcousticAbsorption",)
    return _floats(el, names)


def _unique_id(el: ET.Element) -> tuple[int, int, int]:
    hexed = _text(el).strip()
    if len(hexed) != 32:
        raise _Bad("is not 32 hexadecimal digits")
    try:
        rand, time, index = int(hexed[:16], 16), int(hexed[16:24], 16), int(hexed[24:], 16)
    except ValueError:
        raise _Bad("is not 32 hexadecimal digits") from None
    return index, time, rand - (1 << 64) if rand >= 1 << 63 else rand


def _font(el: ET.Element) -> tuple[str, int, int, str]:
    style = _text(_child(el, "Style")).strip()
    if style not in ("Normal", "Italic"):
        raise _Bad(f"has an unknown font style {style[:20]!r}")
    cached = el.find("CachedFaceId")
    return (_url(_child(el, "Family")), _int(_text(_child(el, "Weight")), 0, 65535),
            0 if style == "Normal" else 1, "" if cached is None else _url(cached))


class _Reader:
    def __init__(self, shared: dict[str, bytes], new_era: bool) -> None:
        self.shared = shared
        self.new_era = new_era  # the file has <ContentId>: its <Content> is the new type

    def _shared(self, el: ET.Element) -> bytes:
        key = _text(el).strip()
        if key not in self.shared:
            raise _Bad("names a shared string the file does not define")
        return self.shared[key]

    def _content(self, el: ET.Element, name: str) -> Prop:
        kinds = [c.tag for c in el]
        if "uri" in kinds:
            return Prop("Content", ("uri", _text(_child(el, "uri"))))
        if "Ref" in kinds:
            target = _text(_child(el, "Ref")).strip()
            return Prop("Content", None if target == "null" else ("object", target))
        if "url" in kinds:
            return Prop("ContentId", _url(el))
        # An empty <Content>: the new type in files that also write <ContentId>, and, in
        # older files, the new type only for properties named like one (ImageContent, ...).
        if self.new_era or name.endswith("Content"):
            if "null" not in kinds:
                raise _Bad("has no <null>, <uri> or <Ref>")
            return Prop("Content", None)
        return Prop("ContentId", _url(el))

    def value(self, el: ET.Element, name: str) -> Prop:
        tag = el.tag
        simple = _SIMPLE.get(tag)
        if tag == "Font" and len(el) == 0:
            simple = None  # an empty <Font> Studio once wrote: kept as it is, below
        if tag == "BinaryString" and RAW_MARK in el.attrib:
            return Prop("Raw", Raw("binary", el.attrib[RAW_MARK], _b64(_text(el)),
                                   _int(el.attrib.get("licore-raw-index", "0"), 0, 2**31),
                                   _int(el.attrib.get("licore-raw-count", "1"), 1, 2**31)))
        if simple is not None:
            type_name, parse = simple
            return Prop(type_name, parse(el))
        if tag == "Content":
            return self._content(el, name)
        if tag == "SharedString":
            return Prop("SharedString", self._shared(el))
        if tag == "NetAssetRef":
            return Prop("NetAssetRef", self._shared(el))
        # A type this reader does not know: the element itself, written back unchanged.
        tail, el.tail = el.tail, None
        try:
            return Prop("Raw", Raw("xml", tag, ET.tostring(el, encoding="utf-8")))
        finally:
            el.tail = tail


_SIMPLE: dict[str, tuple[str, Callable[[ET.Element], Any]]] = {
    "string": ("String", lambda e: _text(e).encode()),
    "ProtectedString": ("ProtectedString", lambda e: _text(e).encode()),
    "BinaryString": ("BinaryString", lambda e: _b64(_text(e))),
    "ContentId": ("ContentId", _url),
    "bool": ("Bool", lambda e: _text(e).strip().lower() == "true"),
    "int": ("Int32", lambda e: _int(_text(e), -(2**31), 2**31 - 1)),
    "BrickColor": ("BrickColor", lambda e: _int(_text(e), 0, 2**32 - 1)),
    "int64": ("Int64", lambda e: _int(_text(e), -(2**63), 2**63 - 1)),
    "float": ("Float32", lambda e: _f32(_text(e))),
    "double": ("Float64", lambda e: _float(_text(e))),
    "token": ("Enum", lambda e: _int(_text(e), 0, 2**32 - 1)),
    "UDim": ("UDim", lambda e: (_f32(_text(_child(e, "S"))),
                                _int(_text(_child(e, "O")), -(2**31), 2**31 - 1))),
    "UDim2": ("UDim2", lambda e: (_f32(_text(_child(e, "XS"))),
                                  _int(_text(_child(e, "XO")), -(2**31), 2**31 - 1),
                                  _f32(_text(_child(e, "YS"))),
                                  _int(_text(_child(e, "YO")), -(2**31), 2**31 - 1))),
    "Ray": ("Ray", lambda e: _floats(_child(e, "origin"), _XYZ)
            + _floats(_child(e, "direction"), _XYZ)),
    "Faces": ("Faces", lambda e: _int(_text(_child(e, "faces")), 0, 63)),
    "Axes": ("Axes", lambda e: _int(_text(_child(e, "axes")), 0, 7)),
    "Color3": ("Color3", _color3),
    "Color3uint8": ("Color3uint8", lambda e: tuple(
        (_int(_text(e), 0, 2**32 - 1) >> s) & 0xFF for s in (16, 8, 0))),
    "Vector2": ("Vector2", lambda e: _floats(e, ("X", "Y"))),
    "Vector2int16": ("Vector2int16", lambda e: tuple(
        _int(_text(_child(e, n)), -32768, 32767) for n in ("X", "Y"))),
    "Vector3": ("Vector3", lambda e: _floats(e, _XYZ)),
    "Vector3int16": ("Vector3int16", lambda e: tuple(
        _int(_text(_child(e, n)), -32768, 32767) for n in _XYZ)),
    "CoordinateFrame": ("CFrame", lambda e: _floats(e, _CFRAME)),
    "OptionalCoordinateFrame": ("OptionalCFrame", lambda e: None if e.find("CFrame") is None
                                else _floats(_child(e, "CFrame"), _CFRAME)),
    "NumberSequence": ("NumberSequence", lambda e: _sequence(e, 3)),
    "ColorSequence": ("ColorSequence", lambda e: _sequence(e, 5)),
    "NumberRange": ("NumberRange", lambda e: _sequence(e, 2)[0] if _text(e).split() else
                    (0.0, 0.0)),
    "Rect2D": ("Rect", lambda e: _floats(_child(e, "min"), ("X", "Y"))
               + _floats(_child(e, "max"), ("X", "Y"))),
    "PhysicalProperties": ("PhysicalProperties", _physical),
    "UniqueId": ("UniqueId", _unique_id),
    "Font": ("Font", _font),
    "SecurityCapabilities": ("SecurityCapabilities",
                             lambda e: _int(_text(e), 0, 2**64 - 1)),
    "Ref": ("Ref", lambda e: None if _text(e).strip() in ("", "null") else _text(e).strip()),
}


# Elements of any kind a document may hold. Property values are elements too (a CFrame is
# thirteen), so a legal 50 MiB build holds about a million; this bounds what a document of
# tiny elements can make the reader do, and (with the depth bound) what it can allocate.
MAX_ELEMENTS = 5_000_000
# A value's parts: a CFrame has twelve; only an unknown type kept as raw XML could hold more.
MAX_VALUE_ELEMENTS = 10_000
# <roblox>, then an <Item> per level, then <Properties>, a property and its parts.
MAX_ELEMENT_DEPTH = MAX_DEPTH + 8


# One tag, comment or processing instruction. expat (2.5, as Python bundles it) reads an
# unfinished one again from its start each time more of the document is fed to it, so one of
# n bytes cost about n squared (a 40 MiB attribute value took 145 s, a million attributes on
# one <Item> 8 s); fed in pieces and refused once this much of one is pending, a document
# costs a bounded amount per byte. Studio's longest are a few hundred bytes.
MAX_MARKUP_BYTES = 64 * 1024
# Attributes on one element: Studio writes at most four (on <roblox>), licore's raw values four.
MAX_ATTRIBUTES = 16
_PIECE = 64 * 1024


@attrs.define
class _Scan:
    shared: dict[str, bytes]
    new_era: bool


@attrs.define
class Decoded:
    """What the document's attribute values and text decode to so far, held to the bounds
    of docs/instances.md as they stream by; `refusal` is raised past one."""

    refusal: type[Exception]
    total: int = 0
    run: int = 0  # the text since the last tag

    def attributes(self, attrib: dict[str, str]) -> None:
        if len(attrib) > MAX_ATTRIBUTES:
            raise self.refusal(f"an XML element has more than {MAX_ATTRIBUTES} attributes")
        for value in attrib.values():
            if len(value) > MAX_NAME_BYTES:
                raise self.refusal(f"an XML attribute value is longer than {MAX_NAME_BYTES:,} "
                               "characters")
            self.total += len(value)
        self.run = 0
        self._check_total()

    def text(self, piece: str) -> None:
        self.run += len(piece)
        self.total += len(piece)
        if self.run > MAX_VALUE_BYTES:
            raise self.refusal(f"an XML element's text is longer than {MAX_VALUE_BYTES:,} "
                           "characters")
        self._check_total()

    def _check_total(self) -> None:
        if self.total > MAX_TOTAL_DECODED:
            raise self.refusal(f"the XML text and attribute values come to more than "
                           f"{MAX_TOTAL_DECODED:,} characters")


def parse_bounded(parser: xml.parsers.expat.XMLParserType, data: bytes,
                  refusal: type[Exception]) -> None:
    """Feed `data` to `parser` in pieces; raise `refusal` as soon as more than
    `MAX_MARKUP_BYTES` of one tag, comment or processing instruction are pending."""
    for start in range(0, len(data), _PIECE):
        fed = min(start + _PIECE, len(data))
        parser.Parse(data[start:fed], False)
        # Outside a handler, expat's byte index is just past the last whole token it read;
        # text is reported as it comes, so only markup can be pending.
        if fed - parser.CurrentByteIndex > MAX_MARKUP_BYTES:
            raise refusal(f"an XML tag, comment or processing instruction is longer than "
                          f"{MAX_MARKUP_BYTES:,} bytes")
    parser.Parse(b"", True)


def guarded_parser(refusal: type[Exception]) -> xml.parsers.expat.XMLParserType:
    """An expat parser with its text buffered that raises `refusal` at a document type or
    entity declaration, which model files never have (and which entity expansion attacks
    need)."""
    parser = xml.parsers.expat.ParserCreate()
    parser.buffer_text = True

    def refuse_dtd(*_: object) -> int:
        raise refusal("XML declares a document type or entities, which model files never do")

    parser.StartDoctypeDeclHandler = refuse_dtd
    parser.EntityDeclHandler = refuse_dtd
    parser.UnparsedEntityDeclHandler = refuse_dtd
    parser.ExternalEntityRefHandler = refuse_dtd
    return parser


def _scan(data: bytes) -> _Scan:
    """A first pass by expat events, with no tree: refuse a DTD, a root that is not
    <roblox>, and too many or too deeply nested elements or instances before anything is
    built; collect the shared strings (Studio writes them after the instances that use them)
    and whether the file writes <ContentId>."""
    parser = guarded_parser(_Refused)
    depth = elements = items = 0
    item_depth: list[int] = []  # the element depth of each open <Item>
    properties: list[int] = []  # the property elements of each open <Item> so far
    in_properties: list[int] = []  # the depth of the open <Properties> of an <Item>
    shared: dict[str, bytes] = {}
    new_era = False
    reading: list[str] = []  # the md5 of the <SharedString> being read
    text: list[str] = []
    decoded = Decoded(_Refused)

    def start(tag: str, attrib: dict[str, str]) -> None:
        nonlocal depth, elements
        decoded.attributes(attrib)
        depth += 1
        elements += 1
        if depth == 1 and tag != "roblox":
            raise _Refused("the XML root element is not <roblox>")
        if elements > MAX_ELEMENTS:
            raise _Refused(f"more than {MAX_ELEMENTS} XML elements")
        count_property(tag)
        if tag == "Item" and (depth == 2 or (item_depth and item_depth[-1] == depth - 1)):
            open_item()
        elif depth > MAX_ELEMENT_DEPTH:
            raise _Refused(f"XML elements nest deeper than {MAX_ELEMENT_DEPTH} levels")
        else:
            note(tag, attrib)
        if depth == 2:
            reading_table[:] = [True] if tag == "SharedStrings" else []

    def count_property(tag: str) -> None:
        if in_properties and depth == in_properties[-1] + 1:
            properties[-1] += 1
            if properties[-1] > MAX_PROPERTIES:
                raise _Refused(f"an instance has more than {MAX_PROPERTIES} properties")
        elif tag == "Properties" and item_depth and item_depth[-1] == depth - 1:
            in_properties[:] = [depth]

    def open_item() -> None:
        nonlocal items
        items += 1
        if items > MAX_INSTANCES:
            raise _Refused(f"more than {MAX_INSTANCES} instances")
        if len(item_depth) >= MAX_DEPTH:
            raise _Refused(f"instances nest deeper than {MAX_DEPTH} levels")
        item_depth.append(depth)
        properties.append(0)

    def note(tag: str, attrib: dict[str, str]) -> None:
        """What an element that is not an instance says: the new era, a shared string."""
        nonlocal new_era
        if tag == "ContentId":
            new_era = True
        elif tag == "SharedString" and depth == 3 and reading_table:
            key = attrib.get("md5")
            if key is None:
                raise _Refused("a shared string definition has no md5 key")
            reading[:] = [key]
            text.clear()

    reading_table: list[bool] = []

    def chars(piece: str) -> None:
        decoded.text(piece)
        if reading:
            text.append(piece)

    def end(tag: str) -> None:
        nonlocal depth
        decoded.run = 0
        if item_depth and item_depth[-1] == depth:
            item_depth.pop()
            properties.pop()
        if in_properties and in_properties[-1] == depth:
            in_properties.clear()
        if reading and depth == 3:
            key = reading.pop()
            try:
                shared[key] = _b64("".join(text))
            except _Bad:
                raise _Refused(f"shared string {key[:40]!r} is not base64") from None
        elif depth == 3 and reading_table and tag != "SharedString":
            raise _Refused("a shared string definition has no md5 key")
        depth -= 1

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    try:
        parse_bounded(parser, data, _Refused)
    except _Refused as refused:
        raise ModelFormatError(str(refused)) from None
    except (xml.parsers.expat.ExpatError, ValueError) as err:
        raise ModelFormatError(f"not well-formed XML: {err}") from None
    return _Scan(shared, new_era)


class _Refused(Exception):
    """The first pass found a reason to refuse the document."""


def read_xml(data: bytes, skeleton: bool = False) -> Model:
    """The instance tree. With `skeleton`, every property is read and checked but only
    `Name` and `Source` are kept (an upload's check needs the scripts and their paths, and
    keeping every value costs many times the file).

    Two passes, neither holding the document as a tree: `_scan` bounds the document, then
    the instances are built by streaming the elements, each property element parsed and
    dropped as soon as it ends, each <Item> element dropped when it ends."""
    scan = _scan(data)
    stream = _Stream(_Reader(scan.shared, new_era=scan.new_era), skeleton)
    try:
        events = SafeET.iterparse(io.BytesIO(data), events=("start", "end"), forbid_dtd=True)
        for event, el in events:
            if event == "start":
                stream.start(el)
            else:
                stream.end(el)
    except defusedxml.DefusedXmlException as err:
        raise ModelFormatError(f"XML declares a document type or entities ({type(err).__name__}),"
                               " which model files never do") from None
    except (ET.ParseError, ValueError) as err:
        raise ModelFormatError(f"not well-formed XML: {err}") from None
    _unset_dangling(stream.model, stream.by_referent)
    return stream.model


class _Stream:
    """The second pass of `read_xml`: the instances, built as the elements stream by."""

    def __init__(self, reader: _Reader, skeleton: bool) -> None:
        self.reader = reader
        self.skeleton = skeleton
        self.model = Model("xml")
        self.by_referent: dict[str, Instance] = {}
        # The open elements; for an <Item>, its instance; for <Properties>, its instance too.
        self.open: list[tuple[ET.Element, str, Instance | None]] = []
        self.in_value = 0  # elements inside the property element being read

    def start(self, el: ET.Element) -> None:
        if self.open:
            _, parent_kind, owner = self.open[-1]
            kind, inst = self._kind(el, parent_kind, owner)
        else:
            kind, inst = "root", None
        self.open.append((el, kind, inst))

    def _kind(self, el: ET.Element, parent_kind: str,
              owner: Instance | None) -> tuple[str, Instance | None]:
        if el.tag == "Item" and parent_kind in ("root", "item"):
            inst = _new_item(el, self.by_referent)
            (owner.children if owner is not None else self.model.roots).append(inst)
            return "item", inst
        if el.tag == "Properties" and parent_kind == "item":
            return "props", owner
        if parent_kind == "props":
            self.in_value = 0
            return "prop", owner
        if parent_kind in ("prop", "value"):
            # A property's parts stay until the property ends and is parsed.
            self.in_value += 1
            if self.in_value > MAX_VALUE_ELEMENTS:
                raise ModelFormatError(f"a property value holds more than "
                                       f"{MAX_VALUE_ELEMENTS} XML elements")
            return "value", None
        if parent_kind == "root" and el.tag == "Meta":
            return "meta", None
        return "other", None

    def end(self, el: ET.Element) -> None:
        _, kind, inst = self.open.pop()
        if kind == "prop" and inst is not None:
            _property(self.reader, el, inst, self.skeleton)
        elif kind == "meta" and "name" in el.attrib:
            self.model.metadata[el.attrib["name"]] = _text(el)
        if kind != "value":
            el.clear()
            if self.open:
                # What has ended is the last child its parent has so far: drop it.
                del self.open[-1][0][-1]


def _unset_dangling(model: Model, by_referent: dict[str, Instance]) -> None:
    """A Ref to a referent no Item has is an unset value, as Studio reads it."""
    for _, inst in model.walk():
        for name, prop in list(inst.properties.items()):
            if prop.type == "Ref" and prop.value is not None and prop.value not in by_referent:
                inst.properties[name] = Prop("Ref", None)
            elif (prop.type == "Content" and isinstance(prop.value, tuple)
                  and prop.value[0] == "object" and prop.value[1] not in by_referent):
                inst.properties[name] = Prop("Content", None)


def _new_item(el: ET.Element, by_referent: dict[str, Instance]) -> Instance:
    class_name, referent = el.attrib.get("class"), el.attrib.get("referent")
    if not class_name:
        raise ModelFormatError("an <Item> has no class")
    if referent is None:
        referent = f"licore-{len(by_referent)}"  # nothing can point at it
    if referent in by_referent or referent == "null":
        raise ModelFormatError(f"referent {referent[:60]!r} is used twice or reserved")
    inst = Instance(class_name, referent)
    by_referent[referent] = inst
    return inst


_KEPT = frozenset({"Name", "Source"})


def _property(reader: _Reader, el: ET.Element, inst: Instance, skeleton: bool) -> None:
    name = el.attrib.get("name")
    if name is None:
        raise ModelFormatError(f"a <{el.tag}> property of {inst.class_name} has no name")
    try:
        prop = reader.value(el, name)
    except _Bad as bad:
        raise ModelFormatError(
            f"property {name[:60]!r} of {inst.class_name} ({el.tag}) {bad}") from None
    if name == "Tags" and isinstance(prop.value, bytes):
        check_tags(prop.value)
    if not skeleton or name in _KEPT:
        inst.properties[name] = prop
