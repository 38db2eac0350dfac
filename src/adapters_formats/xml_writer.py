"""Write the instance tree as an XML model (.rbxmx/.rbxlx) that Studio and `read_xml` read.

Text is escaped by hand rather than through ElementTree so a script's source can be written
as CDATA, exactly: a `]]>` or a carriage return inside it ends one CDATA section, is written
escaped, and the next section goes on (an XML parser turns a raw CR into LF).
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
from collections.abc import Callable
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from adapters_formats.string_kinds import BINARY_STRING_NAMES
from adapters_formats.xml_reader import RAW_MARK
from licore.builds.errors import ModelFormatError
from licore.builds.tree import Instance, Model, Prop, Raw

HEADER = ('<roblox xmlns:xmime="http://www.w3.org/2005/05/xmlmime" '
          'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
          'xsi:noNamespaceSchemaLocation="http://www.roblox.com/roblox.xsd" version="4">\n')
# Characters XML 1.0 cannot carry at all, not even escaped: such a string goes as base64.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _esc(text: str) -> str:
    if _NOT_XML.search(text):
        raise ModelFormatError(f"{text[:40]!r} holds characters XML cannot carry")
    return escape(text).replace("\r", "&#13;")


def _attr(text: str) -> str:
    if _NOT_XML.search(text):
        raise ModelFormatError(f"{text[:40]!r} holds characters XML cannot carry")
    return quoteattr(text)


def _cdata(text: str) -> str:
    if not text:
        return ""
    parts = re.split(r"(\]\]>|\r)", text)
    out = []
    for part in parts:
        if part == "]]>":
            out.append("]]&gt;")
        elif part == "\r":
            out.append("&#13;")
        elif part:
            out.append(f"<![CDATA[{part}]]>")
    return "".join(out)


def _f32(x: float) -> str:
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "INF" if x > 0 else "-INF"
    target = struct.pack("<f", x)
    for digits in range(6, 10):  # the shortest text that reads back as the same float32
        text = f"{x:.{digits}g}"
        if struct.pack("<f", float(text)) == target:
            return text
    return repr(x)


def _f64(x: float) -> str:
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "INF" if x > 0 else "-INF"
    return repr(float(x))


def _tags(names: tuple[str, ...], values: tuple[Any, ...], fmt: Callable[[Any], str]) -> str:
    return "".join(f"<{n}>{fmt(v)}</{n}>" for n, v in zip(names, values, strict=True))


_XYZ = ("X", "Y", "Z")
_CFRAME = ("X", "Y", "Z", "R00", "R01", "R02", "R10", "R11", "R12", "R20", "R21", "R22")


def _checked(value: Any, size: int, what: str) -> tuple[Any, ...]:
    if not isinstance(value, tuple | list) or len(value) != size:
        raise ModelFormatError(f"{what} value must have {size} components, got {value!r}")
    return tuple(value)


class _Writer:
    def __init__(self) -> None:
        self.refs: dict[str, str] = {}
        self.shared: dict[bytes, str] = {}

    def share(self, data: bytes) -> str:
        key = self.shared.get(data)
        if key is None:
            key = base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode()
            while key in self.shared.values():  # a collision would merge two strings
                key = base64.b64encode(hashlib.md5(key.encode(),
                                                   usedforsecurity=False).digest()).decode()
            self.shared[data] = key
        return key

    def ref(self, target: str | None) -> str:
        return "null" if target is None else self.refs.get(target, "null")

    def prop(self, name: str, prop: Prop) -> str:
        t, v = prop.type, prop.value
        attr = _attr(name)
        if isinstance(v, Raw):
            if v.origin == "xml":
                return v.data.decode("utf-8")
            return (f'<BinaryString name={attr} {RAW_MARK}="{_esc(v.type_id)}" '
                    f'licore-raw-index="{v.index}" licore-raw-count="{v.count}">'
                    f"{base64.b64encode(v.data).decode()}</BinaryString>")
        if t in ("String", "ProtectedString", "BinaryString"):
            return self._string(name, attr, t, v)
        body = self._body(t, v)
        tag = _TAGS.get(t, t)
        if t == "BrickColor" and not 0 <= v < 2**31:
            tag = "BrickColor"  # Studio's <int> is 32-bit signed; keep the number whole
        return f"<{tag} name={attr}>{body}</{tag}>"

    def _string(self, name: str, attr: str, t: str, v: Any) -> str:
        data = v if isinstance(v, bytes) else str(v).encode()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if t == "BinaryString" or text is None or _NOT_XML.search(text) or (
                t == "String" and name in BINARY_STRING_NAMES):
            return f"<BinaryString name={attr}>{base64.b64encode(data).decode()}</BinaryString>"
        if t == "ProtectedString" or name == "Source":
            return f"<ProtectedString name={attr}>{_cdata(text)}</ProtectedString>"
        return f"<string name={attr}>{_esc(text)}</string>"

    def _body(self, t: str, v: Any) -> str:
        write = _BODIES.get(t)
        if write is None:
            raise ModelFormatError(f"a property of type {t} has no XML form")
        return write(self, t, v)


# Each property type's element body, one small writer a type (a table, not a chain of ifs).
Body = Callable[[_Writer, str, Any], str]


def _content_id(w: _Writer, t: str, v: Any) -> str:
    return f"<url>{_esc(str(v))}</url>" if v else "<null></null>"


def _udim(w: _Writer, t: str, v: Any) -> str:
    s, o = _checked(v, 2, t)
    return f"<S>{_f32(s)}</S><O>{int(o)}</O>"


def _udim2(w: _Writer, t: str, v: Any) -> str:
    xs, xo, ys, yo = _checked(v, 4, t)
    return f"<XS>{_f32(xs)}</XS><XO>{int(xo)}</XO><YS>{_f32(ys)}</YS><YO>{int(yo)}</YO>"


def _ray(w: _Writer, t: str, v: Any) -> str:
    r = _checked(v, 6, t)
    return (f"<origin>{_tags(_XYZ, r[:3], _f32)}</origin>"
            f"<direction>{_tags(_XYZ, r[3:], _f32)}</direction>")


def _color3uint8(w: _Writer, t: str, v: Any) -> str:
    r, g, b = _checked(v, 3, t)
    return str(0xFF000000 | (r << 16) | (g << 8) | b)


def _tagged(names: tuple[str, ...], size: int, fmt: Callable[[Any], str]) -> Body:
    return lambda w, t, v: _tags(names, _checked(v, size, t), fmt)


def _optional_cframe(w: _Writer, t: str, v: Any) -> str:
    if v is None:
        return ""
    return f"<CFrame>{_tags(_CFRAME, _checked(v, 12, t), _f32)}</CFrame>"


def _sequence(w: _Writer, t: str, v: Any) -> str:
    points = [v] if t == "NumberRange" else list(v)
    return "".join(f"{_f32(x)} " for p in points for x in p)


def _rect(w: _Writer, t: str, v: Any) -> str:
    r = _checked(v, 4, t)
    return (f"<min>{_tags(('X', 'Y'), r[:2], _f32)}</min>"
            f"<max>{_tags(('X', 'Y'), r[2:], _f32)}</max>")


def _physical(w: _Writer, t: str, v: Any) -> str:
    if v is None:
        return "<CustomPhysics>false</CustomPhysics>"
    names = ("Density", "Friction", "Elasticity", "FrictionWeight",
             "ElasticityWeight", "AcousticAbsorption")[:len(v)]
    return "<CustomPhysics>true</CustomPhysics>" + _tags(names, tuple(v), _f32)


def _unique_id(w: _Writer, t: str, v: Any) -> str:
    index, time, rand = _checked(v, 3, t)
    return f"{rand & 0xFFFFFFFFFFFFFFFF:016x}{time:08x}{index:08x}"


def _font(w: _Writer, t: str, v: Any) -> str:
    family, weight, style, cached = _checked(v, 4, t)
    out = (f"<Family>{_content_id(w, 'ContentId', family)}</Family>"
           f"<Weight>{int(weight)}</Weight>"
           f"<Style>{'Italic' if style == 1 else 'Normal'}</Style>")
    if cached:
        out += f"<CachedFaceId>{_content_id(w, 'ContentId', cached)}</CachedFaceId>"
    return out


def _content(w: _Writer, t: str, v: Any) -> str:
    if v is None:
        return "<null></null>"
    if v[0] == "uri":
        return f"<uri>{_esc(v[1])}</uri>"
    return f"<Ref>{w.ref(v[1])}</Ref>"


def _whole(w: _Writer, t: str, v: Any) -> str:
    return str(int(v))


_BODIES: dict[str, Body] = {
    "ContentId": _content_id,
    "Bool": lambda w, t, v: "true" if v else "false",
    **dict.fromkeys(("Int32", "Int64", "BrickColor", "Enum", "SecurityCapabilities"), _whole),
    "Float32": lambda w, t, v: _f32(v),
    "Float64": lambda w, t, v: _f64(v),
    "UDim": _udim,
    "UDim2": _udim2,
    "Ray": _ray,
    "Faces": lambda w, t, v: f"<faces>{int(v)}</faces>",
    "Axes": lambda w, t, v: f"<axes>{int(v)}</axes>",
    "Color3": _tagged(("R", "G", "B"), 3, _f32),
    "Color3uint8": _color3uint8,
    "Vector2": _tagged(("X", "Y"), 2, _f32),
    "Vector3": _tagged(_XYZ, 3, _f32),
    "Vector2int16": _tagged(("X", "Y"), 2, str),
    "Vector3int16": _tagged(_XYZ, 3, str),
    "CFrame": _tagged(_CFRAME, 12, _f32),
    "OptionalCFrame": _optional_cframe,
    "Ref": lambda w, t, v: w.ref(v),
    **dict.fromkeys(("NumberSequence", "ColorSequence", "NumberRange"), _sequence),
    "Rect": _rect,
    "PhysicalProperties": _physical,
    **dict.fromkeys(("SharedString", "NetAssetRef"), lambda w, t, v: w.share(bytes(v))),
    "UniqueId": _unique_id,
    "Font": _font,
    "Content": _content,
}


def property_element(name: str, prop: Prop) -> str:
    """One property as its element, as `write_xml` writes it (for splicing into a file)."""
    return _Writer().prop(name, prop)


# Tree type -> the element name Roblox uses, where they differ.
_TAGS = {"ContentId": "ContentId", "Bool": "bool", "Int32": "int", "Int64": "int64",
         "BrickColor": "int", "Enum": "token", "Float32": "float", "Float64": "double",
         "CFrame": "CoordinateFrame", "OptionalCFrame": "OptionalCoordinateFrame",
         "Rect": "Rect2D"}


def write_xml(model: Model) -> bytes:
    writer = _Writer()
    order: list[Instance] = []
    stack = list(reversed(model.roots))
    while stack:
        inst = stack.pop()
        if inst.referent in writer.refs:
            raise ModelFormatError(f"instance {inst.referent!r} appears twice in the tree")
        writer.refs[inst.referent] = f"RBX{len(writer.refs):032X}"
        order.append(inst)
        stack.extend(reversed(inst.children))
    out: list[str] = [HEADER]
    for key, value in model.metadata.items():
        out.append(f"\t<Meta name={_attr(key)}>{_esc(value)}</Meta>\n")
    # Depth-first again, closing each Item after its children.
    todo: list[tuple[Instance, bool]] = [(r, False) for r in reversed(model.roots)]
    while todo:
        inst, closing = todo.pop()
        if closing:
            out.append("</Item>\n")
            continue
        out.append(f"<Item class={_attr(inst.class_name)} "
                   f"referent={quoteattr(writer.refs[inst.referent])}>\n<Properties>\n")
        for name, prop in inst.properties.items():
            out.append(writer.prop(name, prop))
            out.append("\n")
        out.append("</Properties>\n")
        todo.append((inst, True))
        todo.extend((c, False) for c in reversed(inst.children))
    if writer.shared:
        out.append("<SharedStrings>\n")
        for data, key in writer.shared.items():
            out.append(f"<SharedString md5={quoteattr(key)}>"
                       f"{base64.b64encode(data).decode()}</SharedString>\n")
        out.append("</SharedStrings>\n")
    out.append("</roblox>")
    return "".join(out).encode("utf-8")
