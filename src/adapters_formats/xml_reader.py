"""Read an XML model (.rbxmx/.rbxlx) into the instance tree, refusing malformed files.

The parser is defusedxml's: a document type declaration is refused outright, so entity
expansion and external entities cannot start. The tree is walked without recursion and its
depth is bounded, as the binary reader's is.
"""

from __future__ import annotations

import base64
import binascii
import struct
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

import defusedxml
import defusedxml.ElementTree as SafeET

from adapters_formats.binary_reader import MAX_DEPTH, MAX_INSTANCES
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


def _parse(data: bytes) -> ET.Element:
    try:
        root: ET.Element = SafeET.fromstring(data, forbid_dtd=True)
    except defusedxml.DefusedXmlException as err:
        raise ModelFormatError(f"XML declares a document type or entities ({type(err).__name__}),"
                               " which model files never do") from None
    except (ET.ParseError, ValueError) as err:
        raise ModelFormatError(f"not well-formed XML: {err}") from None
    if root.tag != "roblox":
        raise ModelFormatError("the XML root element is not <roblox>")
    return root


def read_xml(data: bytes) -> Model:
    root = _parse(data)
    shared: dict[str, bytes] = {}
    for table in root.iter("SharedStrings"):
        for entry in table:
            key = entry.attrib.get("md5")
            if entry.tag != "SharedString" or key is None:
                raise ModelFormatError("a shared string definition has no md5 key")
            try:
                shared[key] = _b64(_text(entry))
            except _Bad:
                raise ModelFormatError(f"shared string {key[:40]!r} is not base64") from None
    reader = _Reader(shared, new_era=any(True for _ in root.iter("ContentId")))
    model = Model("xml")
    by_referent: dict[str, Instance] = {}
    stack: list[tuple[ET.Element, list[Instance], int]] = [
        (el, model.roots, 1) for el in reversed(root) if el.tag == "Item"]
    for el in root:
        if el.tag == "Meta" and "name" in el.attrib:
            model.metadata[el.attrib["name"]] = _text(el)
    while stack:
        item, siblings, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ModelFormatError(f"instances nest deeper than {MAX_DEPTH} levels")
        if len(by_referent) >= MAX_INSTANCES:
            raise ModelFormatError(f"more than {MAX_INSTANCES} instances")
        class_name, referent = item.attrib.get("class"), item.attrib.get("referent")
        if not class_name:
            raise ModelFormatError("an <Item> has no class")
        if referent is None:
            referent = f"licore-{len(by_referent)}"  # nothing can point at it
        if referent in by_referent or referent == "null":
            raise ModelFormatError(f"referent {referent[:60]!r} is used twice or reserved")
        inst = Instance(class_name, referent)
        by_referent[referent] = inst
        siblings.append(inst)
        children = []
        for part in item:
            if part.tag == "Properties":
                _properties(reader, part, inst)
            elif part.tag == "Item":
                children.append(part)
        stack.extend((c, inst.children, depth + 1) for c in reversed(children))
    # A Ref to a referent no Item has is an unset value, as Studio reads it.
    for _, inst in model.walk():
        for name, prop in list(inst.properties.items()):
            if prop.type == "Ref" and prop.value is not None and prop.value not in by_referent:
                inst.properties[name] = Prop("Ref", None)
            elif (prop.type == "Content" and isinstance(prop.value, tuple)
                  and prop.value[0] == "object" and prop.value[1] not in by_referent):
                inst.properties[name] = Prop("Content", None)
    return model


def _properties(reader: _Reader, part: ET.Element, inst: Instance) -> None:
    for el in part:
        name = el.attrib.get("name")
        if name is None:
            raise ModelFormatError(f"a <{el.tag}> property of {inst.class_name} has no name")
        try:
            inst.properties[name] = reader.value(el, name)
        except _Bad as bad:
            raise ModelFormatError(
                f"property {name[:60]!r} of {inst.class_name} ({el.tag}) {bad}") from None
