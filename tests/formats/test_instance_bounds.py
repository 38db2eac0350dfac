"""Per-instance bounds (docs/instances.md): at most `MAX_PROPERTIES` properties and
`MAX_TAGS` tags on one instance, in both formats, through every reader (the upload check
and the full read). An XML item with a million properties was read whole (17.7 s, 367 MiB,
issue 30); it is now refused by the first pass, at the first property past the bound."""

from __future__ import annotations

import struct

import pytest

from adapters_formats.binary_bytes import write_refs
from adapters_formats.binary_check import check_binary
from adapters_formats.binary_reader import MAX_PROPERTIES, MAX_TAGS, read_binary
from adapters_formats.chunks import chunk_bytes, file_bytes
from adapters_formats.codec import RobloxModelCodec
from adapters_formats.xml_reader import read_xml
from licore.builds.errors import ModelFormatError

CODEC = RobloxModelCodec()


def xml_item(properties: int, tags: int = 0) -> bytes:
    props = "".join(f'<bool name="P{i}">true</bool>' for i in range(properties))
    if tags:
        import base64

        names = b"\0".join(b"t%d" % i for i in range(tags))
        props += f'<BinaryString name="Tags">{base64.b64encode(names).decode()}</BinaryString>'
    return (f'<roblox version="4"><Item class="Folder" referent="RBX0"><Properties>'
            f'<string name="Name">F</string>{props}</Properties></Item></roblox>').encode()


def _string(text: bytes) -> bytes:
    return struct.pack("<I", len(text)) + text


def binary_folder(properties: int, tags: int = 0) -> bytes:
    name = b"Folder"
    inst = chunk_bytes(b"INST", struct.pack("<I", 0) + _string(name) + b"\x00"
                       + struct.pack("<I", 1) + write_refs([0]))
    chunks = [inst, chunk_bytes(b"PROP", struct.pack("<I", 0) + _string(b"Name") + b"\x01"
                                + _string(b"F"))]
    for i in range(properties):
        chunks.append(chunk_bytes(b"PROP", struct.pack("<I", 0) + _string(b"P%d" % i)
                                  + b"\x02" + b"\x01"))
    if tags:
        names = b"\0".join(b"t%d" % i for i in range(tags))
        chunks.append(chunk_bytes(b"PROP", struct.pack("<I", 0) + _string(b"Tags") + b"\x01"
                                  + _string(names)))
    prnt = chunk_bytes(b"PRNT", b"\x00" + struct.pack("<I", 1) + write_refs([0])
                       + write_refs([-1]))
    return file_bytes(1, 1, [*chunks, prnt])


def refused(data: bytes, reason: str) -> None:
    for read in (CODEC.check, CODEC.read):
        with pytest.raises(ModelFormatError, match=reason):
            read(data)


@pytest.mark.parametrize("make", [xml_item, binary_folder], ids=["xml", "binary"])
def test_properties_up_to_the_bound_are_read_and_one_more_is_refused(make: object) -> None:
    assert callable(make)
    within = CODEC.read(make(MAX_PROPERTIES - 1))  # Name is one of them
    (folder,) = within.roots
    assert len(folder.properties) == MAX_PROPERTIES
    assert CODEC.check(make(MAX_PROPERTIES - 1)).instances == 1
    refused(make(MAX_PROPERTIES), f"more than {MAX_PROPERTIES} properties")


@pytest.mark.parametrize("make", [xml_item, binary_folder], ids=["xml", "binary"])
def test_tags_up_to_the_bound_are_read_and_one_more_is_refused(make: object) -> None:
    assert callable(make)
    (folder,) = CODEC.read(make(0, MAX_TAGS)).roots
    assert folder.properties["Tags"].value.count(b"\0") == MAX_TAGS - 1
    CODEC.check(make(0, MAX_TAGS))
    refused(make(0, MAX_TAGS + 1), f"more than {MAX_TAGS} tags")


def test_a_million_properties_on_one_xml_item_is_refused_in_the_first_pass() -> None:
    data = xml_item(1_000_000)
    for skeleton in (True, False):
        with pytest.raises(ModelFormatError, match="properties"):
            read_xml(data, skeleton=skeleton)


def test_binary_readers_agree() -> None:
    data = binary_folder(MAX_PROPERTIES)
    for read in (check_binary, read_binary):
        with pytest.raises(ModelFormatError, match="properties"):
            read(data)
