"""Byte-holding properties that binary files store as plain strings (`Tags`,
`AttributesSerialize`, ...) read as BinaryString from either format, so the tree, the
/update nodes and the SDK see one type whatever the seller uploaded."""

from __future__ import annotations

import pytest

from adapters_formats.codec import RobloxModelCodec
from licore.builds.nodes import to_nodes
from licore.builds.tree import Instance, Model, Prop

CODEC = RobloxModelCodec()


def _model(fmt: str) -> Model:
    props = {"Name": Prop("String", b"Boss"),
             "Tags": Prop("String", b"Enemy\x00Boss"),
             "AttributesSerialize": Prop("String", b"\x00\x00\x00\x00"),
             "Label": Prop("String", b"plain text")}
    return Model(fmt, [Instance("Part", "r1", props)])


@pytest.mark.parametrize("fmt", ["binary", "xml"])
def test_byte_properties_read_as_binary_string_and_plain_strings_stay_strings(
        fmt: str) -> None:
    data = CODEC.write(_model(fmt))
    props = CODEC.read(data).roots[0].properties
    assert props["Tags"] == Prop("BinaryString", b"Enemy\x00Boss")
    assert props["AttributesSerialize"] == Prop("BinaryString", b"\x00\x00\x00\x00")
    assert props["Label"] == Prop("String", b"plain text")
    node = to_nodes(CODEC.read(data))[0]["Properties"]
    assert node["Tags"] == {"type": "BinaryString", "value": "RW5lbXkAQm9zcw=="}


def test_a_binary_file_still_writes_back_byte_for_byte() -> None:
    data = CODEC.write(_model("binary"))
    assert CODEC.write(CODEC.read(data)) == data
