"""Compare instance trees read from either model format.

`canonical` turns a Model into plain nested tuples in which the two formats' spellings of the
same value coincide: the string family (String, ProtectedString, BinaryString, ContentId) is
bytes, floats compare by their float32 or float64 bit pattern (so NaN equals NaN), and a Ref
names its target by its position in the tree rather than by a format-specific referent.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from licore.builds.tree import Instance, Model, Prop, Raw

_STRINGS = {"String", "ProtectedString", "BinaryString", "ContentId"}
_FLOAT32_TYPES = {"Float32", "UDim", "UDim2", "Ray", "Color3", "Vector2", "Vector3", "CFrame",
                  "OptionalCFrame", "NumberSequence", "ColorSequence", "NumberRange", "Rect",
                  "PhysicalProperties"}


def _float(x: float, single: bool) -> Any:
    if math.isnan(x):
        return ("nan",)
    return struct.pack(">f" if single else ">d", x)


def _value(prop: Prop, single: bool, where: dict[str, tuple[int, ...]]) -> Any:
    value = prop.value
    if isinstance(value, Raw):
        return ("raw", value.origin, value.type_id, value.data, value.index)
    if prop.type in _STRINGS:
        return ("str", value if isinstance(value, bytes) else str(value).encode())
    if prop.type == "Ref":
        return ("ref", None if value is None else where.get(value, ("dangling", value)))
    if prop.type == "Content" and isinstance(value, tuple) and value[0] == "object":
        return ("object", where.get(value[1]))
    return _deep(value, single)


def _deep(value: Any, single: bool) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, int | bytes | str):
        return value
    if isinstance(value, float):
        return _float(value, single)
    if isinstance(value, tuple | list):
        return tuple(_deep(v, single) for v in value)
    raise TypeError(f"unexpected value {value!r}")


def canonical(model: Model) -> tuple[Any, ...]:
    where: dict[str, tuple[int, ...]] = {}

    def index(inst: Instance, at: tuple[int, ...]) -> None:
        where[inst.referent] = at
        for i, child in enumerate(inst.children):
            index(child, (*at, i))

    for i, root in enumerate(model.roots):
        index(root, (i,))

    def node(inst: Instance) -> tuple[Any, ...]:
        props = tuple(sorted(
            (name, _value(p, p.type in _FLOAT32_TYPES, where))
            for name, p in inst.properties.items()
        ))
        return (inst.class_name, props, tuple(node(c) for c in inst.children))

    return tuple(node(r) for r in model.roots)
