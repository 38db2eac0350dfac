"""The SDK's instance builder, in the real Luau VM, turns every documented property encoding
into the right Roblox constructor call (a recording stand-in for Roblox's globals)."""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path
from typing import Any

import attrs
import pytest

from adapters_formats.codec import RobloxModelCodec
from licore.builds.nodes import to_nodes
from licore.builds.tree import Instance, Model, Prop, Raw
from tests.formats.test_binary import EXAMPLES
from tests.sdk.luau_sdk import LuauSdk
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
        if name in ("Tags", "ReadOnlyThing"):
            continue
        kept, expected = _expected_prop(value, paths)
        if kept:
            props[name] = expected
    tags = node["Properties"].get("Tags")
    return {"ClassName": node["ClassName"], "Name": node["Name"], "Properties": props,
            "Children": [_expected(c, paths) for c in node["Children"]],
            "Tags": base64.b64decode(tags["value"]).decode().split("\x00") if tags else []}


def _normal(node: dict[str, Any]) -> dict[str, Any]:
    """The Luau JSON encoder writes an empty table as []; read both as empty."""
    return {**node, "Properties": node["Properties"] or {},
            "Children": [_normal(c) for c in node["Children"] or []],
            "Tags": node.get("Tags") or []}


def build(sdk: LuauSdk, nodes: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    fake = sdk.lua.load_chunk(FAKE.read_text(encoding="utf-8"), "fake_roblox")()[0]
    decoded = sdk.call("jsonDecode", json.dumps(nodes))[0]
    roots, skipped = sdk.call("buildInstances", decoded, fake.get("env"))
    back = sdk.to_python(fake.get("toNodes")(roots)[0])
    return [_normal(n) for n in back], sorted(sdk.to_python(skipped) or [])


def test_every_property_encoding_builds_the_value_it_documents(sdk: LuauSdk) -> None:
    nodes = to_nodes(every_type_model())
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
    wanted = set(_file_model(fmt).roots[0].children[1].properties) - {"Name", "Tags"}
    assert built == wanted - set_to_nil  # every property either set or reported, none lost


def test_tags_sent_as_a_plain_string_are_still_added(sdk: LuauSdk) -> None:
    nodes = [{"ClassName": "Part", "Name": "P", "Properties": {"Tags": "Enemy\u0000Boss"},
              "Children": []}]
    back, skipped = build(sdk, nodes)
    assert back[0]["Tags"] == ["Enemy", "Boss"] and skipped == []


def test_a_product_build_rebuilds_with_its_tree_shape(sdk: LuauSdk) -> None:
    nodes = to_nodes(product_model())
    back, skipped = build(sdk, nodes)
    assert skipped == []
    folder = back[0]
    assert [c["Name"] for c in folder["Children"]] == [c["Name"] for c in nodes[0]["Children"]]
    assert folder["Children"][0]["Properties"]["Source"].startswith("-- The product")
    assert folder["Children"][-1]["Properties"]["Value"] == {"type": "Ref", "value": "1/3"}


def test_base64_decoding_matches_python(sdk: LuauSdk) -> None:
    for data in (b"", b"a", b"ab", b"abc", bytes(range(256))):
        text = base64.b64encode(data).decode()
        got = sdk.call("base64Decode", text)[0]
        assert (got if isinstance(got, bytes) else bytes(got.as_bytes())) == data
