"""Instance nodes: the JSON form of a tree that `/update` seals (contract 5,
docs/instances.md).

A node is `{ClassName, Name, Properties, Children}` plus `Id` when another node's Ref points
at it. Strings, booleans and plain numbers are JSON values; every other type is a tagged
object `{"type": T, "value": V}`. JSON has no infinities or NaN, so such a number is written
as the string "inf", "-inf" or "nan" inside a tagged value (a non-finite Float32 or Float64
property is tagged for that reason).
"""

from __future__ import annotations

import base64
import json
import math
import struct
from collections.abc import Callable
from typing import Any

from licore.builds.defaults import is_class_default
from licore.builds.tree import Instance, Model, Prop, Raw

# The revision of what `to_nodes` writes. Stored templates (licore.builds.template) carry it
# and are made again under another, so change it with any change to the nodes' text
# (tests/formats/test_node_templates.py pins the text of a fixed model to it).
NODES_REVISION = "1"

_PLAIN_NUMBERS = frozenset({"Int32", "Int64", "Float32", "Float64"})
_STRINGS = frozenset({"String", "ProtectedString", "ContentId"})
_FACES = ("Right", "Top", "Back", "Left", "Bottom", "Front")
_AXES = ("X", "Y", "Z")
_STYLES = ("Normal", "Italic")


def _number(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def _numbers(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_numbers(v) for v in value]
    return _number(value)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _bits(value: int, names: tuple[str, ...]) -> list[str]:
    return [n for i, n in enumerate(names) if value >> i & 1]


def _tagged(prop: Prop, ids: dict[str, str]) -> Any:
    t, v = prop.type, prop.value
    if isinstance(v, Raw):
        return {"type": "Raw", "value": _b64(v.data),
                "origin": v.origin, "typeId": v.type_id}
    tag = _TAGGED.get(t)
    if tag is None:
        return {"type": t, "value": _numbers(v)}
    return tag(t, v, ids)


def _string(t: str, v: Any, ids: dict[str, str]) -> Any:
    data = v if isinstance(v, bytes) else str(v).encode()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"type": "BinaryString", "value": _b64(data)}


def _plain_number(t: str, v: Any, ids: dict[str, str]) -> Any:
    # A bare "inf" would read as a string property; tag the non-finite ones.
    return v if _number(v) is v else {"type": t, "value": _number(v)}


def _font(t: str, v: Any, ids: dict[str, str]) -> Any:
    family, weight, style, cached = v
    return {"type": t, "value": {
        "family": family, "weight": weight,
        "style": _STYLES[style] if 0 <= style < len(_STYLES) else style,
        "cachedFaceId": cached}}


def _content(t: str, v: Any, ids: dict[str, str]) -> Any:
    if v is None:
        return {"type": t, "value": None}
    kind, target = v
    return {"type": t, "value": {"uri": target} if kind == "uri"
            else {"object": ids.get(target)}}


# The types whose tagged form is not `{"type": T, "value": the numbers}`, one writer each.
_TAGGED: dict[str, Callable[[str, Any, dict[str, str]], Any]] = {
    **dict.fromkeys(_STRINGS, _string),
    "Bool": lambda t, v, ids: bool(v),
    **dict.fromkeys(_PLAIN_NUMBERS, _plain_number),
    **dict.fromkeys(("BinaryString", "SharedString", "NetAssetRef"),
                    lambda t, v, ids: {"type": t, "value": _b64(v)}),
    "Faces": lambda t, v, ids: {"type": t, "value": _bits(v, _FACES)},
    "Axes": lambda t, v, ids: {"type": t, "value": _bits(v, _AXES)},
    "Ref": lambda t, v, ids: {"type": t, "value": None if v is None else ids.get(v)},
    "Font": _font,
    "Content": _content,
}


# Compact form: a tagged value is an array, its type first. These types carry one value after
# it; every other type's value list is spread after the type.
_SCALAR = frozenset({"BinaryString", "SharedString", "NetAssetRef", "BrickColor", "Enum",
                     "Ref", "SecurityCapabilities", "Font", "Content", "Float32", "Float64",
                     "Int32", "Int64"})
_DOUBLES = frozenset({"Float64", "Int64", "Int32"})
_IDENTITY = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
_F32 = struct.Struct("<f")
_short_cache: dict[float, float] = {}


def _short(x: float) -> float:
    """The float64 with the fewest digits that is still the same float32: a value read
    from a float32 field is only that precise, and the rest is noise in the JSON."""
    hit = _short_cache.get(x)
    if hit is not None:
        return hit
    if not math.isfinite(x) or x == 0.0:
        return x
    target = _F32.pack(x)
    for digits in (6, 7, 8):
        shorter = float(f"{x:.{digits}g}")
        if _F32.pack(shorter) == target:
            break
    else:
        shorter = x
    if len(_short_cache) < 65536:
        _short_cache[x] = shorter
    return shorter


def _compact_numbers(value: Any, doubles: bool) -> Any:
    if isinstance(value, tuple | list):
        return [_compact_numbers(v, doubles) for v in value]
    if isinstance(value, float):
        return _number(value if doubles else _short(value))
    return value


def _compact_float(t: str, v: float) -> Any:
    if not math.isfinite(v):
        return [t, _number(v)]
    return v if t == "Float64" else _short(v)


def _compact(prop: Prop, ids: dict[str, str]) -> Any:
    """The compact form of one value (docs/instances.md): plain JSON where the tagged form
    is plain, else an array `[type, ...]`, float32 numbers with their shortest digits, and
    a CFrame without rotation as its position only."""
    t, v = prop.type, prop.value
    if isinstance(v, Raw):
        return ["Raw", _b64(v.data), v.origin, v.type_id]
    if t in ("Float32", "Float64"):
        return _compact_float(t, v)
    tagged = _tagged(prop, ids)
    if not isinstance(tagged, dict):
        return tagged
    value = tagged["value"]
    if t in _SCALAR:
        return [t, value]
    if t in ("CFrame", "OptionalCFrame") and v is not None and tuple(v[3:]) == _IDENTITY:
        v = v[:3]
    if isinstance(v, tuple | list) and t not in ("Faces", "Axes"):
        return [t, *_compact_numbers(v, t in _DOUBLES)]
    if isinstance(value, list):
        return [t, *value]
    return [t, value]


def _targets(model: Model) -> dict[str, str]:
    """Referents some Ref or Content points at, each given a short, path-free node Id."""
    wanted: list[str] = []
    for _, inst in model.walk():
        for p in inst.properties.values():
            if p.type == "Ref" and p.value is not None:
                wanted.append(p.value)
            elif p.type == "Content" and isinstance(p.value, tuple) and p.value[0] == "object":
                wanted.append(p.value[1])
    ids: dict[str, str] = {}
    for ref in wanted:
        ids.setdefault(ref, str(len(ids) + 1))
    return ids


def to_nodes(model: Model, *, compact: bool = False) -> list[dict[str, Any]]:
    """The tagged form (the default, which every SDK version reads), or with `compact=True`
    the compact one: compact values, and no property whose value is its class's default
    (docs/instances.md)."""
    ids = _targets(model)
    out: list[dict[str, Any]] = []
    # Iterative, so a deep tree cannot exhaust the interpreter's stack.
    stack: list[tuple[Instance, list[dict[str, Any]]]] = [
        (r, out) for r in reversed(model.roots)]
    pending: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []
    while stack:
        inst, siblings = stack.pop()
        node: dict[str, Any] = {
            "ClassName": inst.class_name,
            "Name": inst.name,
            "Properties": (
                {k: _compact(p, ids) for k, p in sorted(inst.properties.items())
                 if k != "Name" and not is_class_default(inst.class_name, k, p)}
                if compact else
                {k: _tagged(p, ids) for k, p in sorted(inst.properties.items())
                 if k != "Name"}),
            "Children": [],
        }
        if inst.referent in ids:
            node["Id"] = ids[inst.referent]
        pending.append((siblings, node))
        stack.extend((c, node["Children"]) for c in reversed(inst.children))
    for siblings, node in pending:
        siblings.append(node)
    return out


def nodes_json(model: Model, compact: bool) -> bytes:
    """`to_nodes` as the JSON text `/update` seals and keeps."""
    return json.dumps(to_nodes(model, compact=compact), separators=(",", ":"),
                      ensure_ascii=False).encode()


def value_of(prop: Prop, compact: bool) -> Any:
    """One property's value as `to_nodes` writes it, for a type no Ref or Content is."""
    return _compact(prop, {}) if compact else _tagged(prop, {})
