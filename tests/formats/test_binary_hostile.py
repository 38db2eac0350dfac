"""Malformed and hostile binary files are refused with ModelFormatError, never anything else,
in bounded memory."""

from __future__ import annotations

import contextlib
import struct
import tracemalloc
from pathlib import Path

import lz4.block
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters_formats.binary_bytes import write_refs
from adapters_formats.binary_reader import MAX_DEPTH, read_binary
from adapters_formats.binary_writer import write_binary
from adapters_formats.chunks import MAX_TOTAL_DECOMPRESSED, chunk_bytes, file_bytes
from licore.builds.errors import ModelFormatError
from licore.builds.tree import Instance, Model, Prop
from tests.formats.corpus import BINARIES, DAMAGE, damaged
from tests.support.hostile_models import folders, zstd_bomb

SMALL = [p for p in BINARIES if p.stat().st_size < 20_000]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SMALL), st.integers(0, 10**6), st.integers(0, 255),
       st.sampled_from(DAMAGE))
def test_any_damage_gives_a_model_or_model_format_error(
        path: Path, where: int, byte: int, how: str) -> None:
    with contextlib.suppress(ModelFormatError):
        read_binary(damaged(path.read_bytes(), where, byte, how))


def test_bad_magic_is_refused() -> None:
    with pytest.raises(ModelFormatError, match="magic"):
        read_binary(b"<roblox?" + bytes(40))


def test_a_chunk_length_past_the_end_is_refused() -> None:
    data = bytearray(write_binary(Model("binary", [Instance("Folder", "a")])))
    struct.pack_into("<I", data, 32 + 4, 10**6)  # the first chunk's compressed length
    with pytest.raises(ModelFormatError, match="past the end"):
        read_binary(bytes(data))


def test_a_referent_cycle_is_refused() -> None:
    with pytest.raises(ModelFormatError, match="cycle"):
        read_binary(folders([(0, 1), (1, 0)], 2))


def test_a_referent_used_twice_is_refused() -> None:
    name = b"Folder"
    inst = chunk_bytes(b"INST", struct.pack("<I", 0) + struct.pack("<I", len(name)) + name
                       + b"\x00" + struct.pack("<I", 2) + write_refs([3, 3]))
    with pytest.raises(ModelFormatError, match="twice"):
        read_binary(file_bytes(1, 2, [inst]))


def test_nesting_deeper_than_the_limit_is_refused_and_the_limit_itself_is_read() -> None:
    def chain(depth: int) -> bytes:
        return folders([(0, -1)] + [(i, i - 1) for i in range(1, depth)], depth)

    model = read_binary(chain(MAX_DEPTH))
    assert sum(1 for _ in model.walk()) == MAX_DEPTH
    with pytest.raises(ModelFormatError, match="deeper"):
        read_binary(chain(MAX_DEPTH + 1))


def _peak(fn: object) -> int:
    tracemalloc.start()
    try:
        with contextlib.suppress(ModelFormatError):
            fn()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_zstandard_bomb_is_refused_in_bounded_memory() -> None:
    for claimed in (200 * 1024 * 1024, 1000):  # the truth, and a lie about the size
        data = zstd_bomb(claimed=claimed)
        assert len(data) < 100_000
        with pytest.raises(ModelFormatError):
            read_binary(data)
        assert _peak(lambda data=data: read_binary(data)) < 16 * 1024 * 1024


def test_an_lz4_bomb_past_the_total_cap_is_refused_before_it_is_inflated() -> None:
    # LZ4 cannot compress better than about 255:1, so its bombs are large files; what bounds
    # them is the total decompressed size, checked from the chunk headers first.
    bomb = lz4.block.compress(bytes(8 * 1024 * 1024), store_size=False)
    claimed = MAX_TOTAL_DECOMPRESSED + 1
    chunk = struct.pack("<4sIII", b"INST", len(bomb), claimed, 0) + bomb
    data = file_bytes(1, 1, [chunk])
    with pytest.raises(ModelFormatError, match="limit"):
        read_binary(data)
    assert _peak(lambda: read_binary(data)) < 16 * 1024 * 1024


def test_a_column_shorter_than_its_class_is_refused() -> None:
    model = Model("binary", [Instance("Part", "a", {"Anchored": Prop("Bool", True)}),
                             Instance("Part", "b", {"Anchored": Prop("Bool", False)})])
    data = write_binary(model)
    # Rebuild the file with the Bool column cut to one byte.
    name = b"Anchored"
    short = chunk_bytes(b"PROP", struct.pack("<I", 0) + struct.pack("<I", len(name)) + name
                        + b"\x02" + b"\x01")
    inst = chunk_bytes(b"INST", struct.pack("<I", 0) + struct.pack("<I", 4) + b"Part" + b"\x00"
                       + struct.pack("<I", 2) + write_refs([0, 1]))
    assert read_binary(data).roots[1].properties["Anchored"].value is False
    with pytest.raises(ModelFormatError, match="Anchored"):
        read_binary(file_bytes(1, 2, [inst, short]))
