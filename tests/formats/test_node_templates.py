"""A version's node template (licore.builds.template): a buyer's copy's sources spliced
into it give byte for byte the nodes the whole copy gives (`nodes_json` of the copy read
whole, the way every cold `/update` made them before templates), on the real files of the
shared corpus in both formats and on built models, in both forms."""

from __future__ import annotations

import hashlib

import pytest

from adapters_formats.codec import RobloxModelCodec
from licore.builds.nodes import NODES_REVISION, nodes_json
from licore.builds.template import (
    NodesTemplate,
    TemplateUnusable,
    make_template,
    marker_prefix,
)
from licore.builds.tree import Instance, Model, Prop
from tests.formats.corpus import BINARIES, twin
from tests.support.models import PLACEHOLDER, product_model, script
from tests.support.shared import CORPUS

CODEC = RobloxModelCodec()
WITH_SCRIPTS = [p for p in BINARIES if b"Source" in p.read_bytes()]
CORPUS_FILES = WITH_SCRIPTS + [twin(p) for p in WITH_SCRIPTS if twin(p).exists()]


def _edits(i: int, source: bytes, odd: bool) -> bytes:
    """What a buyer's copy may do to a script: the key put in, text grown and shrunk, line
    ends XML must keep, a CDATA end, nothing left; with `odd`, the first script becomes
    text that is not UTF-8 or holds a character XML cannot carry."""
    kinds = [
        source.replace(PLACEHOLDER.encode(), b"lk_0123456789abcdef"),
        source + b"\n-- edited ]]> \r\n\xc3\xa9 \xef\xbf\xbd \"quoted\" \\ \t",
        b"-- minified\r\nreturn 1",
        b"",
    ]
    if odd and i == 0:
        return source + (b"\xff\xfe not UTF-8" if len(source) % 2 else b"\x01 control")
    return kinds[i % len(kinds)]


def _cases() -> list[tuple[str, bytes]]:
    cases = [(p.name, p.read_bytes()) for p in CORPUS_FILES]
    for fmt in ("binary", "xml"):
        model = product_model(extra=3)
        model.format = fmt
        cases.append((f"product.{fmt}", CODEC.write(model)))
    return cases


def _assert_spliced_as_whole(data: bytes, compact: bool, odd: bool = False) -> None:
    salt = hashlib.sha256(data).hexdigest()
    stored = make_template(CODEC, data, compact, salt).to_bytes()
    template = NodesTemplate.from_bytes(stored)
    assert template is not None
    build = CODEC.read_sources(data)
    for i, found in enumerate(build.scripts):
        found.source = _edits(i, found.source, odd)
    copy = CODEC.write_sources(build)
    whole = nodes_json(CODEC.read(copy), compact)
    spliced = template.splice(build.scripts, from_build=True)
    # Odd text is left to the whole copy: the codec may store it under another type.
    assert spliced == (None if odd and build.scripts else whole)
    paths = [s.path for s in build.scripts]
    from_copy = template.splice(CODEC.read_sources(copy).scripts, from_build=False)
    assert from_copy == (whole if len(set(paths)) == len(paths) and not odd else None)


@pytest.mark.parametrize(("name", "data"), _cases(),
                         ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("compact", [False, True], ids=["tagged", "compact"])
def test_spliced_sources_give_the_nodes_of_the_whole_copy(name: str, data: bytes,
                                                          compact: bool) -> None:
    _assert_spliced_as_whole(data, compact)


@pytest.mark.parametrize("fmt", ["binary", "xml"])
@pytest.mark.parametrize("compact", [False, True], ids=["tagged", "compact"])
def test_a_copy_with_text_xml_cannot_carry_is_made_whole(fmt: str, compact: bool) -> None:
    for extra in (0, 1):  # the first script's length picks which kind of odd text
        model = product_model(extra=extra)
        model.format = fmt
        _assert_spliced_as_whole(CODEC.write(model), compact, odd=True)


def test_the_corpus_is_there_with_scripts_in_both_formats() -> None:
    assert len(WITH_SCRIPTS) >= 3
    assert any(p.suffix in (".rbxmx", ".rbxlx") for p in CORPUS_FILES)


def _repeated_paths(fmt: str) -> bytes:
    """Two scripts of one path and different classes, as Studio allows."""
    scripts = [script("Main", "print('server')\n", "Script", "a"),
               script("Main", "print('client')\n", "LocalScript", "b"),
               script("Main", "return {}\n", "ModuleScript", "c"),
               script("Other", "print(1)\n", "Script", "d")]
    part = Instance("Part", "p", {"Name": Prop("String", b"Main")})
    # In an order other than by class, as a binary file's source columns list them.
    children = [scripts[1], part, scripts[3], scripts[2], scripts[0]]
    root = Instance("Folder", "r", {"Name": Prop("String", b"Game")}, children)
    return CODEC.write(Model(fmt, [root]))


@pytest.mark.parametrize("fmt", ["binary", "xml"])
def test_scripts_of_one_path_are_told_apart_by_their_place_in_the_build(fmt: str) -> None:
    data = _repeated_paths(fmt)
    _assert_spliced_as_whole(data, compact=False)
    template = make_template(CODEC, data, False, "salt")
    build = CODEC.read_sources(data)
    assert template.splice(build.scripts, from_build=False) is None  # cannot tell from a copy
    assert template.splice(build.scripts[1:], from_build=True) is None  # not this build's


def test_a_template_of_another_node_revision_is_made_again() -> None:
    data = CODEC.write(product_model())
    stored = make_template(CODEC, data, True, "salt").to_bytes()
    assert NodesTemplate.from_bytes(stored) is not None
    other = stored.replace(f'"revision":"{NODES_REVISION}"'.encode(), b'"revision":"0"', 1)
    assert other != stored and NodesTemplate.from_bytes(other) is None
    assert NodesTemplate.from_bytes(b"[]") is None


# The nodes' text of a fixed model under the current revision. A change to what `to_nodes`
# writes fails here: give NODES_REVISION a new value (stored templates are then remade) and
# record the new digests.
PINNED = {
    "1": ("1fc08db25cef2c3d", "080d01ba1c98662c"),
}


def test_the_node_revision_names_the_node_text() -> None:
    """Over a place holding every class Studio had (and so most property types)."""
    model = CODEC.read((CORPUS / "places" / "all-instances-415" / "binary.rbxl").read_bytes())
    digests = tuple(hashlib.sha256(nodes_json(model, compact)).hexdigest()[:16]
                    for compact in (False, True))
    assert PINNED[NODES_REVISION] == digests, digests


def test_a_build_holding_a_marker_is_refused_rather_than_spliced_wrongly() -> None:
    """The salt is the build's SHA-256, which the build cannot hold; were a marker's text in
    it anyway, the template is refused (buyers' nodes are then made whole), never cut at the
    seller's text."""
    model = product_model()
    model.roots[0].children.append(Instance("StringValue", "v", {
        "Name": Prop("String", b"Tricky"),
        "Value": Prop("String", f"{marker_prefix('salt')}000000000".encode())}))
    with pytest.raises(TemplateUnusable):
        make_template(CODEC, CODEC.write(model), True, "salt")
