"""Both formats describe one tree: every corpus file and its XML twin read the same, and a
tree converted to the other format reads back the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters_formats.binary_reader import read_binary
from adapters_formats.binary_writer import write_binary
from adapters_formats.codec import RobloxModelCodec
from adapters_formats.xml_reader import read_xml
from adapters_formats.xml_writer import write_xml
from licore.builds.tree import Model
from tests.formats.corpus import BINARIES, label, twin
from tests.support.trees import canonical, twin_differences

PAIRS = [p for p in BINARIES if twin(p).exists()]


def test_every_binary_in_the_corpus_has_an_xml_twin() -> None:
    assert len(PAIRS) == len(BINARIES) > 40


# Where the corpus's two files really differ, found by reading both and checked by eye.
KNOWN = {
    # Studio writes its non-creatable services into binary places as bare `Instance`
    # placeholders, and leaves them out of XML places.
    "places": frozenset({"Instance"}),
}
DIFFERENCES = {
    # The two files were saved from two separate insertions of a part, at two places.
    "default-inserted-part": ["/Part.CFrame"],
}


@pytest.mark.parametrize("path", PAIRS, ids=label)
def test_the_binary_file_and_its_xml_twin_read_as_one_tree(path: Path) -> None:
    skip = KNOWN.get(path.parent.parent.name, frozenset())
    found = twin_differences(read_binary(path.read_bytes()), read_xml(twin(path).read_bytes()),
                             skip_root_classes=skip)
    expected = DIFFERENCES.get(path.parent.name, [])
    assert [f.split(":")[0] for f in found] == expected, found


@pytest.mark.parametrize("path", PAIRS, ids=label)
def test_a_tree_converted_to_the_other_format_reads_back_the_same(path: Path) -> None:
    from_binary = read_binary(path.read_bytes())
    assert canonical(read_xml(write_xml(from_binary))) == canonical(from_binary)
    from_xml = read_xml(twin(path).read_bytes())
    assert canonical(read_binary(write_binary(from_xml))) == canonical(from_xml)


@pytest.mark.parametrize("path", PAIRS, ids=label)
def test_the_codec_reads_by_content_and_writes_the_format_it_read(path: Path) -> None:
    codec = RobloxModelCodec()
    for data, fmt in ((path.read_bytes(), "binary"), (twin(path).read_bytes(), "xml")):
        model: Model = codec.read(data)
        assert model.format == fmt
        again = codec.read(codec.write(model))
        assert again.format == fmt
        assert canonical(again) == canonical(model)
