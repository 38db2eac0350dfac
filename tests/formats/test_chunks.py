"""Binary framing over the corpus and under truncation/mutation."""

import contextlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters_formats.chunks import read_framing
from licore.builds.errors import ModelFormatError
from tests.support.shared import CORPUS

BINARIES = sorted(p for sub in ("models", "places") for p in (CORPUS / sub).rglob("*")
                  if p.suffix in (".rbxm", ".rbxl"))


@pytest.mark.parametrize("path", BINARIES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_binary_frames_into_known_chunks_ending_with_end(path: Path) -> None:
    data = path.read_bytes()
    framing = read_framing(data)
    assert framing.chunks[-1].name == b"END\x00"
    assert {c.name for c in framing.chunks} <= {b"META", b"SSTR", b"INST", b"PROP", b"PRNT",
                                                b"SIGN", b"END\x00"}
    assert b"".join(c.raw for c in framing.chunks) == data[32:32 + sum(
        len(c.raw) for c in framing.chunks)]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(BINARIES), st.integers(0, 10**6), st.integers(0, 255), st.booleans())
def test_mutated_or_truncated_binary_gives_framing_or_model_format_error(
        path: Path, where: int, byte: int, truncate: bool) -> None:
    data = bytearray(path.read_bytes())
    where %= len(data)
    if truncate:
        del data[where:]
    else:
        data[where] = byte
    with contextlib.suppress(ModelFormatError):
        read_framing(bytes(data))
