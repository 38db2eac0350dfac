"""Properties that hold bytes rather than text though binary files store them as plain
strings (type 0x01); Studio's XML writes them as `BinaryString`."""

from __future__ import annotations

BINARY_STRING_NAMES = frozenset({
    "Tags", "AttributesSerialize", "MaterialColors", "PhysicsGrid", "SmoothGrid", "ChildData",
    "MeshData", "PhysicalConfigData", "ModelMeshData", "InitialSize", "CollisionGroupData",
    "RawMaterialColors"})
