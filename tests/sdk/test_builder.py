"""The SDK's instance builder, in the real Luau VM, turns every documented property encoding
into the right Roblox constructor call (a recording stand-in for Roblox's globals)."""

from __future__ import annotations

import base64
import json
import math
import struct
from pathlib import Path
from typing import Any

import attrs
import pytest

from adapters_formats.codec import RobloxModelCodec
from licore.builds.defaults import DEFAULTS
from licore.builds.nodes import to_nodes
from licore.builds.tree import Instance, Model, Prop, Raw
from tests.formats.test_binary import EXAMPLES
from tests.sdk.luau_sdk import LuauSdk
from tests.sdk.reflection_defaults import REFLECTION_DEFAULTS
from tests.support.models import product_model

FAKE = Path(__file__).with_name("fake_roblox.luau")
CODEC = RobloxModelCodec()
UNSETTABLE = {"BinaryString", "SharedString", "NetAssetRef", "UniqueId",
              "SecurityCapabilities", "Raw"}


@pytest.fixture(scope="module")
def sdk() -> LuauSdk:
    return LuauSdk()


def every_type_model() -> Model:
    target = Instance("Part", "target", {"Name": Prop("String", b"Target")})
    props: dict[str, Prop] = {"Name": Prop("String", b"Everything")}
    for type_name, values in EXAMPLES.items():
        for i, value in enumerate(values):
            if type_name == "String" and not isinstance(value, bytes):
                continue
            props[f"{type_name}{i}"] = Prop(type_name, value)
    props |= {
        "Source": Prop("ProtectedString", b"print('hi')\n"),
        "Icon": Prop("ContentId", "rbxassetid://12"),
        "Tags": Prop("BinaryString", b"Enemy\x00Boss"),
        "AttributesSerialize": Prop("BinaryString", b"\x00\x00\x00\x00"),
        "Vector2int16": Prop("Vector2int16", (3, -4)),
        "Link": Prop("Ref", "target"),
        "NoLink": Prop("Ref", None),
        "ImageUri": Prop("Content", ("uri", "rbxassetid://7")),
        "ImageObject": Prop("Content", ("object", "target")),
        "ImageNone": Prop("Content", None),
        "Mystery": Prop("Raw", Raw("binary", "42", b"\x01\x02", 0, 1)),
        "ReadOnlyThing": Prop("Float32", 1.5),
        "Huge": Prop("Float64", math.inf),
        "Hole": Prop("Float32", math.nan),
    }
    holder = Instance("Configuration", "holder", props)
    return Model("binary", [Instance("Folder", "root", {"Name": Prop("String", b"Root")},
                                     [target, holder])])


def _paths(nodes: list[dict[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}

    def walk(node: dict[str, Any], path: str) -> None:
        if "Id" in node:
            out[node["Id"]] = path
        for i, child in enumerate(node["Children"], 1):
            walk(child, f"{path}/{i}")

    for i, n in enumerate(nodes, 1):
        walk(n, str(i))
    return out


def _expected_prop(value: Any, paths: dict[str, str]) -> tuple[bool, Any]:
    """What the documented encoding should read back as, once built: (kept, value)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
        return True, float(value)  # Luau has doubles only, as docs/instances.md says
    if not isinstance(value, dict):
        return True, value
    t, v = value["type"], value["value"]
    if t in UNSETTABLE:
        return False, None
    if t == "Enum":
        return True, v
    if t in ("Float32", "Float64"):
        return True, {"type": "Float64", "value": v}
    if t in ("OptionalCFrame", "PhysicalProperties", "Ref") and v is None:
        return False, None  # setting nil: nothing to read back
    if t == "OptionalCFrame":
        return True, {"type": "CFrame", "value": v}
    if t == "Ref":
        return True, {"type": "Ref", "value": paths[v]}
    if t == "Content":
        if v is None:
            return True, {"type": "Content"}
        if "object" in v:
            return True, {"type": "Content", "value": {"object": paths[v["object"]]}}
    if t == "Font":
        return True, {"type": "Font", "value": {**v, "cachedFaceId": ""}}
    if t == "ColorSequence":
        return True, {"type": t, "value": [[*p[:4], 0] for p in v]}
    return True, value


def _expected(node: dict[str, Any], paths: dict[str, str]) -> dict[str, Any]:
    props = {}
    for name, value in node["Properties"].items():
        if name in ("Tags", "AttributesSerialize", "ReadOnlyThing"):
            continue
        kept, expected = _expected_prop(value, paths)
        if kept:
            props[name] = expected
    tags = node["Properties"].get("Tags")
    return {"ClassName": node["ClassName"], "Name": node["Name"], "Properties": props,
            "Children": [_expected(c, paths) for c in node["Children"]],
            "Tags": base64.b64decode(tags["value"]).decode().split("\x00") if tags else [],
            "Attributes": {}}


def _normal(node: dict[str, Any]) -> dict[str, Any]:
    """The Luau JSON encoder writes an empty table as []; read both as empty."""
    return {**node, "Properties": node["Properties"] or {},
            "Children": [_normal(c) for c in node["Children"] or []],
            "Tags": node.get("Tags") or [], "Attributes": node.get("Attributes") or {}}


def build(sdk: LuauSdk, nodes: list[dict[str, Any]],
          class_defaults: dict[str, dict[str, Any]] | None = None,
          ) -> tuple[list[dict[str, Any]], list[str]]:
    """Build `nodes` with the stand-in globals and read the instances back; with
    `class_defaults`, Instance.new gives each class those property values first."""
    fake = sdk.lua.load_chunk(FAKE.read_text(encoding="utf-8"), "fake_roblox")()[0]
    if class_defaults is not None:
        fake.get("setClassDefaults")(sdk.call("jsonDecode", json.dumps(class_defaults))[0])
    decoded = sdk.call("jsonDecode", json.dumps(nodes))[0]
    roots, skipped = sdk.call("buildInstances", decoded, fake.get("env"))
    back = sdk.to_python(fake.get("toNodes")(roots)[0])
    return [_normal(n) for n in back], sorted(sdk.to_python(skipped) or [])


def test_every_property_encoding_builds_the_value_it_documents(sdk: LuauSdk) -> None:
    nodes = to_nodes(every_type_model(), compact=False)
    back, skipped = build(sdk, nodes)
    paths = _paths(nodes)
    assert back == [_normal(_expected(n, paths)) for n in nodes]
    # What cannot be set from Luau is reported, not silently lost.
    assert "Root.Everything.ReadOnlyThing: read-only" in skipped
    assert "Root.Everything.Mystery: unsettable" in skipped
    assert "Root.Everything.SharedString0: unsettable" in skipped


def _file_model(fmt: str) -> Model:
    """The every-type model as a file of `fmt` can hold it: binary files have no
    Vector2int16 type id, and a raw property of one format does not travel to the other."""
    model = every_type_model()
    holder = model.roots[0].children[1]
    for name in ("Vector2int16", "Mystery"):
        del holder.properties[name]
    return attrs.evolve(model, format=fmt)


@pytest.mark.parametrize("fmt", ["binary", "xml"])
def test_every_property_type_read_from_either_file_format_builds(sdk: LuauSdk, fmt: str) -> None:
    model = CODEC.read(CODEC.write(_file_model(fmt)))
    assert model.format == fmt
    nodes = to_nodes(model)
    back, skipped = build(sdk, nodes)
    assert back == [_normal(_expected(n, _paths(nodes))) for n in nodes]
    everything = back[0]["Children"][1]
    # Tags reach AddTag from .rbxm as from .rbxmx (binary files store them as plain strings).
    assert everything["Tags"] == ["Enemy", "Boss"]
    assert nodes[0]["Children"][1]["Properties"]["Tags"]["type"] == "BinaryString"
    built = set(everything["Properties"]) | {p.split(": ")[0].rsplit(".", 1)[1] for p in skipped}
    props = nodes[0]["Children"][1]["Properties"]
    set_to_nil = {k for k, v in props.items() if isinstance(v, dict) and v["value"] is None
                  and v["type"] in ("OptionalCFrame", "PhysicalProperties", "Ref")}
    wanted = set(_file_model(fmt).roots[0].children[1].properties) - {
        "Name", "Tags", "AttributesSerialize"}
    assert built == wanted - set_to_nil  # every property either set or reported, none lost


def test_tags_sent_as_a_plain_string_are_still_added(sdk: LuauSdk) -> None:
    nodes = [{"ClassName": "Part", "Name": "P", "Properties": {"Tags": "Enemy\u0000Boss"},
              "Children": []}]
    back, skipped = build(sdk, nodes)
    assert back[0]["Tags"] == ["Enemy", "Boss"] and skipped == []


def test_a_product_build_rebuilds_with_its_tree_shape(sdk: LuauSdk) -> None:
    nodes = to_nodes(product_model(), compact=False)
    back, skipped = build(sdk, nodes)
    assert skipped == []
    folder = back[0]
    assert [c["Name"] for c in folder["Children"]] == [c["Name"] for c in nodes[0]["Children"]]
    assert folder["Children"][0]["Properties"]["Source"].startswith("-- The product")
    assert folder["Children"][-1]["Properties"]["Value"] == {"type": "Ref", "value": "1/3"}


def _f32(value: Any) -> Any:
    """Numbers as float32 (the compact form writes a float32 with its shortest digits), and a
    CFrame given by its position only as the full twelve (identity rotation)."""
    if isinstance(value, dict):
        if value.get("type") == "CFrame" and len(value.get("value") or ()) == 3:
            value = {**value, "value": [*value["value"], 1, 0, 0, 0, 1, 0, 0, 0, 1]}
        return {k: _f32(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_f32(v) for v in value]
    if isinstance(value, float) and math.isfinite(value) and abs(value) < 3e38:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def test_compact_nodes_build_what_tagged_nodes_build(sdk: LuauSdk) -> None:
    model = every_type_model()
    tagged, tagged_skipped = build(sdk, to_nodes(model, compact=False))
    compact, compact_skipped = build(sdk, to_nodes(model, compact=True))
    assert compact_skipped == tagged_skipped
    assert _f32(compact) == _f32(tagged)


def test_class_defaults_are_left_out_and_the_builder_keeps_them(sdk: LuauSdk) -> None:
    part = Instance("Part", "p", {"Name": Prop("String", b"P"),
                                  "Anchored": Prop("Bool", False),
                                  "Transparency": Prop("Float32", 0.0),
                                  "Reflectance": Prop("Float32", 0.5),
                                  "CanCollide": Prop("Bool", False)})
    nodes = to_nodes(Model("binary", [part]), compact=True)
    assert nodes[0]["Properties"] == {"CanCollide": False, "Reflectance": 0.5}
    back, _ = build(sdk, nodes)
    assert back[0]["Properties"] == {"CanCollide": False, "Reflectance": 0.5}


def test_the_defaults_table_holds_roblox_reflection_defaults_only() -> None:
    for class_name, props in DEFAULTS.items():
        for name, prop in props.items():
            assert REFLECTION_DEFAULTS[class_name][name] == (prop.type, prop.value), (
                class_name, name)


def test_compact_nodes_left_without_defaults_build_what_tagged_nodes_build(
        sdk: LuauSdk) -> None:
    """Every class and property of the defaults table, at its default and at another value:
    with Instance.new giving Roblox's defaults (the reflection database's, recorded in
    tests/sdk/reflection_defaults.py), the compact nodes, which leave the defaults out,
    build the same instances as the tagged nodes, which set every property."""
    roots = []
    for class_name, props in DEFAULTS.items():
        for changed in (None, *props):
            values = {name: _other(p) if name == changed else p for name, p in props.items()}
            if class_name in ("Script", "LocalScript"):
                values["Source"] = Prop("ProtectedString", b"print(1)\n")
            roots.append(Instance(class_name, f"{class_name}.{changed}", {
                "Name": Prop("String", f"{class_name}-{changed}".encode()), **values}))
    model = Model("binary", roots)
    compact_nodes = to_nodes(model, compact=True)
    for node, root in zip(compact_nodes, roots, strict=True):
        left_out = set(root.properties) - set(node["Properties"]) - {"Name"}
        assert left_out == set(DEFAULTS[root.class_name]) - {root.referent.split(".")[1]}
    roblox = {c: {n: v for n, (_, v) in props.items()} for c, props in
              REFLECTION_DEFAULTS.items()}
    compact, skipped = build(sdk, compact_nodes, roblox)
    tagged, _ = build(sdk, to_nodes(model, compact=False), roblox)
    assert skipped == []
    assert _f32(compact) == _f32(tagged)


def _other(prop: Prop) -> Prop:
    """A value of the same type that is not the default."""
    if prop.type == "Bool":
        return Prop("Bool", not prop.value)
    return Prop(prop.type, 0.25)


def test_base64_decoding_matches_python(sdk: LuauSdk) -> None:
    for data in (b"", b"a", b"ab", b"abc", bytes(range(256))):
        text = base64.b64encode(data).decode()
        got = sdk.call("base64Decode", text)[0]
        assert (got if isinstance(got, bytes) else bytes(got.as_bytes())) == data


def _attr_string(data: bytes) -> bytes:
    return struct.pack("<I", len(data)) + data


def _attributes(items: list[tuple[str, int, bytes]]) -> bytes:
    """The attribute blob as rbx-dom's attribute format documents it."""
    out = struct.pack("<I", len(items))
    for name, kind, value in items:
        out += _attr_string(name.encode()) + bytes([kind]) + value
    return out


ATTRIBUTES: list[tuple[str, int, bytes, Any]] = [
    ("Label", 0x02, _attr_string(b"gold"), "gold"),
    ("On", 0x03, b"\x01", True),
    ("Half", 0x05, struct.pack("<f", 0.5), 0.5),
    ("Pi", 0x06, struct.pack("<d", math.pi), math.pi),
    ("Pad", 0x09, struct.pack("<fi", 0.25, -3), {"type": "UDim", "value": [0.25, -3]}),
    ("Box", 0x0A, struct.pack("<fifi", 1.0, 2, 3.0, 4),
     {"type": "UDim2", "value": [1, 2, 3, 4]}),
    ("Brick", 0x0E, struct.pack("<I", 194), {"type": "BrickColor", "value": 194}),
    ("Tint", 0x0F, struct.pack("<3f", 0.0, 0.5, 1.0), {"type": "Color3", "value": [0, 0.5, 1]}),
    ("Flat", 0x10, struct.pack("<2f", 10, 20), {"type": "Vector2", "value": [10, 20]}),
    ("Spot", 0x11, struct.pack("<3f", 1, 2, 3), {"type": "Vector3", "value": [1, 2, 3]}),
    ("Turned", 0x14, struct.pack("<3fB9f", 1, 2, 3, 0, 0, 0, 1, 0, 1, 0, -1, 0, 0),
     {"type": "CFrame", "value": [1, 2, 3, 0, 0, 1, 0, 1, 0, -1, 0, 0]}),
    ("Upright", 0x14, struct.pack("<3fB", 4, 5, 6, 0x02),
     {"type": "CFrame", "value": [4, 5, 6, 1, 0, 0, 0, 1, 0, 0, 0, 1]}),
    # id 0x0E: +Z as the first column, +Y as the second (a quarter turn about Y)
    ("Quarter", 0x14, struct.pack("<3fB", 0, 0, 0, 0x0E),
     {"type": "CFrame", "value": [0, 0, 0, 0, 0, -1, 0, 1, 0, 1, 0, 0]}),
    ("Fade", 0x17, struct.pack("<I6f", 2, 0.0, 0.0, 1.0, 0.5, 1.0, 0.0),
     {"type": "NumberSequence", "value": [[0, 1, 0], [1, 0, 0.5]]}),
    ("Glow", 0x19, struct.pack("<I10f", 2, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1),
     {"type": "ColorSequence", "value": [[0, 1, 0, 0, 0], [1, 0, 0, 1, 0]]}),
    ("Span", 0x1B, struct.pack("<2f", 5, 10), {"type": "NumberRange", "value": [5, 10]}),
    ("Area", 0x1C, struct.pack("<4f", 1, 2, 3, 4), {"type": "Rect", "value": [1, 2, 3, 4]}),
]


def _with_attributes(blob: bytes) -> list[dict[str, Any]]:
    return [{"ClassName": "Part", "Name": "P", "Children": [], "Properties": {
        "AttributesSerialize": {"type": "BinaryString",
                                "value": base64.b64encode(blob).decode()}}}]


def test_attributes_are_set_with_their_roblox_types(sdk: LuauSdk) -> None:
    blob = _attributes([(n, k, v) for n, k, v, _ in ATTRIBUTES])
    back, skipped = build(sdk, _with_attributes(blob))
    assert skipped == []
    assert back[0]["Attributes"] == {n: want for n, _, _, want in ATTRIBUTES}


def test_attributes_past_an_unknown_type_are_reported_not_guessed(sdk: LuauSdk) -> None:
    blob = _attributes([("Label", 0x02, _attr_string(b"gold")), ("Odd", 0x7F, b"\x00"),
                        ("Later", 0x03, b"\x01")])
    back, skipped = build(sdk, _with_attributes(blob))
    assert back[0]["Attributes"] == {"Label": "gold"}
    assert skipped == ['P.AttributesSerialize: attribute "Odd" has type 0x7f,'
                       " which the SDK does not read"]


def test_a_truncated_attribute_blob_is_reported(sdk: LuauSdk) -> None:
    blob = _attributes([("Label", 0x02, _attr_string(b"gold"))])[:-2]
    back, skipped = build(sdk, _with_attributes(blob))
    assert back[0]["Attributes"] == {}
    assert skipped == ["P.AttributesSerialize: truncated"]


def test_an_attribute_the_instance_refuses_is_reported(sdk: LuauSdk) -> None:
    blob = _attributes([("Refused", 0x03, b"\x01"), ("On", 0x03, b"\x01")])
    back, skipped = build(sdk, _with_attributes(blob))
    assert back[0]["Attributes"] == {"On": True}
    assert skipped == ["P.@Refused: refused"]
