"""The XML model reader and writer: the corpus, sources kept byte for byte, unknown types,
any tree of every type, and hostile documents refused in bounded time and memory."""

from __future__ import annotations

import contextlib
import math
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters_formats.xml_reader import read_xml
from adapters_formats.xml_writer import write_xml
from licore.builds.errors import ModelFormatError
from licore.builds.tree import Instance, Model, Prop, Raw
from tests.formats.corpus import DAMAGE, damaged, label
from tests.formats.strategies import models
from tests.support.shared import CORPUS
from tests.support.trees import canonical

XMLS = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".rbxmx", ".rbxlx"))


@pytest.mark.parametrize("path", XMLS, ids=label)
def test_corpus_file_reads_and_writes_back_to_the_same_tree(path: Path) -> None:
    model = read_xml(path.read_bytes())
    assert model.roots and model.format == "xml"
    written = write_xml(model)
    again = read_xml(written)
    assert canonical(again) == canonical(model)
    assert write_xml(again) == written


def _source_model(source: bytes) -> Model:
    return Model("xml", [Instance("Script", "s", {
        "Name": Prop("String", b"Main"), "Source": Prop("ProtectedString", source)})])


@pytest.mark.parametrize("source", [
    b"print('a]]>b')\n-- ]]> twice ]]>]]>",
    b"\r\nlocal x = 1\r\n\r\n",
    b"   leading and trailing spaces \t \n\n",
    "-- \u00fcnic\u00f6de \U0001f600 and <tags> & ampersands\n".encode(),
    b"",
    b"a\rb\r\rc",
])
def test_a_script_source_round_trips_byte_for_byte(source: bytes) -> None:
    back = read_xml(write_xml(_source_model(source)))
    assert back.roots[0].properties["Source"].value == source


def test_strings_xml_cannot_carry_go_as_base64_and_come_back() -> None:
    odd = b"\x00\x01 bell \x07 and \xff not utf-8"
    model = Model("xml", [Instance("StringValue", "v", {"Value": Prop("String", odd)})])
    text = write_xml(model)
    assert b"<BinaryString" in text
    assert canonical(read_xml(text)) == canonical(model)


def test_unknown_property_types_are_kept_and_written_back() -> None:
    path = CORPUS / "edge-cases" / "xml-unknown-type" / "xml.rbxmx"
    model = read_xml(path.read_bytes())
    value = model.roots[0].properties["hello"].value
    assert isinstance(value, Raw) and value.type_id == "Baloney"
    assert b"I really hope Roblox never makes" in value.data
    assert read_xml(write_xml(model)).roots[0].properties["hello"].value == value
    # A binary-only column survives a trip through XML too.
    raw = Raw("binary", "42", b"\x00\x01\x02", 1, 3)
    carried = Model("xml", [Instance("Folder", "f", {"Mystery": Prop("Raw", raw)})])
    assert read_xml(write_xml(carried)).roots[0].properties["Mystery"].value == raw


def test_documented_type_elements_read_as_their_values() -> None:
    doc = b"""<roblox version="4"><Item class="Part" referent="RBX1"><Properties>
      <Color3uint8 name="C8">4284497952</Color3uint8>
      <Faces name="F"><faces>42</faces></Faces>
      <UDim2 name="U"><XS>0.15625</XS><XO>1337</XO><YS>-123</YS><YO>456</YO></UDim2>
      <ColorSequence name="CS">0 0.376471 0.25098 0.12549 0
        1 0.0196078 0.0392157 0.0588235 0 </ColorSequence>
      <NumberRange name="NR">0.15625 1337 </NumberRange>
      <float name="Inf">INF</float><double name="Nan">NAN</double>
      <UniqueId name="Id">0badf00dc0ffee4200133700deadbeef</UniqueId>
      <Ref name="Dangling">RBXNOWHERE</Ref><Ref name="Self">RBX1</Ref>
      <Font name="FontFace"><Family><url>rbxasset://fonts/families/Arial.json</url></Family>
        <Weight>700</Weight><Style>Italic</Style></Font>
      <PhysicalProperties name="P"><CustomPhysics>true</CustomPhysics><Density>1</Density>
        <Friction>2</Friction><Elasticity>1</Elasticity><FrictionWeight>0.15625</FrictionWeight>
        <ElasticityWeight>1.25</ElasticityWeight><AcousticAbsorption>1</AcousticAbsorption>
      </PhysicalProperties>
    </Properties></Item></roblox>"""
    props = read_xml(doc).roots[0].properties
    assert props["C8"].value == (96, 64, 32)
    assert props["F"].value == 42
    assert props["U"].value == (0.15625, 1337, -123.0, 456)
    assert props["CS"].value[1][0] == 1.0 and len(props["CS"].value) == 2
    assert props["NR"].value == (0.15625, 1337.0)
    assert props["Inf"].value == math.inf and math.isnan(props["Nan"].value)
    assert props["Id"].value == (0xDEADBEEF, 0x00133700, 0x0BADF00DC0FFEE42)
    assert props["Dangling"].value is None  # as Studio reads a reference to nothing
    assert props["Self"].value == "RBX1"
    assert props["FontFace"].value == ("rbxasset://fonts/families/Arial.json", 700, 1, "")
    assert props["P"].value == (1.0, 2.0, 1.0, 0.15625, 1.25, 1.0)


@settings(max_examples=150, deadline=None)
@given(models("xml"))
def test_any_tree_written_as_xml_reads_back_the_same(model: Model) -> None:
    assert canonical(read_xml(write_xml(model))) == canonical(model)


def _refused_quickly_and_small(data: bytes, reason: str) -> None:
    tracemalloc.start()
    start = time.monotonic()
    try:
        with pytest.raises(ModelFormatError, match=reason):
            read_xml(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - start < 30  # bounded, not a speed check: a bomb would not end
    assert peak < 64 * 1024 * 1024


LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol">
<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
<!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
<!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
<!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
<!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
<!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">]>
<roblox version="4"><Item class="StringValue" referent="R"><Properties>
<string name="Value">&lol9;</string></Properties></Item></roblox>"""

EXTERNAL = b"""<?xml version="1.0"?>
<!DOCTYPE roblox [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<roblox version="4"><Item class="StringValue" referent="R"><Properties>
<string name="Value">&secret;</string></Properties></Item></roblox>"""


def test_entity_expansion_and_external_entities_are_refused() -> None:
    _refused_quickly_and_small(LAUGHS, "document type")
    _refused_quickly_and_small(EXTERNAL, "document type")


def test_deep_nesting_is_refused() -> None:
    depth = 100_000
    doc = (b'<roblox version="4">' + b'<Item class="Folder">' * depth
           + b"</Item>" * depth + b"</roblox>")
    _refused_quickly_and_small(doc, "deeper")


@pytest.mark.parametrize(("doc", "reason"), [
    (b'<roblox version="4"><Item class="Folder" referent="A"><Properties>', "well-formed"),
    (b"<notroblox/>", "root"),
    (b'<roblox><Item class="A" referent="X"/><Item class="B" referent="X"/></roblox>', "twice"),
    (b'<roblox><Item referent="X"/></roblox>', "no class"),
    (b'<roblox><Item class="A"><Properties><int name="N">12x</int></Properties></Item>'
     b"</roblox>", "whole number"),
    (b'<roblox><Item class="A"><Properties><SharedString name="S">nope</SharedString>'
     b"</Properties></Item></roblox>", "shared string"),
    (b'<roblox><Item class="A"><Properties><BinaryString name="B">!!!</BinaryString>'
     b"</Properties></Item></roblox>", "base64"),
])
def test_malformed_documents_are_refused_with_a_reason(doc: bytes, reason: str) -> None:
    with pytest.raises(ModelFormatError, match=reason):
        read_xml(doc)


SMALL_XMLS = [p for p in XMLS if p.stat().st_size < 30_000]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SMALL_XMLS), st.integers(0, 10**6), st.integers(0, 255),
       st.sampled_from(DAMAGE))
def test_any_damage_gives_a_model_or_model_format_error(
        path: Path, where: int, byte: int, how: str) -> None:
    with contextlib.suppress(ModelFormatError):
        read_xml(damaged(path.read_bytes(), where, byte, how))
