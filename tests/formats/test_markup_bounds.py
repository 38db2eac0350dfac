"""Issue 46, item 1: an upload's cost is linear in its size and bounded before anything is
kept. XML tags, attributes, attribute values and text, and the total they decode to, are
bounded while the document streams; the binary format's names and string values are held to
the same bounds (docs/instances.md). Each refusal goes through every reader: the upload check,
the full read and the source-only read a download uses. Memory is measured with tracemalloc,
with generous margins; nothing is timed."""

from __future__ import annotations

import contextlib
import struct
import tracemalloc
from collections.abc import Callable

import pytest

from adapters_formats import xml_reader
from adapters_formats.binary_bytes import write_refs
from adapters_formats.chunks import chunk_bytes, file_bytes
from adapters_formats.codec import RobloxModelCodec
from adapters_formats.model_limits import MAX_NAME_BYTES, MAX_VALUE_BYTES
from adapters_formats.xml_reader import MAX_ATTRIBUTES, MAX_MARKUP_BYTES
from licore.builds.errors import ModelFormatError

CODEC = RobloxModelCodec()
READERS = (CODEC.check, CODEC.read, CODEC.read_sources)


def _peak(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        with contextlib.suppress(ModelFormatError):
            fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def refused(data: bytes, reason: str) -> None:
    for read in READERS:
        with pytest.raises(ModelFormatError, match=reason):
            read(data)


def read_by_all(data: bytes) -> None:
    for read in READERS:
        read(data)


def folder(item_attributes: bytes = b"", text: bytes = b"F", extra: bytes = b"") -> bytes:
    return (b'<roblox version="4"><Item class="Folder" referent="RBX0"' + item_attributes
            + b'><Properties><string name="Name">' + text + b"</string></Properties>"
            + extra + b"</Item></roblox>")


def attributes(n: int, value: bytes = b"x") -> bytes:
    return b"".join(b' a%d="%s"' % (i, value) for i in range(n))


def test_the_million_attribute_item_is_refused_at_its_first_pieces() -> None:
    data = folder(attributes(1_000_000))  # 12 MB; it was stored, after 8 s and 343 MiB
    refused(data, "tag, comment or processing instruction is longer than")
    # Only the pieces fed before the refusal were ever decoded.
    assert _peak(lambda: CODEC.check(data)) < len(data) // 10


def test_attributes_on_one_element_up_to_the_bound_and_one_more() -> None:
    read_by_all(folder(attributes(MAX_ATTRIBUTES - 2)))  # class and referent are two
    refused(folder(attributes(MAX_ATTRIBUTES - 1)),
            f"more than {MAX_ATTRIBUTES} attributes")


def test_an_attribute_value_up_to_the_bound_and_one_character_more() -> None:
    read_by_all(folder(b' a="' + b"\xc3\xa9" * MAX_NAME_BYTES + b'"'))  # characters count
    refused(folder(b' a="' + b"x" * (MAX_NAME_BYTES + 1) + b'"'),
            "attribute value is longer than")


# The bound is on what is pending when a piece has been fed: markup is refused once that
# much of it has been read without its end, so none twice as long is ever read in full.
@pytest.mark.parametrize("markup", [
    b'<!--' + b"x" * 2 * MAX_MARKUP_BYTES + b"-->",
    b"<?licore " + b"x" * 2 * MAX_MARKUP_BYTES + b"?>",
    b"<Extra" + b" " * 2 * MAX_MARKUP_BYTES + b"/>",
], ids=["comment", "processing instruction", "tag"])
def test_markup_twice_the_bound_is_refused(markup: bytes) -> None:
    refused(folder(extra=markup), "longer than 65,536 bytes")


def test_markup_within_the_bound_is_read() -> None:
    read_by_all(folder(extra=b"<!--" + b"x" * (MAX_MARKUP_BYTES - 100) + b"-->"))


def test_text_is_not_markup_an_element_holds_up_to_the_value_bound() -> None:
    source = b"-- " + b"x" * (MAX_VALUE_BYTES - 3)
    script = (b'<roblox><Item class="Script" referent="RBX0"><Properties>'
              b'<ProtectedString name="Source"><![CDATA[' + source
              + b"]]></ProtectedString></Properties></Item></roblox>")
    (found,) = CODEC.check(script).scripts
    assert len(found.source) == MAX_VALUE_BYTES
    refused(script.replace(b"-- ", b"-- x"), "text is longer than")


def test_the_total_decoded_is_bounded_while_the_document_streams(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xml_reader, "MAX_TOTAL_DECODED", 1_000_000)  # the real one is 256 MiB
    items = b"".join(b'<Item class="Folder"><Properties><string name="Name">'
                     + b"n" * 1000 + b"</string></Properties></Item>" for _ in range(1_001))
    data = b"<roblox>" + items + b"</roblox>"
    with pytest.raises(ModelFormatError, match="come to more than 1,000,000 characters"):
        CODEC.check(data)


def _string(text: bytes) -> bytes:
    return struct.pack("<I", len(text)) + text


def binary_folder(class_name: bytes = b"Folder", property_name: bytes = b"Name",
                  value: bytes = b"F") -> bytes:
    inst = chunk_bytes(b"INST", struct.pack("<I", 0) + _string(class_name) + b"\x00"
                       + struct.pack("<I", 1) + write_refs([0]))
    prop = chunk_bytes(b"PROP", struct.pack("<I", 0) + _string(property_name) + b"\x01"
                       + _string(value))
    prnt = chunk_bytes(b"PRNT", b"\x00" + struct.pack("<I", 1) + write_refs([0])
                       + write_refs([-1]))
    return file_bytes(1, 1, [inst, prop, prnt])


def test_binary_class_and_property_names_are_held_to_the_name_bound() -> None:
    read_by_all(binary_folder(class_name=b"F" * MAX_NAME_BYTES))
    read_by_all(binary_folder(property_name=b"P" * MAX_NAME_BYTES))
    refused(binary_folder(class_name=b"F" * (MAX_NAME_BYTES + 1)), "more than 4,096")
    refused(binary_folder(property_name=b"P" * (MAX_NAME_BYTES + 1)), "more than 4,096")


def test_a_binary_string_value_is_held_to_the_value_bound() -> None:
    # A script's source, which the source-only reader reads too.
    script = b"Script", b"Source"
    read_by_all(binary_folder(*script, value=b"v" * MAX_VALUE_BYTES))
    refused(binary_folder(*script, value=b"v" * (MAX_VALUE_BYTES + 1)),
            f"more than {MAX_VALUE_BYTES:,}")
