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


def _close(x: Any, y: Any) -> bool:
    """Structural equality with floats compared to float32 precision (Studio writes XML floats
    with fewer digits than a float32 holds) and -0.0 equal to 0.0."""
    if isinstance(x, float) or isinstance(y, float):
        if not isinstance(x, int | float) or not isinstance(y, int | float):
            return False
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-5)
    if isinstance(x, tuple | list) and isinstance(y, tuple | list):
        return len(x) == len(y) and all(_close(a, b) for a, b in zip(x, y, strict=True))
    return bool(x == y)


def _plain(prop: Prop, where: dict[str, str]) -> Any:
    value = prop.value
    if prop.type in _STRINGS:
        return value if isinstance(value, bytes) else str(value).encode()
    if prop.type == "Ref":
        return ("ref", None if value is None else where.get(value))
    if prop.type == "Content" and isinstance(value, tuple) and value[0] == "object":
        return ("object", where.get(value[1]))
    return value


def twin_differences(a: Model, b: Model, *, skip_root_classes: frozenset[str] = frozenset()
                     ) -> list[str]:
    """How two readings of the same content differ, as readable lines (empty: the same tree).

    Siblings are matched by class and name in file order (the two formats may order a
    place's services differently); `skip_root_classes` names top-level classes one writer
    emits and the other does not."""
    def paths(model: Model) -> dict[str, str]:
        return {inst.referent: path for path, inst in model.walk()}

    where_a, where_b = paths(a), paths(b)
    out: list[str] = []

    def key(inst: Instance) -> tuple[str, str]:
        return (inst.class_name, inst.name)

    def match(xs: list[Instance], ys: list[Instance], at: str) -> None:
        groups: dict[tuple[str, str], list[list[Instance]]] = {}
        for side, items in ((0, xs), (1, ys)):
            for inst in items:
                groups.setdefault(key(inst), [[], []])[side].append(inst)
        for (cls, name), (left, right) in groups.items():
            if len(left) != len(right):
                out.append(f"{at}/{name} ({cls}): {len(left)} against {len(right)}")
                continue
            for x, y in zip(left, right, strict=True):
                compare(x, y, f"{at}/{name}")

    def compare(x: Instance, y: Instance, at: str) -> None:
        for prop in sorted(set(x.properties) | set(y.properties)):
            px, py = x.properties.get(prop), y.properties.get(prop)
            if px is None or py is None:
                out.append(f"{at}.{prop}: only in {'the first' if py is None else 'the second'}")
            elif not _close(_plain(px, where_a), _plain(py, where_b)):
                out.append(f"{at}.{prop}: {str(px.value)[:80]} against {str(py.value)[:80]}")
        match(x.children, y.children, at)

    match([r for r in a.roots if r.class_name not in skip_root_classes],
          [r for r in b.roots if r.class_name not in skip_root_classes], "")
    return out
