"""Issue 13, items 3 and 13: a hostile or merely large XML model must not make the reader
allocate many times the file. Peak Python heap growth is measured with tracemalloc, with
generous margins; nothing here times anything."""

from __future__ import annotations

import contextlib
import tracemalloc
from collections.abc import Callable

import pytest

from adapters_formats import xml_reader
from adapters_formats.xml_reader import read_xml
from licore.builds.errors import ModelFormatError


def _peak(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        with contextlib.suppress(ModelFormatError):
            fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_deeply_nested_items_are_refused_before_a_tree_is_built() -> None:
    depth = 50_000  # the file had 2,000,000; the bound is the same at any depth
    data = (b"<roblox>" + b'<Item class="Folder">' * depth + b"</Item>" * depth
            + b"</roblox>")
    with pytest.raises(ModelFormatError, match="nest deeper"):
        read_xml(data)
    assert _peak(lambda: read_xml(data)) < 4 * len(data)


def test_too_many_tiny_elements_are_refused_in_the_first_pass(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xml_reader, "MAX_ELEMENTS", 300_000)  # the real bound is 5,000,000
    data = b"<roblox>" + b"<a/>" * (xml_reader.MAX_ELEMENTS + 1) + b"</roblox>"
    with pytest.raises(ModelFormatError, match="XML elements"):
        read_xml(data)
    assert _peak(lambda: read_xml(data)) < 2 * len(data)


def test_a_legal_file_of_tiny_property_elements_reads_within_a_small_multiple() -> None:
    props = b"".join(b'<bool name="b%d">true</bool>' % i for i in range(20))
    item = b'<Item class="Folder"><Properties>' + props + b"</Properties></Item>"
    data = b"<roblox>" + item * 5_000 + b"</roblox>"  # 100,000 property elements
    skeleton = read_xml(data, skeleton=True)
    assert len(skeleton.roots) == 5_000 and not skeleton.roots[0].properties
    # Every element object the old reader built stayed alive at once (20 to 30 times the
    # file); now only the instances and what they keep do.
    assert _peak(lambda: read_xml(data, skeleton=True)) < 3 * len(data)
    assert _peak(lambda: read_xml(data)) < 10 * len(data)


def test_a_huge_property_value_is_refused() -> None:
    value = b'<Weird name="w">' + b"<p/>" * 20_000 + b"</Weird>"
    data = (b'<roblox><Item class="Folder"><Properties>' + value
            + b"</Properties></Item></roblox>")
    with pytest.raises(ModelFormatError, match="property value holds more"):
        read_xml(data)
