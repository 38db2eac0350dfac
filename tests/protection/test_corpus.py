"""Every corpus program prints the same in the Luau VM before and after each preset."""

from pathlib import Path

import pytest

from adapters_protection.luau_protector import IMPLEMENTED, LuauProtector
from licore.protection import PRESETS, parse_protection_settings
from tests.protection.test_luau_protector import _run

CORPUS = sorted((Path(__file__).resolve().parent / "corpus").glob("*.luau"))


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("program", CORPUS, ids=lambda p: p.stem)
def test_preset_keeps_output(program: Path, preset: str) -> None:
    source = program.read_text()
    settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": preset}]})
    out = LuauProtector().protect("Game/" + program.stem, source, settings, b"secret")
    assert _run(out) == _run(source)
    if PRESETS[preset] & IMPLEMENTED and "--" in source:
        assert out != source
