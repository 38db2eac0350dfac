"""One instance tree for both Roblox model formats.

Readers of the binary and the XML format produce a `Model`; writers take one. Property values
are typed (`Prop`), with one Python shape per Roblox type (listed in `SHAPES` and in
docs/instances.md), so a value read from either format compares equal to the same value read
from the other, and a writer can turn it back into bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import attrs

# Python shape of each property type's value; docs/instances.md gives the JSON form.
SHAPES: dict[str, str] = {
    "String": "bytes",
    "ProtectedString": "bytes (a script's Source in XML)",
    "BinaryString": "bytes (base64 in XML)",
    "ContentId": "str (a legacy content URL; a String in binary files)",
    "Bool": "bool",
    "Int32": "int",
    "Int64": "int",
    "Float32": "float (a float32 value)",
    "Float64": "float",
    "UDim": "(scale, offset)",
    "UDim2": "(x_scale, x_offset, y_scale, y_offset)",
    "Ray": "(ox, oy, oz, dx, dy, dz)",
    "Faces": "int (bits: Right, Top, Back, Left, Bottom, Front from bit 0)",
    "Axes": "int (bits: X, Y, Z from bit 0)",
    "BrickColor": "int (the BrickColor number)",
    "Color3": "(r, g, b) floats",
    "Color3uint8": "(r, g, b) ints 0..255",
    "Vector2": "(x, y)",
    "Vector2int16": "(x, y) ints",
    "Vector3": "(x, y, z)",
    "Vector3int16": "(x, y, z) ints",
    "CFrame": "(x, y, z, r00, r01, r02, r10, r11, r12, r20, r21, r22)",
    "OptionalCFrame": "None or a CFrame tuple",
    "Enum": "int",
    "Ref": "None or the referent of another instance in the same model",
    "NumberSequence": "tuple of (time, value, envelope)",
    "ColorSequence": "tuple of (time, r, g, b, envelope)",
    "NumberRange": "(min, max)",
    "Rect": "(min_x, min_y, max_x, max_y)",
    "PhysicalProperties": "None (default) or (density, friction, elasticity, "
                          "friction_weight, elasticity_weight[, acoustic_absorption])",
    "SharedString": "bytes (the shared content)",
    "NetAssetRef": "bytes (the shared content)",
    "UniqueId": "(index, time, random)",
    "Font": "(family, weight, style, cached_face_id); style 0 Normal, 1 Italic",
    "SecurityCapabilities": "int",
    "Content": "None, ('uri', str) or ('object', referent)",
    "Raw": "Raw: a type this reader does not know, kept as bytes and written back unchanged",
}

SCRIPT_CLASSES = frozenset({"Script", "LocalScript", "ModuleScript"})


@attrs.frozen
class Raw:
    """A property of a type the reader does not understand.

    Binary files store a property as one column for every instance of a class, so the column
    cannot be split: each instance holds the same `data` and its own `index` in it, and the
    binary writer writes the column back when the class is unchanged. XML keeps the element.
    """

    origin: str  # "binary" or "xml"
    type_id: str  # the binary type byte as two hex digits, or the XML element name
    data: bytes
    index: int = 0
    count: int = 1  # how many instances share the column


class Prop(NamedTuple):
    """A typed property value. A named tuple rather than an attrs class: a large place holds
    millions of them, and this is the one value whose construction cost shows."""

    type: str
    value: Any


@attrs.define(eq=False)
class Instance:
    class_name: str
    referent: str
    properties: dict[str, Prop] = attrs.Factory(dict)
    children: list[Instance] = attrs.Factory(list)
    service: bool = False

    @property
    def name(self) -> str:
        prop = self.properties.get("Name")
        if prop is None:
            return self.class_name
        value = prop.value
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


@attrs.define(eq=False)
class Model:
    """`format` is "binary" or "xml": what the file was, and what a writer gives back."""

    format: str
    roots: list[Instance] = attrs.Factory(list)
    metadata: dict[str, str] = attrs.Factory(dict)

    def walk(self) -> Iterator[tuple[str, Instance]]:
        """Every instance with its path of names from a root, depth first, in file order."""
        stack: list[tuple[str, Instance]] = [(r.name, r) for r in reversed(self.roots)]
        while stack:
            path, inst = stack.pop()
            yield path, inst
            stack.extend((f"{path}/{c.name}", c) for c in reversed(inst.children))

    def scripts(self) -> Iterator[tuple[str, Instance]]:
        for path, inst in self.walk():
            if inst.class_name in SCRIPT_CLASSES and "Source" in inst.properties:
                yield path, inst


def source_of(script: Instance) -> bytes:
    value = script.properties["Source"].value
    return value if isinstance(value, bytes) else str(value).encode()


def set_source(script: Instance, source: bytes) -> None:
    prop = script.properties["Source"]
    script.properties["Source"] = Prop(prop.type, source)


@attrs.define(eq=False)
class ScriptSource:
    """One script of a build, by its path of names, with its `Source` as bytes."""

    path: str
    source: bytes


@attrs.define(eq=False)
class Sources:
    """A build read only as far as its script sources. Key injection and the seller's rules
    change nothing else, so the codec writes every other byte back as it was read; `handle`
    is the codec's own record of where the sources sit in the file."""

    format: str
    scripts: list[ScriptSource]
    handle: object = attrs.field(repr=False)


@attrs.frozen
class CheckedScript:
    """A script found by a model check: where it sits, its own name and its source."""

    path: str
    name: str
    source: bytes


@attrs.frozen
class CheckedModel:
    """What an upload keeps of a model file that passed every limit a full read enforces:
    its format, how many instances it holds, and its scripts in tree order (as
    `Model.scripts` walks them)."""

    format: str
    instances: int
    scripts: tuple[CheckedScript, ...]
