"""Property values `Instance.new` already gives an instance, so a compact `/update` node
leaves them out (docs/instances.md, "Class defaults").

A conservative, hand-written table, keyed by the property's name as model files store it:
only classes and properties whose default is plain and stable, and only values that compare
exactly (a property of another type, or any other value, still travels). The Luau SDK's
builder sets what a node holds and nothing else, so it agrees with this table by
construction: an omitted property keeps the value `Instance.new` gave it.
"""

from __future__ import annotations

from licore.builds.tree import Prop

_BASE_PART: dict[str, Prop] = {
    "Anchored": Prop("Bool", False),
    "CanCollide": Prop("Bool", True),
    "CanTouch": Prop("Bool", True),
    "CanQuery": Prop("Bool", True),
    "CastShadow": Prop("Bool", True),
    "Locked": Prop("Bool", False),
    "Massless": Prop("Bool", False),
    "Transparency": Prop("Float32", 0.0),
    "Reflectance": Prop("Float32", 0.0),
}

_SCRIPT: dict[str, Prop] = {"Disabled": Prop("Bool", False)}

DEFAULTS: dict[str, dict[str, Prop]] = {
    "Part": _BASE_PART,
    "WedgePart": _BASE_PART,
    "CornerWedgePart": _BASE_PART,
    "TrussPart": _BASE_PART,
    "Script": _SCRIPT,
    "LocalScript": _SCRIPT,
}


def is_class_default(class_name: str, name: str, prop: Prop) -> bool:
    known = DEFAULTS.get(class_name)
    if known is None:
        return False
    default = known.get(name)
    return default is not None and default.type == prop.type and (
        type(prop.value) is type(default.value) and prop.value == default.value)
