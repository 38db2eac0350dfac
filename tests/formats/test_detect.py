"""Format detection by content over the shared corpus and hostile prefixes."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters_formats.detect import ModelFormat, detect
from licore.builds.errors import ModelFormatError
from tests.support.shared import CORPUS

_KINDS = {".rbxm": ModelFormat.BINARY, ".rbxl": ModelFormat.BINARY,
          ".rbxmx": ModelFormat.XML, ".rbxlx": ModelFormat.XML}
FILES = sorted(p for sub in ("models", "places") for p in (CORPUS / sub).rglob("*")
               if p.suffix in _KINDS)


def test_corpus_is_present() -> None:
    assert FILES


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_file_detected_as_its_extension_says(path: Path) -> None:
    assert detect(path.read_bytes()) is _KINDS[path.suffix]


@pytest.mark.parametrize("data", [b"", b"<roblox!", b"<roblox!\x89\xff\n\n\x1a\n", b"<?xml version",
                                  b"<robloxian/>", b"PK\x03\x04"])
def test_non_models_are_refused(data: bytes) -> None:
    with pytest.raises(ModelFormatError):
        detect(data)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_arbitrary_bytes_give_a_format_or_model_format_error(data: bytes) -> None:
    try:
        assert isinstance(detect(data), ModelFormat)
    except ModelFormatError as err:
        assert err.reason
