"""Reading a build as its script sources only (the buyer-copy path): the same scripts and
paths as the whole tree, a rewrite that changes those sources and nothing else, and the same
refusals of hostile input, in bounded memory."""

from __future__ import annotations

import contextlib
import struct
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters_formats.binary_bytes import write_refs
from adapters_formats.binary_reader import MAX_DEPTH
from adapters_formats.chunks import chunk_bytes, file_bytes
from adapters_formats.codec import RobloxModelCodec
from adapters_formats.xml_sources import read_xml_sources
from licore.builds.errors import ModelFormatError
from licore.builds.nodes import to_nodes
from licore.builds.tree import Model, set_source, source_of
from tests.formats.corpus import BINARIES, DAMAGE, damaged, twin
from tests.support.hostile_models import zstd_bomb
from tests.support.models import product_model

CODEC = RobloxModelCodec()
WITH_SCRIPTS = [p for p in BINARIES if b"Source" in p.read_bytes()][:6]
FILES = WITH_SCRIPTS + [twin(p) for p in WITH_SCRIPTS if twin(p).exists()]
SMALL = [p for p in FILES if p.stat().st_size < 20_000]
EDIT = b"\n-- edited ]]> \r\n"


def _scripts(model: Model) -> list[tuple[str, bytes]]:
    return sorted((path, source_of(s)) for path, s in model.scripts())


def _cases() -> list[tuple[str, bytes]]:
    cases = [(p.name, p.read_bytes()) for p in FILES]
    for fmt in ("binary", "xml"):
        model = product_model()
        model.format = fmt
        cases.append((f"product.{fmt}", CODEC.write(model)))
    return cases


@pytest.mark.parametrize(("name", "data"), _cases(), ids=lambda v: v if isinstance(v, str)
                         else "")
def test_sources_and_their_rewrite_agree_with_the_whole_tree(name: str, data: bytes) -> None:
    whole = CODEC.read(data)
    build = CODEC.read_sources(data)
    assert build.format == whole.format
    assert sorted((s.path, s.source) for s in build.scripts) == _scripts(whole)
    assert CODEC.read(CODEC.write_sources(build)).roots  # unchanged: still a model
    for found in build.scripts:
        found.source += EDIT
    for _, script in whole.scripts():
        set_source(script, source_of(script) + EDIT)
    assert to_nodes(CODEC.read(CODEC.write_sources(build))) == to_nodes(
        CODEC.read(CODEC.write(whole)))


def test_an_untouched_binary_build_passes_through_as_its_chunks() -> None:
    data = CODEC.write(product_model())
    assert CODEC.write_sources(CODEC.read_sources(data)) == data


def test_xml_sources_refuse_a_document_type_declaration() -> None:
    data = b'<?xml version="1.0"?><!DOCTYPE roblox [<!ENTITY a "aaaa">]><roblox></roblox>'
    with pytest.raises(ModelFormatError, match="document type"):
        read_xml_sources(data)  # the codec's format check refuses it even earlier


def _scripts_linked(pairs: list[tuple[int, int]], count: int) -> bytes:
    """`count` Scripts, each with a Source, with the (child, parent) links given."""
    name, prop = b"Script", b"Source"
    inst = chunk_bytes(b"INST", struct.pack("<II", 0, len(name)) + name + b"\x00"
                       + struct.pack("<I", count) + write_refs(list(range(count))))
    source = chunk_bytes(b"PROP", struct.pack("<II", 0, len(prop)) + prop + b"\x01"
                         + struct.pack("<I", 0) * count)
    prnt = chunk_bytes(b"PRNT", b"\x00" + struct.pack("<I", len(pairs))
                       + write_refs([c for c, _ in pairs]) + write_refs([p for _, p in pairs]))
    return file_bytes(1, count, [inst, source, prnt])


def test_binary_sources_refuse_a_cycle_and_excess_depth_on_a_scripts_path() -> None:
    assert len(CODEC.read_sources(_scripts_linked([(0, -1), (1, 0)], 2)).scripts) == 2
    with pytest.raises(ModelFormatError, match="deeper"):
        CODEC.read_sources(_scripts_linked([(0, 1), (1, 0)], 2))
    depth = MAX_DEPTH + 1
    with pytest.raises(ModelFormatError, match="deeper"):
        CODEC.read_sources(_scripts_linked(
            [(0, -1)] + [(i, i - 1) for i in range(1, depth)], depth))


def test_a_zstandard_bomb_is_refused_in_bounded_memory() -> None:
    data = zstd_bomb(claimed=1000)
    tracemalloc.start()
    try:
        with pytest.raises(ModelFormatError):
            CODEC.read_sources(data)
        assert tracemalloc.get_traced_memory()[1] < 16 * 1024 * 1024
    finally:
        tracemalloc.stop()


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(SMALL or FILES), st.integers(0, 10**6), st.integers(0, 255),
       st.sampled_from(DAMAGE))
def test_any_damage_gives_sources_or_model_format_error(
        path: Path, where: int, byte: int, how: str) -> None:
    with contextlib.suppress(ModelFormatError):
        CODEC.read_sources(damaged(path.read_bytes(), where, byte, how))
