"""Roblox's class defaults for the properties `licore.builds.defaults` leaves out of compact
`/update` nodes, as Roblox's reflection database records them (rbx-dom's
`rbx_dom_lua/src/database.json`, the JSON twin of `rbx_reflection_database/database.msgpack`,
Roblox version 0.728, rbx-dom commit 43d1f129f2eb1fd055512f039863ff35ae5a10f1, checked
2026-11-23; docs/instances.md, "Class defaults"). Only those properties are recorded here:
a property added to the table must be looked up there and added here first.

Each entry is (type, value) as a model file stores it; every one is a canonical, serialized,
script-writable property of its class (BasePart's and BaseScript's, inherited).
"""

from __future__ import annotations

from typing import Any

_BASE_PART: dict[str, tuple[str, Any]] = {
    "Anchored": ("Bool", False),
    "CanCollide": ("Bool", True),
    "CanTouch": ("Bool", True),
    "CanQuery": ("Bool", True),
    "CastShadow": ("Bool", True),
    "Locked": ("Bool", False),
    "Massless": ("Bool", False),
    "Transparency": ("Float32", 0.0),
    "Reflectance": ("Float32", 0.0),
}

REFLECTION_DEFAULTS: dict[str, dict[str, tuple[str, Any]]] = {
    "Part": _BASE_PART,
    "WedgePart": _BASE_PART,
    "CornerWedgePart": _BASE_PART,
    "TrussPart": _BASE_PART,
    "Script": {"Disabled": ("Bool", False)},
    "LocalScript": {"Disabled": ("Bool", False)},
}
