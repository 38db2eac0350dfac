"""The upload's model check (`ModelCodec.check`): it refuses exactly what a full read
refuses, finds the same scripts in the same order, and keeps memory a small multiple of the
file where the full read keeps every value. Memory is measured with tracemalloc, against
generous bounds; nothing here times anything."""

from __future__ import annotations

import contextlib
import random
import struct
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import lz4.block
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters_formats.binary_bytes import write_refs
from adapters_formats.binary_check import check_binary
from adapters_formats.binary_columns import CODECS, DEFAULTS, Context
from adapters_formats.binary_reader import MAX_DEPTH, read_binary
from adapters_formats.chunks import MAX_TOTAL_DECOMPRESSED, chunk_bytes, file_bytes
from adapters_formats.codec import RobloxModelCodec
from licore.builds.errors import ModelFormatError
from licore.builds.tree import Instance, Model, Prop, source_of
from tests.formats.corpus import BINARIES, DAMAGE, damaged, twin
from tests.support.hostile_models import deep_chain, folders, referent_cycle, zstd_bomb
from tests.support.models import product_model

CODEC = RobloxModelCodec()
FILES = BINARIES + [twin(p) for p in BINARIES if twin(p).exists()]
SMALL = [p for p in FILES if p.stat().st_size < 20_000]


def _refusal(fn: Callable[[], object]) -> str | None:
    try:
        fn()
    except ModelFormatError as error:
        return error.reason
    return None


def _same_verdict(data: bytes) -> None:
    """The check refuses the file exactly when the full read does, and otherwise finds
    what the full read finds."""
    full = _refusal(lambda: CODEC.read(data))
    checked = _refusal(lambda: CODEC.check(data))
    assert (full is None) == (checked is None), (full, checked)
    if full is None:
        model = CODEC.read(data)
        check = CODEC.check(data)
        assert check.format == model.format
        assert check.instances == sum(1 for _ in model.walk())
        assert [(s.path, s.name, s.source) for s in check.scripts] == [
            (path, s.name, source_of(s)) for path, s in model.scripts()]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_corpus_file_checks_as_it_reads(path: Path) -> None:
    _same_verdict(path.read_bytes())


@pytest.mark.parametrize("fmt", ["binary", "xml"])
def test_a_product_model_checks_with_its_scripts_in_tree_order(fmt: str) -> None:
    data = CODEC.write(product_model(fmt, extra=3))
    check = CODEC.check(data)
    assert [s.path for s in check.scripts] == [
        "Product/LicenseCheck", "Product/Greeter", "Product/Extra0", "Product/Extra1",
        "Product/Extra2"]
    assert check.format == fmt and check.instances == 8
    _same_verdict(data)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SMALL), st.integers(0, 10**6), st.integers(0, 255),
       st.sampled_from(DAMAGE))
def test_damage_is_refused_by_the_check_exactly_when_by_the_full_read(
        path: Path, where: int, byte: int, how: str) -> None:
    _same_verdict(damaged(path.read_bytes(), where, byte, how))


def _column(type_id: int, values: list[object], cut: int = 0, extra: bytes = b"") -> bytes:
    """Two Parts with one property column of this type, its last `cut` bytes removed or
    `extra` bytes added."""
    name = b"Prop"
    body = CODECS[type_id][2](values, Context())
    prop = chunk_bytes(b"PROP", struct.pack("<II", 0, len(name)) + name + bytes([type_id])
                       + body[:len(body) - cut] + extra)
    inst = chunk_bytes(b"INST", struct.pack("<II", 0, 4) + b"Part\x00"
                       + struct.pack("<I", 2) + write_refs([0, 1]))
    return file_bytes(1, 2, [inst, prop, _roots(2)])


def _roots(count: int) -> bytes:
    return chunk_bytes(b"PRNT", b"\x00" + struct.pack("<I", count)
                       + write_refs(list(range(count))) + write_refs([-1] * count))


@pytest.mark.parametrize("type_id", sorted(set(CODECS) - {0x1C}), ids=lambda t: f"{t:#04x}")
def test_each_column_type_is_checked_as_it_reads_whole_long_and_short(type_id: int) -> None:
    values = [DEFAULTS[type_id]] * 2
    whole = _column(type_id, values)
    assert CODEC.check(whole).instances == 2
    _same_verdict(whole)
    _same_verdict(_column(type_id, values, extra=b"\x00"))
    short = _column(type_id, values, cut=1)
    with pytest.raises(ModelFormatError):
        CODEC.check(short)
    _same_verdict(short)


def test_a_cframe_with_an_unknown_rotation_id_is_refused_by_both() -> None:
    body = bytes([0x01, 0x01]) + bytes(24)  # 1 would be +X for both axes: no rotation
    name = b"CFrame"
    prop = chunk_bytes(b"PROP", struct.pack("<II", 0, len(name)) + name + b"\x10" + body)
    inst = chunk_bytes(b"INST", struct.pack("<II", 0, 4) + b"Part\x00"
                       + struct.pack("<I", 2) + write_refs([0, 1]))
    data = file_bytes(1, 2, [inst, prop, _roots(2)])
    with pytest.raises(ModelFormatError, match="rotation id"):
        CODEC.check(data)
    _same_verdict(data)


def _twice_inst() -> bytes:
    inst = chunk_bytes(b"INST", struct.pack("<II", 0, 6) + b"Folder\x00"
                       + struct.pack("<I", 2) + write_refs([3, 3]))
    return file_bytes(1, 2, [inst, _roots(0)])


def _lz4_bomb() -> bytes:
    bomb = lz4.block.compress(bytes(8 * 1024 * 1024), store_size=False)
    chunk = struct.pack("<4sIII", b"INST", len(bomb), MAX_TOTAL_DECOMPRESSED + 1, 0) + bomb
    return file_bytes(1, 1, [chunk])


def _sparse_twice() -> bytes:
    inst = chunk_bytes(b"INST", struct.pack("<II", 0, 6) + b"Folder\x00"
                       + struct.pack("<I", 3) + write_refs([10**6, 7, 10**6]))
    return file_bytes(1, 3, [inst, _roots(0)])


def _corrupt_ignored_chunk() -> bytes:
    """A SIGN chunk (which the reader ignores) whose stored payload does not inflate."""
    garbage = b"\xff" * 8
    sign = struct.pack("<4sIII", b"SIGN", len(garbage), 100, 0) + garbage
    return file_bytes(0, 0, [sign, _roots(0)])


HOSTILE: dict[str, tuple[Callable[[], bytes], str]] = {
    "an ignored chunk that does not inflate": (_corrupt_ignored_chunk, "decompress"),
    "cycle": (referent_cycle, "cycle"),
    "too deep": (lambda: deep_chain(MAX_DEPTH + 1), "deeper"),
    "referent twice": (_twice_inst, "twice"),
    "sparse referent twice": (_sparse_twice, "twice"),
    "zstd bomb": (zstd_bomb, "decompress|size"),
    "zstd bomb, honest header": (lambda: zstd_bomb(claimed=200 * 1024 * 1024), "ratio"),
    "lz4 bomb": (_lz4_bomb, "limit"),
    "unknown parent": (lambda: folders([(0, 5)], 1), "unknown parent"),
    "repeated child": (lambda: folders([(0, -1), (0, -1)], 1), "repeated child"),
    "no PRNT": (lambda: file_bytes(0, 0, []), "no PRNT"),
    "two PRNT": (lambda: file_bytes(0, 0, [_roots(0), _roots(0)]), "more than one PRNT"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_binary_files_are_refused_by_the_check_in_bounded_memory(name: str) -> None:
    make, reason = HOSTILE[name]
    data = make()
    with pytest.raises(ModelFormatError, match=reason):
        CODEC.check(data)
    with pytest.raises(ModelFormatError):
        read_binary(data)
    assert _peak(lambda: CODEC.check(data)) < 16 * 1024 * 1024


def test_the_depth_limit_itself_passes_the_check() -> None:
    assert check_binary(deep_chain(MAX_DEPTH)).instances == MAX_DEPTH


def test_hostile_xml_is_refused_by_the_check() -> None:
    depth = 50_000
    nested = (b"<roblox>" + b'<Item class="Folder">' * depth + b"</Item>" * depth
              + b"</roblox>")
    with pytest.raises(ModelFormatError, match="nest deeper"):
        CODEC.check(nested)
    dtd = b'<?xml version="1.0"?><!DOCTYPE roblox [<!ENTITY a "aaaa">]><roblox></roblox>'
    with pytest.raises(ModelFormatError):
        CODEC.check(dtd)
    twice = b'<roblox><Item class="A" referent="x"/><Item class="B" referent="x"/></roblox>'
    with pytest.raises(ModelFormatError, match="twice"):
        CODEC.check(twice)
    _same_verdict(twice)


def _peak(fn: Callable[[], object]) -> int:
    """Peak heap growth while `fn` runs (its input already allocated)."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        with contextlib.suppress(ModelFormatError):
            fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def large_model(parts: int, fmt: str) -> Model:
    """A build of many small Parts in Folders, each Folder with a Script."""
    rnd = random.Random(13)
    folders_ = []
    for f in range(parts // 100):
        kids = [Instance("Part", f"p{f}-{i}", {
            "Name": Prop("String", b"Part%d" % i),
            "CFrame": Prop("CFrame", (rnd.random(), rnd.random(), rnd.random(),
                                      1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)),
            "Size": Prop("Vector3", (4.0, 1.0, rnd.random())),
            "Anchored": Prop("Bool", True),
            "Transparency": Prop("Float32", 0.0),
            "BrickColor": Prop("BrickColor", 194),
        }) for i in range(100)]
        kids.append(Instance("Script", f"s{f}", {"Name": Prop("String", b"Run"),
                                                  "Source": Prop("String", b"print(%d)" % f)}))
        folders_.append(Instance("Folder", f"f{f}", {"Name": Prop("String", b"F%d" % f)},
                                 kids))
    return Model(fmt, [Instance("Model", "root", {"Name": Prop("String", b"Big")}, folders_)])


@pytest.mark.parametrize("fmt", ["binary", "xml"])
def test_a_large_model_is_checked_within_a_small_multiple_of_the_file(fmt: str) -> None:
    data = CODEC.write(large_model(20_000, fmt))
    check = CODEC.check(data)
    assert check.instances == 20_401 and len(check.scripts) == 200
    # Measured: binary 4.0x (a file this regular compresses to 15 bytes an instance),
    # XML 1.3x; the full read keeps every value: 112x and 3.7x.
    assert _peak(lambda: CODEC.check(data)) < 6 * len(data)


def test_class_ids_past_31_bits_check_as_they_read() -> None:
    class_id = 2**32 - 1
    script, name, source = b"Script", b"Source", b"print(1)"
    inst = chunk_bytes(b"INST", struct.pack("<II", class_id, len(script)) + script + b"\x00"
                       + struct.pack("<I", 1) + write_refs([0]))
    prop = chunk_bytes(b"PROP", struct.pack("<II", class_id, len(name)) + name + b"\x01"
                       + struct.pack("<I", len(source)) + source)
    data = file_bytes(1, 1, [inst, prop, _roots(1)])
    assert [s.source for s in CODEC.check(data).scripts] == [source]
    _same_verdict(data)
