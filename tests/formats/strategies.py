"""Hypothesis strategies for instance trees whose values every writer must keep exactly."""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import strategies as st

from licore.builds.tree import Instance, Model, Prop


def _f32(x: float) -> float:
    value: float = struct.unpack("<f", struct.pack("<f", x))[0]
    return value


F32 = st.floats(width=32, allow_nan=False).map(_f32)
F64 = st.floats(allow_nan=False)
I32 = st.integers(-(2**31), 2**31 - 1)
U8 = st.integers(0, 255)
# Text both formats can carry (XML 1.0 has no control characters, not even escaped).
TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20)


def _t(*parts: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[Any, ...]]:
    return st.tuples(*parts)


VALUES: dict[str, st.SearchStrategy[Any]] = {
    "String": st.binary(max_size=40),
    "Bool": st.booleans(),
    "Int32": I32,
    "Float32": F32,
    "Float64": F64,
    "UDim": _t(F32, I32),
    "UDim2": _t(F32, I32, F32, I32),
    "Ray": _t(F32, F32, F32, F32, F32, F32),
    "Faces": st.integers(0, 63),
    "Axes": st.integers(0, 7),
    "BrickColor": st.integers(0, 2**32 - 1),
    "Color3": _t(F32, F32, F32),
    "Vector2": _t(F32, F32),
    "Vector3": _t(F32, F32, F32),
    "CFrame": _t(*([F32] * 12)),
    "Enum": st.integers(0, 2**32 - 1),
    "Vector3int16": _t(*([st.integers(-32768, 32767)] * 3)),
    "NumberSequence": st.lists(_t(F32, F32, F32), max_size=4).map(tuple),
    "ColorSequence": st.lists(_t(F32, F32, F32, F32, F32), max_size=4).map(tuple),
    "NumberRange": _t(F32, F32),
    "Rect": _t(F32, F32, F32, F32),
    "PhysicalProperties": st.none() | _t(*([F32] * 5)) | _t(*([F32] * 6)),
    "Color3uint8": _t(U8, U8, U8),
    "Int64": st.integers(-(2**63), 2**63 - 1),
    "SharedString": st.binary(max_size=40),
    "OptionalCFrame": st.none() | _t(*([F32] * 12)),
    "UniqueId": _t(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1),
                   st.integers(-(2**63), 2**63 - 1)),
    "Font": _t(TEXT, st.integers(0, 65535), st.integers(0, 1), TEXT),
    "SecurityCapabilities": st.integers(0, 2**64 - 1),
    "Content": st.none() | _t(st.just("uri"), TEXT),
}


@st.composite
def models(draw: st.DrawFn, fmt: str = "binary") -> Model:
    """A forest of a few classes; instances of one class share one set of typed properties
    (as the binary format stores them), with Refs between instances."""
    classes = draw(st.lists(st.sampled_from(["Folder", "Part", "Model", "Script", "Value"]),
                            min_size=1, max_size=3, unique=True))
    schema = {c: draw(st.dictionaries(st.sampled_from(sorted(VALUES)), st.just(None),
                                      max_size=4)) for c in classes}
    count = draw(st.integers(1, 12))
    instances = []
    for i in range(count):
        cls = draw(st.sampled_from(classes))
        props = {"Name": Prop("String", f"I{i}".encode())}
        for type_name in schema[cls]:
            props[f"P{type_name}"] = Prop(type_name, draw(VALUES[type_name]))
        instances.append(Instance(cls, f"r{i}", props))
    refs = [inst.referent for inst in instances]
    for inst in instances:
        if inst.class_name == "Value":
            inst.properties["Target"] = Prop("Ref", draw(st.none() | st.sampled_from(refs)))
    roots: list[Instance] = []
    for i, inst in enumerate(instances):
        parent = draw(st.integers(-1, i - 1))  # an earlier instance, so no cycles
        (roots if parent < 0 else instances[parent].children).append(inst)
    return Model(fmt, roots)
