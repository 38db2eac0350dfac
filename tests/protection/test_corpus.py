"""Every corpus program behaves the same in the Luau VM before and after each preset."""

from functools import cache
from pathlib import Path

import pytest

from adapters_protection.luau_protector import LuauProtector
from licore.protection import parse_protection_settings
from tests.protection.vm import run

CORPUS = sorted((Path(__file__).resolve().parent / "corpus").glob("*.luau"))
PRESETS = ("minify", "light", "strong")


@cache
def _original(program: Path) -> str:
    return run(program.read_text())


def test_the_corpus_is_large_and_runs() -> None:
    assert len(CORPUS) >= 60
    for program in CORPUS:
        assert not _original(program).startswith("syntax error"), program.name


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("program", CORPUS, ids=lambda p: p.stem)
def test_preset_keeps_output_and_errors(program: Path, preset: str) -> None:
    source = program.read_text()
    settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": preset}]})
    out = LuauProtector().protect("Game/" + program.stem, source, settings, b"license-secret")
    assert out != source
    assert run(out) == _original(program)
